package fleet

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/quota"
)

// parkFleet is a fleet with only what parking needs: a state, a plan's
// quota budget, an audit log and the clock.
func parkFleet(t *testing.T, clk quartz.Clock, q Quota, tasks ...string) *fleet {
	t.Helper()
	dir := t.TempDir()
	log, err := audit.Open(filepath.Join(dir, "audit.jsonl"), audit.Options{Run: "r"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	st := &State{Tasks: map[string]*TaskState{}}
	for _, id := range tasks {
		st.Tasks[id] = &TaskState{ID: id, Account: "acct"}
	}
	f := &fleet{o: Options{Audit: log}, plan: &Plan{Quota: q}, clock: clk, log: slog.New(slog.DiscardHandler)}
	f.st = &store{path: filepath.Join(dir, "state.json"), now: func() time.Time { return clk.Now() }, st: st}
	f.initParks()
	return f
}

// A limit parks its account: the account's running turns are cancelled
// at once; at the reset (the clock's, not a wall clock's) the waiting
// tasks go one per stagger; the resume counts against the budget, and a
// park past max_resumes ends the tasks parked instead of waiting.
func TestParkCancelsTurnsAndStaggersResumes(t *testing.T) {
	// The deadline only bounds a failure: the clock is the mock's.
	ctx, cancelAll := context.WithTimeout(context.Background(), time.Minute)
	defer cancelAll()
	clk := quartz.NewMock(t)
	trap := clk.Trap().NewTimer("fleet", "quota-stagger")
	defer trap.Close()
	f := parkFleet(t, clk, Quota{MaxResumes: 1, Stagger: Duration(10 * time.Second)}, "a", "b", "c")

	var cancelled []string
	turnCtx := map[string]context.Context{}
	for _, id := range []string{"a", "b"} {
		c, cancel := context.WithCancelCause(ctx)
		turnCtx[id] = c
		defer f.enterTurn("acct", id, cancel, func() {})()
	}
	reset := clk.Now().Add(time.Hour)
	f.parkAt("a", "acct", quota.Limit{Kind: quota.KindUsage, ResetsAt: reset, Message: "You've hit your limit"})
	// Its cause says why, as the asks it withdraws say it.
	why := "the account acct parked at its usage limit (resets " + reset.UTC().Format(time.RFC3339) + ")"
	for id, c := range turnCtx {
		var pc *parkCause
		if errors.As(context.Cause(c), &pc) {
			cancelled = append(cancelled, id)
			if pc.Error() != why {
				t.Errorf("%s's turn cancelled saying %q, want %q", id, pc.Error(), why)
			}
		}
	}
	if len(cancelled) != 2 {
		t.Fatalf("turns cancelled: %v, want a and b", cancelled)
	}
	if p := f.st.snapshot().Parks["acct"]; p == nil || !p.ResetsAt.Equal(reset.UTC()) {
		t.Fatalf("the park is not in the state: %+v", p)
	}
	// A turn that would start while the account is parked does not.
	started := false
	c, cancel := context.WithCancelCause(ctx)
	f.enterTurn("acct", "c", cancel, func() { started = true })()
	if _, ok := context.Cause(c).(*parkCause); !ok || started {
		t.Fatalf("a turn started while parked (started %v, cause %v)", started, context.Cause(c))
	}

	woke := make(chan string, 3)
	for _, id := range []string{"a", "b", "c"} {
		go func() {
			if err := f.awaitAccount(ctx, "acct"); err != nil {
				woke <- id + ": " + err.Error()
				return
			}
			woke <- id
		}()
	}
	// Nothing goes before the reset.
	clk.Advance(time.Hour - time.Second).MustWait(ctx)
	select {
	case w := <-woke:
		t.Fatalf("%s went before the reset", w)
	default:
	}
	clk.Advance(time.Second).MustWait(ctx)
	<-woke // the first slot: at the reset
	// The two others wait their slots: 10s and 20s after it.
	trap.MustWait(ctx).MustRelease(ctx)
	trap.MustWait(ctx).MustRelease(ctx)
	select {
	case w := <-woke:
		t.Fatalf("%s went before its stagger slot", w)
	default:
	}
	clk.Advance(10 * time.Second).MustWait(ctx)
	<-woke
	select {
	case w := <-woke:
		t.Fatalf("%s went in the same slot", w)
	default:
	}
	clk.Advance(10 * time.Second).MustWait(ctx)
	<-woke
	if st := f.st.snapshot(); st.QuotaResumes != 1 || st.QuotaWaitedMS != time.Hour.Milliseconds() || len(st.Parks) != 0 {
		t.Fatalf("budget spent: %d resume(s), %dms; parks %v", st.QuotaResumes, st.QuotaWaitedMS, st.Parks)
	}

	// max_resumes 1 is spent: the next limit ends the tasks parked.
	f.parkAt("b", "acct", quota.Limit{Kind: quota.KindUsage, ResetsAt: clk.Now().Add(time.Minute)})
	err := f.awaitAccount(ctx, "acct")
	var pe *parkEnded
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "already resumed 1 time(s)") {
		t.Fatalf("after the budget: %v", err)
	}
}

// A park's reset time is kept in the state: a new coordinator (a resumed
// run) waits for the same reset; a park by hand is released by the
// resume, unless the run keeps its pauses (a hub's coordinator adopting
// it again): then only a release by hand ends it, whatever the clock.
func TestParksOutliveTheCoordinator(t *testing.T) {
	ctx := context.Background()
	clk := quartz.NewMock(t)
	f := parkFleet(t, clk, Quota{}, "a")
	reset := clk.Now().Add(2 * time.Hour)
	f.parkAt("a", "acct", quota.Limit{Kind: quota.KindRate, ResetsAt: reset})
	saved := f.st.snapshot()

	for _, tt := range []struct {
		name   string
		byHand bool
		keep   bool          // Options.KeepPauses
		wait   time.Duration // until the account is free
	}{
		{name: "at a limit: the same timer", wait: 2 * time.Hour},
		{name: "by hand: released", byHand: true},
		{name: "by hand, kept: until the hand", byHand: true, keep: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := parkFleet(t, clk, Quota{}, "a")
			g.o.KeepPauses = tt.keep
			st := saved
			p := *saved.Parks["acct"]
			if tt.byHand {
				p = AccountPark{Account: "acct", Since: clk.Now(), ByHand: true}
			}
			st.Parks = map[string]*AccountPark{"acct": &p}
			g.st.st = &st
			g.initParks()
			if got := g.parked("acct"); got != (tt.wait > 0 || tt.keep) {
				t.Fatalf("parked after the restart: %v", got)
			}
			if tt.keep {
				clk.Advance(48 * time.Hour).MustWait(ctx)
				if !g.parked("acct") {
					t.Fatal("a pause by hand kept ended with the clock")
				}
				if c := g.st.snapshot().Parks["acct"]; c == nil || !c.ByHand {
					t.Fatalf("the kept pause is not in the state as by hand: %+v", c)
				}
				g.hand(HandResume)
			}
			if tt.wait > 0 {
				clk.Advance(tt.wait).MustWait(ctx)
			}
			if err := g.awaitAccount(ctx, "acct"); err != nil || g.parked("acct") {
				t.Fatalf("not released: %v", err)
			}
		})
	}
}
