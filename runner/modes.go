package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/policy"
)

// ModePolicy is what the runner needs from a policy that also decides mode
// changes (policy.Engine implements it).
type ModePolicy interface {
	ObserveMode(session, mode string)
	// ObserveModes tells the policy the modes a session offers.
	ObserveModes(session string, modes []driver.ModeInfo)
	ExpectMode(session, mode string)
	// CheckStartMode decides whether the session may be in mode before its
	// first prompt (policy.Engine.CheckStartMode).
	CheckStartMode(ctx context.Context, session, mode string) (policy.ModeDecision, error)
	// ModeRule names the agent's self-approving and asking modes.
	ModeRule() driver.ModeRule
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

// use moves the guard to sess, which replaced the session it started
// with (an agent relaunched after a limit).
func (g *modeGuard) use(sess modeSetter) {
	g.mu.Lock()
	g.sess = sess
	g.mu.Unlock()
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
		g.pol.ObserveModes(ev.Session, ev.Started.Modes)
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

// startMode is the mode the session's first prompt runs in ("" = the one
// it is in): --mode (or the policy's default_mode), else the agent's own.
// A mode in which the agent approves its own requests is decided by the
// policy: refused, the agent's own starting mode is replaced by its asking
// mode, and a --mode naming one, or an agent with no asking mode, is a
// usage error naming the mode and the rule that allows it.
func (r *run) startMode(ctx context.Context, sess Session) (string, error) {
	want, own := r.o.Mode, false
	if want == "" {
		want, own = sess.CurrentMode(), true
	}
	if r.o.Modes == nil || want == "" {
		return r.o.Mode, nil
	}
	if !own {
		if err := checkMode(want, r.col.availableModes()); err != nil {
			return "", err
		}
		return r.o.Mode, r.allowedMode(ctx, sess, want, "--mode")
	}
	d, err := r.decideMode(ctx, sess, want)
	if err != nil || d.Verdict == driver.VerdictAllow {
		return "", err
	}
	asking, ok := policy.AskingMode(r.col.modeInfos(), r.o.Modes.ModeRule())
	if !ok {
		return "", exitcode.Usagef("%s starts in mode %s, in which it approves its own requests without asking tai; the policy refuses it (%s), and %s offers no mode in which it asks; %s",
			r.o.Agent, want, d.Reason, r.o.Agent, allowModeHint(want))
	}
	r.o.Logger.Info("moving the session out of a self-approving mode", "agent", r.o.Agent, "mode", want, "to", asking, "reason", d.Reason)
	return asking, nil
}

// allowedMode refuses a mode tai was told to set (--mode, a chat's /mode)
// in which the agent approves its own requests, unless the policy allows
// it.
func (r *run) allowedMode(ctx context.Context, sess Session, mode, what string) error {
	if r.o.Modes == nil {
		return nil
	}
	d, err := r.decideMode(ctx, sess, mode)
	if err != nil || d.Verdict == driver.VerdictAllow {
		return err
	}
	return exitcode.Usagef("%s %s: in this mode %s approves its own requests without asking tai, and the policy refuses it (%s); %s",
		what, mode, r.o.Agent, d.Reason, allowModeHint(mode))
}

// decideMode asks the policy whether the session may be in mode, and puts
// a decision taken (a self-approving mode) on the audit record. It is not
// one of the agent's requests, so it is not in the result's denials: a
// refused mode is replaced, or the run refused.
func (r *run) decideMode(ctx context.Context, sess Session, mode string) (policy.ModeDecision, error) {
	d, err := r.o.Modes.CheckStartMode(ctx, sess.ID(), mode)
	if errors.Is(err, policy.ErrPromptUnavailable) {
		return d, exitcode.With(exitcode.PermissionDenied, err)
	}
	if err != nil {
		return d, fmt.Errorf("deciding mode %s: %w", mode, err)
	}
	if !d.Explained && r.audit != nil {
		r.audit.append(audit.KindPermissionDecision, sess.ID(), decisionEntry(&d.PermissionDecision))
	}
	return d, nil
}

func allowModeHint(mode string) string {
	return fmt.Sprintf("allow it with --allow 'switch_mode:%s' or an allow rule for it in the policy file", mode)
}
