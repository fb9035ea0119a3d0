package remote

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/fleet"
	"github.com/tai-dev/tai/policy"
)

// quietEngine is the part of fleet's engine askPermission uses: events.
type quietEngine struct{ engine }

func (quietEngine) Emit(fleet.EventKind, string, string, map[string]any) {}

// gatePrompter holds every ask until the test opens the gate, and
// counts how many are held at once.
type gatePrompter struct {
	mu      sync.Mutex
	held    int
	arrived chan string
	gate    chan struct{}
	answer  policy.Answer
}

func (p *gatePrompter) Ask(ctx context.Context, req driver.PermissionRequest) (policy.Answer, error) {
	p.mu.Lock()
	p.held++
	p.mu.Unlock()
	p.arrived <- req.ToolCall.Title
	select {
	case <-p.gate:
		return p.answer, nil
	case <-ctx.Done():
		return policy.DenyOnce, ctx.Err()
	}
}

// TestHubAsksReachTheHumanAtOnce: a hub run's workers' asks for different
// things reach the coordinator's human together (one used to wait behind
// the other, as a local fleet's did), and asks for the same thing wait
// for each other, so that one "always" answers both.
func TestHubAsksReachTheHumanAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a guard against a hang only
	defer cancel()
	p := &gatePrompter{arrived: make(chan string, 4), gate: make(chan struct{}), answer: policy.AllowAlways}
	c := &coordinator{o: CoordinatorOptions{RunID: "r", Prompter: p}, e: quietEngine{}, mem: policy.NewMemory(policy.ScopeRun), clock: quartz.NewMock(t)}
	perm := func(title string) *driver.PermissionRequest {
		return &driver.PermissionRequest{ToolCall: driver.ToolCall{Title: title}}
	}
	asks := []Ask{
		{Kind: AskPermission, Task: "a", Key: "edit:a.txt", Permission: perm("write a.txt")},
		{Kind: AskPermission, Task: "b", Key: "edit:b.txt", Permission: perm("write b.txt")},
		{Kind: AskPermission, Task: "c", Key: "edit:a.txt", Permission: perm("write a.txt again")},
	}
	out := make([]Ask, len(asks))
	var wg sync.WaitGroup
	for i, a := range asks[:2] {
		wg.Go(func() { out[i] = c.askPermission(ctx, a) })
	}
	// Both different asks reach the human before either is answered.
	got := map[string]bool{}
	for range 2 {
		select {
		case title := <-p.arrived:
			got[title] = true
		case <-ctx.Done():
			t.Fatalf("only %v reached the human while both waited", got)
		}
	}
	// The same thing as a's waits for a's answer, which answers it.
	wg.Go(func() { out[2] = c.askPermission(ctx, asks[2]) })
	close(p.gate)
	wg.Wait()
	for i, a := range out {
		if a.Error != "" || a.Verdict != policy.AllowAlways {
			t.Errorf("ask %d: verdict %v, error %q", i, a.Verdict, a.Error)
		}
	}
	if out[2].DecidedBy != "remembered" || p.held != 2 {
		t.Errorf("the same thing's ask was decided by %q, and the human was asked %d times (want remembered, 2)", out[2].DecidedBy, p.held)
	}
}
