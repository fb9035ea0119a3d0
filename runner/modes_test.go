package runner

import (
	"context"
	"sync"
	"testing"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/policy"
)

// denyModes is a ModePolicy that denies every change the agent makes on
// its own and lets through the ones tai makes; release holds the first
// decision back.
type denyModes struct {
	release chan struct{}
	mu      sync.Mutex
	ours    map[string]bool
}

func (p *denyModes) ObserveMode(string, string)             {}
func (p *denyModes) ObserveModes(string, []driver.ModeInfo) {}
func (p *denyModes) ModeRule() driver.ModeRule              { return driver.ModeRule{} }
func (p *denyModes) CheckStartMode(context.Context, string, string) (policy.ModeDecision, error) {
	return policy.ModeDecision{PermissionDecision: driver.PermissionDecision{Verdict: driver.VerdictAllow}, Explained: true}, nil
}
func (p *denyModes) ExpectMode(_, mode string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ours[mode] = true
}
func (p *denyModes) ModeAfterApproval(driver.PermissionRequest, driver.PermissionDecision) string {
	return ""
}
func (p *denyModes) CheckModeChange(_ context.Context, _, _, to string) (policy.ModeDecision, error) {
	<-p.release
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ours[to] {
		return policy.ModeDecision{PermissionDecision: driver.PermissionDecision{Verdict: driver.VerdictAllow}, Explained: true}, nil
	}
	return policy.ModeDecision{PermissionDecision: driver.PermissionDecision{Verdict: driver.VerdictDeny}}, nil
}

// modeSession records SetMode and reports it back as the agent would.
type modeSession struct {
	g   *modeGuard
	mu  sync.Mutex
	set []string
}

func (s *modeSession) SetMode(_ context.Context, mode string) error {
	s.mu.Lock()
	s.set = append(s.set, mode)
	s.mu.Unlock()
	s.g.Emit(driver.Event{Type: driver.EventModeChanged, Session: "s", Mode: &driver.Mode{ID: mode}})
	return nil
}

// A turn's end waits on idle: it is closed only once the agent's own mode
// change is decided and, denied, switched back, and the revert's own
// change is decided too; with nothing reported it is closed at once.
func TestModeGuardIdleAfterRevert(t *testing.T) {
	pol := &denyModes{release: make(chan struct{}), ours: map[string]bool{}}
	var events []driver.Event
	var mu sync.Mutex
	g := newModeGuard(pol, func(ev driver.Event) { mu.Lock(); events = append(events, ev); mu.Unlock() }, func(error) {})
	sess := &modeSession{g: g}
	g.start(context.Background(), sess)
	defer g.stop()
	<-g.idle() // nothing reported yet

	g.Emit(driver.Event{Type: driver.EventSessionStarted, Session: "s", Started: &driver.SessionStarted{CurrentMode: "default"}})
	g.Emit(driver.Event{Type: driver.EventModeChanged, Session: "s", Mode: &driver.Mode{ID: "accept-edits"}})
	idle := g.idle()
	select {
	case <-idle:
		t.Fatal("idle before the mode change was decided")
	default:
	}
	close(pol.release)
	<-idle
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if len(sess.set) != 1 || sess.set[0] != "default" {
		t.Fatalf("SetMode calls %v, want the switch back to default", sess.set)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pending != 0 || g.current["s"] != "default" {
		t.Fatalf("pending %d, mode %q after idle; want 0 and default", g.pending, g.current["s"])
	}
}
