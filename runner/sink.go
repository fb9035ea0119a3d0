package runner

import (
	"fmt"
	"sync"
	"time"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/driver"
)

// stamper numbers events and fans them out, in one order, to every sink.
type stamper struct {
	mu      sync.Mutex
	clock   quartz.Clock
	seq     uint64
	session string
	sinks   []driver.Sink
	last    time.Time // time of the last event, for the late-update window

	// maxMessage bounds one message's text (0: no bound); sizes counts
	// this turn's messages by role and id.
	maxMessage int64
	sizes      map[messageKey]int64
}

type messageKey struct {
	role driver.Role
	id   string
}

// newTurn starts counting the messages of a new turn.
func (s *stamper) newTurn() {
	s.mu.Lock()
	s.sizes = nil
	s.mu.Unlock()
}

// capMessage passes a chunk that keeps its message within maxMessage; the
// first one past it becomes an error event, like an oversize line, and the
// rest of that message is skipped.
func (s *stamper) capMessage(ev driver.Event) (driver.Event, bool) {
	if s.maxMessage <= 0 || ev.Type != driver.EventMessage || ev.Message == nil {
		return ev, true
	}
	m := ev.Message
	k := messageKey{m.Role, m.MessageID}
	if s.sizes == nil {
		s.sizes = map[messageKey]int64{}
	}
	had := s.sizes[k]
	if had < 0 {
		return ev, false // already over
	}
	n := had + int64(len(m.Text)+len(m.Content))
	if m.Replace {
		n = int64(len(m.Text) + len(m.Content))
	}
	if n <= s.maxMessage {
		s.sizes[k] = n
		return ev, true
	}
	s.sizes[k] = -1
	return driver.Event{Type: driver.EventError, Session: ev.Session, Error: &driver.ErrorInfo{Code: "oversize_message",
		Message: fmt.Sprintf("skipped the rest of a %s message over the %d-byte limit (--max-message-bytes)", m.Role, s.maxMessage)}}, true
}

func (s *stamper) Emit(ev driver.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev, ok := s.capMessage(ev)
	if !ok {
		return
	}
	s.seq++
	ev.Seq = s.seq
	ev.Time = s.clock.Now().UTC()
	s.last = ev.Time
	if ev.Session == "" {
		ev.Session = s.session
	} else if s.session == "" {
		s.session = ev.Session
	}
	for _, k := range s.sinks {
		k.Emit(ev)
	}
}

func (s *stamper) nextSeq() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return s.seq
}

func (s *stamper) lastEvent() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// add appends a sink.
func (s *stamper) add(k driver.Sink) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sinks = append(s.sinks, k)
}
