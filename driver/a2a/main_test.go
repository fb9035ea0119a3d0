package a2a

import (
	"context"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/tai-dev/tai/driver"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// sink records a session's events and lets a test wait for one.
type sink struct {
	mu     sync.Mutex
	events []driver.Event
	waits  []waiter
}

type waiter struct {
	pred func(driver.Event) bool
	ch   chan struct{}
}

func (s *sink) Emit(ev driver.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, ev)
	keep := s.waits[:0]
	for _, w := range s.waits {
		if w.pred(ev) {
			close(w.ch)
			continue
		}
		keep = append(keep, w)
	}
	s.waits = keep
}

// on returns a channel closed when an event matching pred is (or was)
// emitted.
func (s *sink) on(pred func(driver.Event) bool) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan struct{})
	for _, ev := range s.events {
		if pred(ev) {
			close(ch)
			return ch
		}
	}
	s.waits = append(s.waits, waiter{pred: pred, ch: ch})
	return ch
}

func (s *sink) all() []driver.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]driver.Event(nil), s.events...)
}

func (s *sink) ofType(t driver.EventType) []driver.Event {
	var out []driver.Event
	for _, ev := range s.all() {
		if ev.Type == t {
			out = append(out, ev)
		}
	}
	return out
}

// text reassembles the agent's messages the way a consumer of the common
// model does: chunks with one message id concatenate, a replace chunk
// starts the message over. It returns the messages in order of first
// appearance.
func (s *sink) text() []string {
	var order []string
	byID := map[string]string{}
	for _, ev := range s.ofType(driver.EventMessage) {
		m := ev.Message
		if m.Role != driver.RoleAgent || m.Text == "" && !m.Replace {
			continue
		}
		if _, ok := byID[m.MessageID]; !ok {
			order = append(order, m.MessageID)
		}
		if m.Replace {
			byID[m.MessageID] = m.Text
		} else {
			byID[m.MessageID] += m.Text
		}
	}
	out := make([]string, 0, len(order))
	for _, id := range order {
		out = append(out, byID[id])
	}
	return out
}

// decider answers permission requests with a fixed verdict and records
// them.
type decider struct {
	mu      sync.Mutex
	verdict string // allow | deny | error
	asked   []driver.PermissionRequest
}

func (d *decider) Decide(ctx context.Context, req driver.PermissionRequest) (driver.PermissionDecision, error) {
	d.mu.Lock()
	d.asked = append(d.asked, req)
	d.mu.Unlock()
	if d.verdict == "error" {
		return driver.PermissionDecision{}, context.Canceled
	}
	kind := driver.OptionAllowOnce
	if d.verdict == driver.VerdictDeny {
		kind = driver.OptionRejectOnce
	}
	for _, o := range req.Options {
		if o.Kind == kind {
			return driver.PermissionDecision{RequestID: req.ID, Outcome: driver.OutcomeSelected, OptionID: o.ID, OptionKind: o.Kind,
				Verdict: d.verdict, DecidedBy: "test"}, nil
		}
	}
	return driver.PermissionDecision{}, context.Canceled
}

// runnerSession mirrors runner.Session (which this package cannot import:
// the runner imports the drivers).
type runnerSession interface {
	driver.Session
	CurrentMode() string
	SetModel(ctx context.Context, model string) error
	Exited() <-chan struct{}
	Pid() int
}

var _ runnerSession = (*Session)(nil)
