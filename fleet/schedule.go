package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/policy"
)

func (f *fleet) run(ctx context.Context) (*State, error) {
	st := f.st.snapshot()
	f.meter = NewMeter(f.plan.Budget, f.plan.Concurrency, st.Usage, func(dim string, used, limit float64) {
		f.emit(EventBudget, "", fmt.Sprintf("soft limit: the fleet has used %.4g of %.4g %s", used, limit, dim),
			map[string]any{"level": "soft", "dimension": dim, "used": used, "limit": limit})
	})
	detail, data := fmt.Sprintf("%d task(s), concurrency %d, target %s", len(st.Tasks), f.plan.Concurrency, st.Target),
		map[string]any{"run": st.Run, "resume": f.o.Resume, "plan": st.PlanFrom, "base": st.Base, "target": st.Target}
	if d, ok := f.ex.(Describer); ok {
		detail, data = d.Describe(st)
	}
	f.emit(EventRunStart, "", detail, data)
	if w := f.plan.CheckWarning(); w != "" {
		f.emit(EventWarning, "", w, map[string]any{"check": f.plan.Check, "check_sandbox": f.plan.CheckSandbox})
	}
	if !f.wt.MergeTreeSupported(ctx) {
		f.emit(EventWarning, "", "this git has no merge-tree --write-tree (git 2.38+): conflicts are found by the rebase in the task's worktree instead", nil)
	}

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	f.stop = cancel
	if err := f.st.err(); err != nil {
		cancel(err)
	}
	// The fleet's wall time does not run while an account is parked
	// (arm holds it, release lets go): the quota: budget bounds the wait.
	wall := f.meter.WallTime()
	f.wall = newWallBudget(f.clock, wall, func() {
		f.emit(EventBudget, "", "fleet wall time "+wall.String()+" used up", map[string]any{"level": "hard", "dimension": "wall_time"})
		cancel(exitcode.With(exitcode.BudgetExceeded, fmt.Errorf("%w: the fleet's wall time of %s is used up", ErrBudget, wall)))
	}, "fleet", "wall")
	defer f.wall.stop()
	for _, id := range st.Order {
		f.done[id] = make(chan struct{})
	}
	bgCtx, stopBg := context.WithCancel(runCtx)
	var bg sync.WaitGroup
	if sv, ok := f.ex.(Server); ok {
		bg.Go(func() { sv.Serve(bgCtx) })
	}
	f.initParks()
	f.slots = semaphore.NewWeighted(int64(f.plan.Concurrency))
	if f.o.Hands != nil {
		handsDone := make(chan struct{})
		defer close(handsDone)
		go f.watchHands(handsDone)
	}
	var g errgroup.Group
	for _, id := range st.Order {
		g.Go(func() error {
			defer close(f.done[id])
			f.schedule(runCtx, cancel, id)
			return nil
		})
	}
	_ = g.Wait()
	stopBg()
	bg.Wait()
	return f.finish(ctx, runCtx), nil
}

// schedule waits for a task's dependencies, then runs and merges it.
func (f *fleet) schedule(ctx context.Context, cancel context.CancelCauseFunc, id string) {
	t := f.plan.Task(id)
	prev := f.st.task(id)
	if succeeded(prev.Status) {
		// Finished before an interruption: only a pending merge is left.
		if prev.Status == StatusDone {
			f.finishTask(ctx, t)
		}
		return
	}
	if ended(prev.Status) {
		return // an Opener's task that ended before its run was resumed
	}
	for _, d := range t.DependsOn {
		select {
		case <-f.done[d]:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			f.setTask(id, func(ts *TaskState) { ts.Status, ts.Reason = StatusCanceled, causeText(ctx) })
			return
		}
		if ds := f.st.task(d); !succeeded(ds.Status) {
			f.setTask(id, func(ts *TaskState) {
				ts.Status, ts.Reason = StatusSkipped, fmt.Sprintf("dependency %s %s", d, ds.Status)
			})
			f.emit(EventSkipped, id, "dependency "+d+" "+string(ds.Status), nil)
			return
		}
	}
	f.setTask(id, func(ts *TaskState) { ts.Status = StatusWaiting })
	res, err := f.meter.Reserve(ctx, id, t.Budget)
	if err != nil {
		if errors.Is(err, ErrBudget) {
			f.setTask(id, func(ts *TaskState) {
				ts.Status, ts.Reason, ts.ExitCode = StatusRefused, err.Error(), int(exitcode.BudgetExceeded)
			})
			f.emit(EventBudget, id, "refused: "+err.Error(), map[string]any{"level": "refused", "reason": err.Error()})
			f.emit(EventRefused, id, err.Error(), nil)
		} else {
			f.setTask(id, func(ts *TaskState) { ts.Status, ts.Reason = StatusCanceled, err.Error() })
		}
		f.failFast(cancel, id)
		return
	}
	if err := f.acquire(ctx, id); err != nil {
		res.Release(Usage{})
		var pe *parkEnded
		if errors.As(err, &pe) {
			f.setTask(id, func(ts *TaskState) {
				ts.Status, ts.Reason, ts.ExitCode = StatusParked, "not launched: "+pe.Error(), int(exitcode.Parked)
			})
			return
		}
		f.setTask(id, func(ts *TaskState) { ts.Status, ts.Reason = StatusCanceled, causeText(ctx) })
		return
	}
	spent := f.ex.Run(ctx, &TaskRun{Engine: &Engine{f}, Task: t, Res: res, Prev: prev})
	f.slots.Release(1)
	res.Release(spent)
	_ = f.st.update(func(st *State) { st.Usage = f.meter.Used() })
	if f.st.task(id).Status == StatusDone {
		f.finishTask(ctx, t)
	}
	if s := f.st.task(id).Status; !succeeded(s) && s != StatusParked {
		f.failFast(cancel, id)
	}
}

// finishTask merges a done task, or, under merge: false, scores it.
func (f *fleet) finishTask(ctx context.Context, t *Task) {
	if t.Merges(f.plan) {
		f.merge(ctx, t)
		return
	}
	f.score(ctx, t)
}

// ended: the task ended without success, for good.
func ended(s TaskStatus) bool {
	switch s {
	case StatusFailed, StatusBlocked, StatusBudget, StatusConflict, StatusRefused, StatusSkipped:
		return true
	}
	return false
}

func (f *fleet) failFast(cancel context.CancelCauseFunc, id string) {
	if f.plan.FailFast {
		cancel(fmt.Errorf("fail-fast: task %s did not succeed", id))
	}
}

func causeText(ctx context.Context) string {
	if c := context.Cause(ctx); c != nil {
		return c.Error()
	}
	return "cancelled"
}

// ownsOverlap: two owns: lists may name a common file. Without a file
// list to test, a glob of one list matching a pattern of the other (as a
// path) is taken as an overlap: "src/**" and "src/a.go", "a.go" and "a.go".
func ownsOverlap(a, b []string) bool {
	if len(a) == 0 || len(b) == 0 {
		return false // no owns: nothing promised, nothing to warn about
	}
	sa, errA := policy.CompilePathSet(a)
	sb, errB := policy.CompilePathSet(b)
	if errA != nil || errB != nil {
		return false
	}
	for _, p := range b {
		if sa.Match(strings.TrimSuffix(p, "/")) {
			return true
		}
	}
	for _, p := range a {
		if sb.Match(strings.TrimSuffix(p, "/")) {
			return true
		}
	}
	return false
}
