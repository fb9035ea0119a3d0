package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/coder/quartz"
	"golang.org/x/sync/semaphore"

	"github.com/tai-dev/tai/quota"
	"github.com/tai-dev/tai/runner"
)

// A wall budget runs only while nothing holds it: it fires once its time
// is used up, counting the stretches between holds, never twice, and not
// after stop.
func TestWallBudget(t *testing.T) {
	type step struct {
		op string // run D (advance the clock), hold, release, stop
		d  time.Duration
	}
	for _, tc := range []struct {
		name  string
		steps []step
		fired time.Duration // when it fired (on the clock), 0: never
	}{
		{"unheld", []step{{"run", time.Minute}}, time.Minute},
		{"held in the middle", []step{{"run", 20 * time.Second}, {"hold", 0}, {"run", time.Hour}, {"release", 0}, {"run", 40 * time.Second}},
			time.Hour + time.Minute},
		{"nested holds", []step{{"run", 10 * time.Second}, {"hold", 0}, {"hold", 0}, {"run", time.Hour}, {"release", 0}, {"run", time.Hour},
			{"release", 0}, {"run", 50 * time.Second}}, 2*time.Hour + time.Minute},
		{"held after it fired", []step{{"run", time.Minute}, {"hold", 0}, {"release", 0}, {"run", time.Hour}}, time.Minute},
		{"a release without a hold", []step{{"release", 0}, {"run", time.Minute}}, time.Minute},
		{"stopped", []step{{"run", 30 * time.Second}, {"stop", 0}, {"release", 0}, {"run", time.Hour}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			clk := quartz.NewMock(t)
			start := clk.Now()
			var fired []time.Duration
			w := newWallBudget(clk, time.Minute, func() { fired = append(fired, clk.Now().Sub(start)) }, "test")
			for _, s := range tc.steps {
				switch s.op {
				case "run":
					// Step to each timer in the way, then to the end.
					for end := clk.Now().Add(s.d); clk.Now().Before(end); {
						d, ok := clk.Peek()
						if !ok || clk.Now().Add(d).After(end) {
							d = end.Sub(clk.Now())
						}
						clk.Advance(d).MustWait(ctx)
					}
				case "hold":
					w.hold()
				case "release":
					w.release()
				case "stop":
					w.stop()
				}
			}
			want := []time.Duration{tc.fired}
			if tc.fired == 0 {
				want = nil
			}
			if len(fired) != len(want) || (len(want) == 1 && fired[0] != want[0]) {
				t.Fatalf("fired at %v, want %v", fired, want)
			}
		})
	}
}

// The fleet's wall time does not run while an account is parked: a
// fleet of 1m that ran 30s, parked for an hour, has its 30s left after
// the reset.
func TestFleetWallTimeExcludesParks(t *testing.T) {
	ctx := context.Background()
	clk := quartz.NewMock(t)
	f := parkFleet(t, clk, Quota{}, "a")
	start := clk.Now()
	var fired []time.Duration
	f.wall = newWallBudget(clk, time.Minute, func() { fired = append(fired, clk.Now().Sub(start)) }, "fleet", "wall")
	clk.Advance(30 * time.Second).MustWait(ctx)
	f.parkAt("a", "acct", quota.Limit{Kind: quota.KindUsage, ResetsAt: clk.Now().Add(time.Hour)})
	for range 3 {
		if len(fired) > 0 {
			break
		}
		d, w := clk.AdvanceNext()
		w.MustWait(ctx)
		t.Logf("advanced %s", d)
	}
	if want := time.Hour + time.Minute; len(fired) != 1 || fired[0] != want {
		t.Fatalf("the fleet's wall time ran out at %v, want %v (its hour parked not counted)", fired, want)
	}
}

// A task's wall time does not run while it is parked: a task of 1m that
// ran 30s, parked for an hour, has its 30s left once it resumes.
func TestTaskWallTimeExcludesItsPark(t *testing.T) {
	// The deadline only bounds a failure: the clock is the mock's.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clk := quartz.NewMock(t)
	held := clk.Trap().TimerStop("fleet", "task-wall")
	defer held.Close()
	f := parkFleet(t, clk, Quota{}, "a")
	f.slots = semaphore.NewWeighted(1)
	if err := f.slots.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	start := clk.Now()
	fired := make(chan time.Duration, 1)
	r := &taskRun{f: f, t: &Task{ID: "a"}, acct: "acct"}
	r.wall = newWallBudget(clk, time.Minute, func() { fired <- clk.Now().Sub(start) }, "fleet", "task-wall")
	runs := clk.Trap().AfterFunc("fleet", "task-wall")
	defer runs.Close()
	clk.Advance(30 * time.Second).MustWait(ctx)
	resumed := make(chan *taskEnd, 1)
	go func() {
		_, e := r.park(ctx, runner.Result{}, &quota.Limit{Kind: quota.KindUsage, ResetsAt: clk.Now().Add(time.Hour)}, next{prompt: "go"}, false)
		resumed <- e
	}()
	held.MustWait(ctx).MustRelease(ctx)  // parked: its wall time held
	clk.Advance(time.Hour).MustWait(ctx) // the reset
	runs.MustWait(ctx).MustRelease(ctx)  // resumed: its wall time runs again
	if e := <-resumed; e != nil {
		t.Fatalf("the park ended the task: %+v", e)
	}
	clk.Advance(29 * time.Second).MustWait(ctx)
	select {
	case d := <-fired:
		t.Fatalf("its wall time ran out at %s, its hour parked counted", d)
	default:
	}
	clk.Advance(time.Second).MustWait(ctx)
	if d := <-fired; d != time.Hour+time.Minute {
		t.Fatalf("its wall time ran out at %s, want 1h1m0s", d)
	}
}
