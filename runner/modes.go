package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/policy"
)

// ModePolicy is what the runner needs from a policy that also decides mode
// changes (policy.Engine implements it).
type ModePolicy interface {
	ObserveMode(session, mode string)
	ExpectMode(session, mode string)
	CheckModeChange(ctx context.Context, session, from, to string) (policy.ModeDecision, error)
	ModeAfterApproval(req driver.PermissionRequest, d driver.PermissionDecision) string
}

// modeSetter is the part of a session the guard moves between modes.
type modeSetter interface {
	SetMode(ctx context.Context, modeID string) error
}

// modeGuard puts every mode change through policy: changes the agent makes
// on its own are decided (and reverted when denied), and an approved exit
// from plan mode moves the session on to the configured mode. Decisions can
// prompt, so they run on the guard's own goroutine, never in the event
// path.
type modeGuard struct {
	pol    ModePolicy
	emit   func(driver.Event)
	onFail func(error)

	mu      sync.Mutex
	sess    modeSetter
	current map[string]string // session → mode
	next    map[string]string // session → mode to move to after an approved exit from plan mode
	ours    map[string]string // session → mode tai itself is moving it to
	closed  bool
	queue   chan modeChange
	done    chan struct{}
	// pending counts the queued changes not yet decided (a revert's own
	// change included); settled is closed when it drops to zero.
	pending int
	settled chan struct{}
}

type modeChange struct{ session, from, to string }

func newModeGuard(pol ModePolicy, emit func(driver.Event), onFail func(error)) *modeGuard {
	g := &modeGuard{pol: pol, emit: emit, onFail: onFail, current: map[string]string{}, next: map[string]string{}, ours: map[string]string{},
		queue: make(chan modeChange, 64), done: make(chan struct{})}
	return g
}

// start begins deciding changes for sess.
func (g *modeGuard) start(ctx context.Context, sess modeSetter) {
	g.mu.Lock()
	g.sess = sess
	g.mu.Unlock()
	go g.loop(ctx)
}

// stop ends the guard once queued changes are decided.
func (g *modeGuard) stop() {
	g.mu.Lock()
	started := g.sess != nil
	g.closed = true
	close(g.queue)
	g.mu.Unlock()
	if started {
		<-g.done
	}
}

// expect tells the policy tai itself is moving the session to mode.
func (g *modeGuard) expect(session, mode string) {
	g.mu.Lock()
	g.ours[session] = mode
	g.mu.Unlock()
	g.pol.ExpectMode(session, mode)
}

// approved is called with every permission decision: an approved exit from
// plan mode may name where the session goes next.
func (g *modeGuard) approved(req driver.PermissionRequest, d driver.PermissionDecision) {
	if next := g.pol.ModeAfterApproval(req, d); next != "" {
		g.mu.Lock()
		g.next[req.Session] = next
		g.mu.Unlock()
	}
}

// Emit watches the event stream (it is a Sink).
func (g *modeGuard) Emit(ev driver.Event) {
	switch ev.Type {
	case driver.EventSessionStarted:
		g.mu.Lock()
		g.current[ev.Session] = ev.Started.CurrentMode
		g.mu.Unlock()
		g.pol.ObserveMode(ev.Session, ev.Started.CurrentMode)
	case driver.EventModeChanged:
		g.mu.Lock()
		defer g.mu.Unlock()
		from := g.current[ev.Session]
		g.current[ev.Session] = ev.Mode.ID
		if from == ev.Mode.ID || g.closed {
			return
		}
		select {
		case g.queue <- modeChange{ev.Session, from, ev.Mode.ID}:
			g.pending++
		default:
			// A flood of mode changes: the policy still sees the mode.
			g.pol.ObserveMode(ev.Session, ev.Mode.ID)
		}
	}
}

func (g *modeGuard) loop(ctx context.Context) {
	defer close(g.done)
	for c := range g.queue {
		g.decide(ctx, c)
		g.mu.Lock()
		g.pending--
		if g.pending == 0 && g.settled != nil {
			close(g.settled)
			g.settled = nil
		}
		g.mu.Unlock()
	}
}

// idle is closed once every mode change reported so far is decided, and a
// denied one switched back: a turn's end waits for it, so that the revert
// is part of the turn (and not cut off by the session's close or the end
// of the agent's input).
func (g *modeGuard) idle() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pending == 0 || g.sess == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	if g.settled == nil {
		g.settled = make(chan struct{})
	}
	return g.settled
}

func (g *modeGuard) decide(ctx context.Context, c modeChange) {
	g.mu.Lock()
	next := g.next[c.session]
	delete(g.next, c.session)
	ours := g.ours[c.session] == c.to
	if ours {
		delete(g.ours, c.session)
	}
	sess := g.sess
	g.mu.Unlock()
	d, err := g.pol.CheckModeChange(ctx, c.session, c.from, c.to)
	if errors.Is(err, policy.ErrPromptUnavailable) {
		g.onFail(err)
		return
	}
	if err != nil || ctx.Err() != nil {
		return
	}
	// A change nothing explains (tai did not make it, no approved
	// switch_mode request asked for it) was decided just now: on the record
	// with the other decisions.
	if !ours && !d.Explained {
		g.emit(driver.Event{Type: driver.EventPermissionDecided, Session: c.session, Decision: &d.PermissionDecision})
	}
	if d.Verdict == driver.VerdictDeny {
		if c.from != "" && sess != nil {
			g.pol.ExpectMode(c.session, c.from)
			_ = sess.SetMode(ctx, c.from)
		}
		return
	}
	if next != "" && next != c.to && sess != nil {
		g.pol.ExpectMode(c.session, next)
		_ = sess.SetMode(ctx, next)
	}
}

// UnknownModeError is --mode naming a mode the agent does not offer. It is a
// usage error (exit 2), and it lists the modes there are.
type UnknownModeError struct {
	Mode      string
	Available []string
}

func (e *UnknownModeError) Error() string {
	return fmt.Sprintf("--mode %q: the agent has no such mode (modes: %s)", e.Mode, strings.Join(e.Available, ", "))
}

// checkMode refuses a mode the session did not offer; with no list (an
// agent that keeps modes as a config option, or says nothing) the agent
// decides.
func checkMode(mode string, available []string) error {
	if len(available) == 0 || slices.Contains(available, mode) {
		return nil
	}
	return exitcode.With(exitcode.Usage, &UnknownModeError{Mode: mode, Available: available})
}
