package policy

import (
	"context"
	"testing"
	"time"

	"github.com/tai-dev/tai/driver"
)

type askerSeen struct{ who []string }

func (a *askerSeen) Ask(ctx context.Context, _ driver.PermissionRequest) (Answer, error) {
	a.who = append(a.who, AskerOf(ctx))
	return AllowOnce, nil
}

// An engine that shares its prompter (a fleet's tasks) names whose
// question it is.
func TestEngineNamesTheAsker(t *testing.T) {
	ws, home := testWS(t)
	p := &askerSeen{}
	e := engine(t, Config{}, Flags{Approve: "ask"}, Options{Workspace: ws, Home: home, Prompter: p, Asker: "task lint"})
	if d, err := e.Decide(context.Background(), execReq("make")); err != nil || d.DecidedBy != driver.ByHuman {
		t.Fatalf("%+v %v", d, err)
	}
	if len(p.who) != 1 || p.who[0] != "task lint" {
		t.Fatalf("asker %q", p.who)
	}
}

// gate is a human who answers each request only when told, reporting
// every request that reaches it.
type gate struct {
	asked  chan string // the request's title
	answer chan Answer
}

func (g gate) Ask(ctx context.Context, req driver.PermissionRequest) (Answer, error) {
	g.asked <- req.ToolCall.Title
	select {
	case a := <-g.answer:
		return a, nil
	case <-ctx.Done():
		return DenyOnce, ctx.Err()
	}
}

// A fleet's tasks (engines sharing one memory and one human) ask at once
// when they ask for different things: every request is before the human
// together (tai top lists them all) and each is answered on its own.
// Requests for the same thing wait for each other, so that one "always"
// answers them all.
func TestSharedMemoryAsksAtOnce(t *testing.T) {
	// The deadline only guards a hang: one ask waiting behind another.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mem := NewMemory(ScopeRun)
	g := gate{asked: make(chan string, 4), answer: make(chan Answer)}
	decide := func(task, cmd string) <-chan driver.PermissionDecision {
		ws, home := testWS(t)
		e := engine(t, Config{}, Flags{Approve: "ask"}, Options{Workspace: ws, Home: home, Prompter: g, Asker: "task " + task, Memory: mem})
		done := make(chan driver.PermissionDecision, 1)
		go func() {
			req := execReq(cmd)
			req.ToolCall.Title = cmd
			d, err := e.Decide(ctx, req)
			if err != nil {
				t.Error(err)
			}
			done <- d
		}()
		return done
	}
	a, b := decide("a", "make a"), decide("b", "make b")
	seen := map[string]bool{}
	for range 2 {
		select {
		case title := <-g.asked:
			seen[title] = true
		case <-ctx.Done():
			t.Fatalf("only %v reached the human: the other waits behind it", seen)
		}
	}
	// Answered in any order, each on its own.
	g.answer <- AllowOnce
	g.answer <- DenyOnce
	da, db := <-a, <-b
	if da.DecidedBy != driver.ByHuman || db.DecidedBy != driver.ByHuman || da.Verdict == db.Verdict {
		t.Fatalf("decisions %+v, %+v", da, db)
	}

	// The same thing twice: one question, its "always" answers both.
	c1, c2 := decide("c", "make c"), decide("d", "make c")
	<-g.asked
	g.answer <- AllowAlways
	d1, d2 := <-c1, <-c2
	if d1.Verdict != driver.VerdictAllow || d2.Verdict != driver.VerdictAllow || (d1.DecidedBy == driver.ByRemembered) == (d2.DecidedBy == driver.ByRemembered) {
		t.Fatalf("decisions %+v, %+v: want one human's, one remembered", d1, d2)
	}
	if len(g.asked) != 0 {
		t.Fatalf("asked again: %q", <-g.asked)
	}
	if n := len(mem.turns); n != 0 {
		t.Fatalf("%d turns left in the memory", n)
	}
}
