package fleet

import (
	"context"
	"errors"
	"time"

	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/quota"
	"github.com/tai-dev/tai/worktree"
)

// Executor runs a fleet's tasks. The fleet keeps everything else: it
// schedules the DAG, reserves each task's budget before handing the task
// over, records the run's state and events, and merges (or scores) what
// ends done. The local executor (the default) runs each task's agent here,
// in a worktree; remote's runs it on a worker over NATS.
type Executor interface {
	// Run runs task r.Task to its end within r.Res, recording its
	// progress and end through r (StatusDone: its work is on its branch,
	// for the merge queue), and returns what the task spent. A Run that
	// returns with the task still out there (ctx ended) leaves its status
	// as it was: the run ends interrupted, and a resume finds it.
	Run(ctx context.Context, r *TaskRun) Usage
}

// The hooks an Executor may add. Each is where an executor that keeps its
// tasks elsewhere (remote's: the leases and the events stream of a
// JetStream server) differs from the local one; the rest of the engine is
// the same for both.
type (
	// Opener opens the run instead of the fleet's files: a new run's
	// plan, repository and first state, or a resumed one's, as the
	// executor's record has them. The local resume rules (what was in
	// flight starts over, the target's history says what is merged) are
	// the local executor's: an Opener's state is taken as it is, and a
	// task it says ended (failed, blocked, ...) is not run again.
	Opener interface {
		Open(ctx context.Context, e *Engine) (Opened, error)
	}
	// Server does the executor's background work for the run's life: it
	// starts when the tasks do and must return once ctx ends, which is
	// when the last task has ended, before the run's end is recorded.
	Server interface {
		Serve(ctx context.Context)
	}
	// Recorder sees every save of the run's state and every event, after
	// the fleet recorded them (remote: its state bucket, its events stream).
	Recorder interface {
		Saved(st State)
		Emitted(ev Event)
	}
	// Merger takes part in the merge of its tasks, in the merge queue.
	Merger interface {
		// PrepareMerge readies a done task's branch for the merge (the
		// accepted attempt's commit on it). merged: there is nothing to
		// integrate, and the executor recorded the task merged.
		PrepareMerge(ctx context.Context, r *TaskRun) (merged bool, err error)
		// Merged names what was merged, for the merged event, and its
		// data (local: the task's branch).
		Merged(ts TaskState) (string, map[string]any)
		// MergeEnded records how the task's merge ended (ts: its state
		// after it: merged, conflict or failed).
		MergeEnded(ctx context.Context, ts TaskState)
	}
	// Finisher records the run's end where the executor keeps its runs.
	Finisher interface {
		Finished(ctx context.Context, st State)
	}
	// Describer gives the run.start event's detail and data.
	Describer interface {
		Describe(st State) (string, map[string]any)
	}
)

// Opened is a run as an Opener found or made it.
type Opened struct {
	Plan  *Plan
	Repo  *worktree.Manager // where the merge queue works
	State *State            // Status running, PID this process's
}

// local is the default executor: each task's agent runs here, in its
// worktree (runTask).
type local struct{ f *fleet }

func (l local) Run(ctx context.Context, r *TaskRun) Usage { return l.f.runTask(ctx, r.Task, r.Res) }

// Engine is a fleet run as its executor sees it: its plan, repository,
// state and events.
type Engine struct{ f *fleet }

// TaskRun is one task handed to an Executor.
type TaskRun struct {
	*Engine
	Task *Task
	Res  *Reservation // its budget, reserved (Res.Limits are its hard limits)
	Prev TaskState    // the task as the run found it (a resumed run's)
}

// RunID is the run's id.
func (e *Engine) RunID() string { return e.f.o.RunID }

// Plan is the run's plan.
func (e *Engine) Plan() *Plan { return e.f.plan }

// Repo is the repository the merge queue works in (nil before Open).
func (e *Engine) Repo() *worktree.Manager { return e.f.wt }

// Task is a copy of task id's state.
func (e *Engine) Task(id string) TaskState { return e.f.st.task(id) }

// SetTask changes task id's state and saves it.
func (e *Engine) SetTask(id string, fn func(*TaskState)) { e.f.setTask(id, fn) }

// Snapshot is a copy of the run's state.
func (e *Engine) Snapshot() State { return e.f.st.snapshot() }

// Used is what the run has spent so far, as its meter counts it.
func (e *Engine) Used() Usage { return e.f.meter.Used() }

// Emit records an event of the run (task "" for the run's own).
func (e *Engine) Emit(kind EventKind, task, detail string, data map[string]any) {
	e.f.emitAt(e.f.clock.Now(), kind, task, detail, data)
}

// EmitAt records an event that happened at t (a worker's, forwarded).
func (e *Engine) EmitAt(t time.Time, kind EventKind, task, detail string, data map[string]any) {
	e.f.emitAt(t, kind, task, detail, data)
}

// Prompt is task t's prompt, with its dependencies' results.
func (e *Engine) Prompt(ctx context.Context, t *Task) (string, error) { return e.f.prompt(ctx, t) }

// ParkEnd is how a parked task ends without resuming: parked past the
// plan's quota: budget, or interrupted.
type ParkEnd struct {
	Status TaskStatus
	Code   exitcode.Code
	Reason string
}

func (e *ParkEnd) Error() string { return e.Reason }

// Park parks task id as a local task at a usage limit is parked: on its
// own limit l (nil: it stopped because its account parked), its account
// parks (every running turn of it cancelled, none of its tasks launched
// until the reset); tp is the session it resumes. The task's slot goes
// to other accounts' tasks while it waits. It returns nil when the task
// resumes (its account released, its stagger slot come), else *ParkEnd.
func (e *Engine) Park(ctx context.Context, id string, l *quota.Limit, tp *TaskPark) error {
	if te := e.f.parkTask(ctx, id, e.f.st.task(id).Account, l, tp, tp != nil); te != nil {
		return &ParkEnd{Status: te.status, Code: te.code, Reason: te.reason}
	}
	return nil
}

// EnterTurn registers an attempt of task id with its account, so that a
// park of the account calls cancel (an executor's: tell the worker to
// stop at a turn boundary and hand back parked), and calls start (the
// offer) unless the account is parked: then start is not called, and
// cancel is. start runs under the parks' lock, so that its events come
// before the park's, or not at all. The returned func unregisters it.
func (e *Engine) EnterTurn(id string, cancel context.CancelCauseFunc, start func()) func() {
	return e.f.enterTurn(e.f.st.task(id).Account, id, cancel, start)
}

// ParkedCause says whether err is the cause EnterTurn's cancel got: the
// task's account parked.
func ParkedCause(err error) bool {
	var pc *parkCause
	return errors.As(err, &pc)
}
