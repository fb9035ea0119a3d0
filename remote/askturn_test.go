package remote

import (
	"context"
	"errors"
	"log/slog"
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

// causePrompter holds each ask until its context ends, and says why it
// ended.
type causePrompter struct {
	arrived chan struct{}
	ended   chan error
}

func (p *causePrompter) Ask(ctx context.Context, _ driver.PermissionRequest) (policy.Answer, error) {
	p.arrived <- struct{}{}
	<-ctx.Done()
	p.ended <- context.Cause(ctx)
	return policy.DenyOnce, ctx.Err()
}

// TestHubAskWithdrawnSaysWhy: a worker's ask that its turn gives up (the
// task's account parked, paused by hand) is withdrawn from the
// coordinator's human too, saying why (the feed's ask.closed reason, the
// submitter's note): the worker's cause, not "context canceled".
func TestHubAskWithdrawnSaysWhy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a guard against a hang only
	defer cancel()
	h := startHub(t)
	const run, task, worker = "withdrawn", "t", "w0"
	cbus, wbus := openBus(t, h.url, "coordinator"), openBus(t, h.url, worker)
	// The attempt holds the task's lease: the coordinator answers only its asks.
	if _, err := cbus.PutLease(ctx, run, task, Lease{State: LeaseClaimed, Worker: worker, Attempt: 1}, 0); err != nil {
		t.Fatal(err)
	}
	p := &causePrompter{arrived: make(chan struct{}, 1), ended: make(chan error, 1)}
	c := &coordinator{o: CoordinatorOptions{RunID: run, Prompter: p}, bus: cbus, e: quietEngine{}, mem: policy.NewMemory(policy.ScopeRun),
		clock: quartz.NewReal(), log: slog.New(slog.DiscardHandler), results: map[string]chan Lease{task: nil}}
	sctx, stopServe := context.WithCancel(ctx)
	served := make(chan struct{})
	go func() { defer close(served); c.serveAsks(sctx) }()
	defer func() { stopServe(); <-served }()

	k := prompter{k: &asker{bus: wbus, tm: TaskMsg{Run: run, Task: task}, attempt: 1, worker: worker}}
	turn, endTurn := context.WithCancelCause(ctx)
	asked := make(chan error, 1)
	go func() {
		_, err := k.Ask(turn, driver.PermissionRequest{ToolCall: driver.ToolCall{Title: "write a.txt"}})
		asked <- err
	}()
	select {
	case <-p.arrived:
	case <-ctx.Done():
		t.Fatal("the ask never reached the coordinator's human")
	}
	why := errors.New("paused by hand (tai fleet pause)")
	endTurn(why)
	if err := <-asked; err == nil {
		t.Fatal("the worker's ask was answered after its turn ended")
	}
	select {
	case got := <-p.ended:
		if got == nil || got.Error() != why.Error() {
			t.Fatalf("the human's ask was withdrawn saying %v, want %q", got, why)
		}
	case <-ctx.Done():
		t.Fatal("the coordinator's human still has the ask its worker gave up")
	}
}
