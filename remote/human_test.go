package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/fleet"
	"github.com/tai-dev/tai/policy"
)

// stubFollower is the human at a following terminal: it answers each ask
// once release is closed (nil: at once), or never (block), reporting each
// ask on asked and, for a withdrawn one, its ctx's cause on withdrawn.
type stubFollower struct {
	verdict   policy.Answer
	answer    string
	release   chan struct{}
	block     bool
	asked     chan HumanAsk
	withdrawn chan error
}

func newStubFollower(verdict policy.Answer, answer string) *stubFollower {
	return &stubFollower{verdict: verdict, answer: answer, asked: make(chan HumanAsk, 16), withdrawn: make(chan error, 16)}
}

func (f *stubFollower) wait(ctx context.Context, a HumanAsk) error {
	f.asked <- a
	if f.block {
		<-ctx.Done()
		f.withdrawn <- context.Cause(ctx)
		return ctx.Err()
	}
	if f.release != nil {
		select {
		case <-f.release:
		case <-ctx.Done():
			f.withdrawn <- context.Cause(ctx)
			return ctx.Err()
		}
	}
	return nil
}

func (f *stubFollower) Permission(ctx context.Context, a HumanAsk) (policy.Answer, error) {
	if err := f.wait(ctx, a); err != nil {
		return policy.DenyOnce, err
	}
	return f.verdict, nil
}

func (f *stubFollower) Question(ctx context.Context, a HumanAsk) (string, error) {
	if err := f.wait(ctx, a); err != nil {
		return "", err
	}
	return f.answer, nil
}

// follow runs FollowAsks for run with h until the test ends.
func follow(t *testing.T, b *Bus, run string, h HumanAnswerer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- FollowAsks(ctx, b, run, h) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("FollowAsks: %v", err)
		}
	})
}

// waitWatchers waits until n followers watch the human asks' bucket (its
// stream has their consumers): an ask opened while a follower's watch is
// being made may reach it without its later close.
func waitWatchers(t *testing.T, b *Bus, n int) {
	t.Helper()
	ctx := context.Background()
	for {
		st, err := b.JS.Stream(ctx, "KV_"+BucketHuman)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Consumers >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A hub-coordinated run's permission asks and unanswerable questions
// reach the human following it: the follower's answers decide.
func TestSubmitterAnswersTheRunsAsks(t *testing.T) {
	h := startHub(t)
	stop := startWorkersFor(t, h.url, 1, 5*time.Second, []string{"builtin", "custom"})
	defer stop()
	repo, plan := planRepo(t, map[string]string{
		"w.yaml":    "steps:\n  - write: {path: w.txt, content: \"w\\n\"}\n  - text: wrote w.txt\n",
		"ask.yaml":  "steps:\n  - write: {path: asked, content: \"1\\n\", ask: false}\n  - text: \"Which colour should I use?\"\n",
		"done.yaml": "steps:\n  - write: {path: colour.txt, content: \"blue\\n\", ask: false}\n  - text: \"Painted it blue.\"\n",
		"plan.yaml": "policy: {approve: reads}\ntasks:\n  - {id: w, script: w.yaml, prompt: write}\n" +
			"  - {id: paint, agent_cmd: " + fmt.Sprintf("%q", askAgent) + ", prompt: paint it, policy: {approve: all}}\n",
	})
	b := openBus(t, h.url, "follower")
	human := newStubFollower(policy.AllowOnce, "Use blue.")
	follow(t, b, "sub", human)
	st, _ := coordinate(t, h.url, plan, "sub", func(o *CoordinatorOptions) {
		sub := Submitter{Bus: o.Bus, Run: "sub"}
		o.Prompter, o.AskHuman = sub, sub.AskQuestion
	})
	for _, id := range []string{"w", "paint"} {
		if got := st.Tasks[id].Status; got != fleet.StatusMerged {
			t.Fatalf("%s is %s (%s)", id, got, st.Tasks[id].Reason)
		}
	}
	if got := sh(t, repo, "git", "show", "tai-fleet/sub:w.txt"); got != "w" {
		t.Errorf("w.txt on the target: %q", got)
	}
	if q := st.Tasks["paint"].Questions; len(q) != 1 || q[0].Answer != "Use blue." || q[0].DecidedBy != "human" {
		t.Errorf("paint's questions %+v", q)
	}
	close(human.asked)
	kinds := map[AskKind]HumanAsk{}
	for a := range human.asked {
		kinds[a.Kind] = a
	}
	if p := kinds[AskPermission]; p.Task != "w" || p.Run != "sub" || p.Permission == nil || !strings.Contains(p.Permission.ToolCall.Title, "w.txt") {
		t.Errorf("the follower's permission ask: %+v", p)
	}
	if q := kinds[AskQuestion]; q.Task != "paint" || !strings.Contains(q.Question, "Which colour should I use?") {
		t.Errorf("the follower's question: %+v", q)
	}
	// The run over, its asks are gone: a follower that comes later is not
	// asked them again.
	if keys, err := b.Human.ListKeys(context.Background()); err == nil {
		for k := range keys.Keys() {
			t.Errorf("ask %s is still in the bucket", k)
		}
	}
}

// One "always" answers the same request of every task of the run, as in a
// local fleet: the human is asked once.
func TestRemoteAlwaysIsRememberedForTheRun(t *testing.T) {
	h := startHub(t)
	stop := startWorkers(t, h.url, 2, 5*time.Second)
	defer stop()
	perm := "steps:\n  - permission: {title: deploy, kind: execute, command: \"make deploy\"}\n  - text: deployed\n"
	_, plan := planRepo(t, map[string]string{
		"a.yaml":    perm,
		"b.yaml":    perm,
		"plan.yaml": "policy: {approve: reads}\nconcurrency: 2\ntasks:\n  - {id: a, script: a.yaml, prompt: a}\n  - {id: b, script: b.yaml, prompt: b}\n",
	})
	human := &stubHuman{answer: policy.AllowAlways}
	st, _ := coordinate(t, h.url, plan, "always", func(o *CoordinatorOptions) { o.Prompter = human })
	for _, id := range []string{"a", "b"} {
		if got := st.Tasks[id].Status; got != fleet.StatusDone && got != fleet.StatusMerged {
			t.Errorf("%s is %s (%s)", id, got, st.Tasks[id].Reason)
		}
	}
	if len(human.asked) != 1 {
		t.Errorf("the human was asked %d times: %q", len(human.asked), human.asked)
	}
}

// askKeyCtx is a context of an ask under key, as the coordinator answers
// one, and its cancel.
func askKeyCtx(key string) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(context.Background())
	return policy.WithAsker(withHumanKey(ctx, key), "task w"), cancel
}

var deploy = driver.PermissionRequest{ToolCall: driver.ToolCall{Title: "deploy", Kind: "execute"}}

// Another channel (the hub's feed) answering first withdraws the
// follower's prompt, which hears who answered.
func TestSubmitterWithdrawsWhenAnotherChannelAnswers(t *testing.T) {
	h := startHub(t)
	b := openBus(t, h.url, "both")
	human := newStubFollower(policy.AllowOnce, "")
	human.block = true
	follow(t, b, "wd", human)
	waitWatchers(t, b, 1)
	sub := Submitter{Bus: b, Run: "wd"}
	ctx, cancel := askKeyCtx(askKey("wd", "w", 1, 1))
	got := make(chan error, 1)
	go func() {
		_, _, err := sub.AskVia(ctx, deploy)
		got <- err
	}()
	if a := <-human.asked; a.Task != "w" || a.Permission == nil || a.Permission.ToolCall.Title != "deploy" {
		t.Fatalf("asked %+v", a)
	}
	cancel(&ask.AnsweredElsewhere{Via: ask.ViaDashboard, Word: policy.AllowAlways.Word(), Answer: policy.AllowAlways})
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Errorf("AskVia: %v", err)
	}
	var elsewhere *ask.AnsweredElsewhere
	if cause := <-human.withdrawn; !errors.As(cause, &elsewhere) || elsewhere.Via != ask.ViaDashboard || elsewhere.Answer != policy.AllowAlways {
		t.Errorf("the follower's prompt was withdrawn with %v", cause)
	}
}

// Two terminals follow the run: the first answer wins, and the other
// terminal's prompt is withdrawn.
func TestFirstFollowerAnswerWins(t *testing.T) {
	h := startHub(t)
	b := openBus(t, h.url, "both")
	fast := newStubFollower(policy.DenyAlways, "")
	fast.release = make(chan struct{})
	slow := newStubFollower(policy.AllowOnce, "")
	slow.block = true
	follow(t, b, "two", fast)
	follow(t, b, "two", slow)
	waitWatchers(t, b, 2)
	sub := Submitter{Bus: b, Run: "two"}
	ctx, cancel := askKeyCtx(askKey("two", "w", 1, 1))
	defer cancel(nil)
	type res struct {
		a   policy.Answer
		via ask.Via
		err error
	}
	got := make(chan res, 1)
	go func() {
		a, via, err := sub.AskVia(ctx, deploy)
		got <- res{a, via, err}
	}()
	<-fast.asked
	<-slow.asked // both terminals show it before the first answers
	close(fast.release)
	if r := <-got; r.err != nil || r.a != policy.DenyAlways || r.via != ask.ViaSubmitter {
		t.Fatalf("AskVia: %v via %q, %v", r.a, r.via, r.err)
	}
	if cause := <-slow.withdrawn; cause == nil {
		t.Error("the other terminal's prompt was not withdrawn")
	}
}

// An ask the follower answered while no coordinator was there (it was
// killed with the ask open, and restarted) is taken as answered by the
// next coordinator, which asks nobody again.
func TestSubmitterKeepsAnAnswerGivenMeanwhile(t *testing.T) {
	h := startHub(t)
	b := openBus(t, h.url, "both")
	key := askKey("re", "w", 1, 1)
	data, err := json.Marshal(HumanAsk{State: HumanAnswered, Kind: AskPermission, Run: "re", Task: "w", Permission: &deploy, Verdict: policy.AllowAlways})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Human.Create(context.Background(), key, data); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := askKeyCtx(key)
	defer cancel(nil)
	a, via, err := Submitter{Bus: b, Run: "re"}.AskVia(ctx, deploy)
	if err != nil || a != policy.AllowAlways || via != ask.ViaSubmitter {
		t.Fatalf("AskVia: %v via %q, %v", a, via, err)
	}
}
