package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/tai-dev/tai/agentspec"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/internal/agentproc"
	"github.com/tai-dev/tai/sandbox"
	"github.com/tai-dev/tai/worktree"
)

// mergedInGit finds, on resume, the tasks whose work is in the target
// although the state does not say so (a state write lost, a kill between a
// merge and its record): a commit in the target since the run's base
// carries the run and the task in its trailers (CommitMessage), or the
// task's branch has commits of its own and is in the target's history (an
// agent that committed its work itself). Git, not the state file, is the
// truth here.
func (f *fleet) mergedInGit(ctx context.Context) map[string]string {
	st := f.st.snapshot()
	target := "refs/heads/" + st.Target
	found, err := mergedTrailers(ctx, f.wt, f.o.RunID, st.Base, st.Target)
	if err != nil {
		f.log.Warn("resume: could not read the target's history", "err", err)
		found = map[string]string{}
	}
	for id, ts := range st.Tasks {
		t := f.plan.Task(id)
		if _, ok := found[id]; ok || t == nil || succeeded(ts.Status) || t.Worktree == "none" || strings.HasPrefix(t.Worktree, "shared:") {
			continue
		}
		rec, err := f.wt.Lookup(f.o.RunID, id)
		if err != nil || rec.Base == "" {
			continue
		}
		tip, err := f.wt.RevParse(ctx, "refs/heads/"+worktree.Branch(f.o.RunID, id))
		if err != nil || tip == rec.Base {
			continue // no branch, or no commit of its own yet
		}
		if f.wt.IsAncestor(ctx, tip, target) {
			found[id] = tip
		}
	}
	for id := range found {
		if ts := st.Tasks[id]; ts == nil || succeeded(ts.Status) {
			delete(found, id)
		}
	}
	return found
}

// merge integrates a finished task's branch into the target: one at a
// time, rebase in the task's worktree, check, fast-forward only.
func (f *fleet) merge(ctx context.Context, t *Task) {
	f.mergeMu.Lock()
	defer f.mergeMu.Unlock()
	if err := f.st.err(); err != nil {
		// What cannot be recorded is not merged: resume would not know.
		f.log.Error("not merging: the fleet's state cannot be saved", "task", t.ID, "err", err)
		return
	}
	ctx = context.WithoutCancel(ctx) // a merge is short and must not stop half-way
	m, _ := f.ex.(Merger)
	if m != nil {
		if merged, err := m.PrepareMerge(ctx, &TaskRun{Engine: &Engine{f}, Task: t, Prev: f.st.task(t.ID)}); err != nil || merged {
			if err != nil {
				f.mergeFailed(ctx, m, t.ID, err)
			}
			return
		}
		defer func() { m.MergeEnded(ctx, f.st.task(t.ID)) }()
		// The local executor checks owns where it commits (keep); an
		// executor's task arrives here with its change recorded.
		if ts := f.st.task(t.ID); ts.Diff != nil {
			if why := outsideOwns(t, ts.Diff, ts.Branch); why != "" {
				f.setTask(t.ID, func(x *TaskState) { x.Status, x.Reason, x.ExitCode = StatusFailed, why, int(exitcode.AgentError) })
				f.emit(EventFailed, t.ID, why, map[string]any{"exit_code": int(exitcode.AgentError)})
				return
			}
		}
	}
	ts := f.st.task(t.ID)
	if ts.Branch == "" {
		f.setTask(t.ID, func(x *TaskState) { x.Status = StatusMerged })
		return
	}
	st := f.st.snapshot()
	owner := worktree.Owner{PID: os.Getpid(), Command: f.o.Command}
	wtTask := t.ID
	if s, ok := strings.CutPrefix(t.Worktree, "shared:"); ok {
		wtTask = s
	}
	h, err := f.wt.Create(ctx, f.o.RunID, wtTask, st.Target, st.Target, owner)
	if err != nil {
		f.mergeFailed(ctx, nil, t.ID, err)
		return
	}
	defer func() { _ = h.Release(ctx) }()
	head, err := f.wt.Integrate(ctx, h.Record, st.Target, f.check(t.ID))
	var ce *worktree.ConflictError
	switch {
	case errors.As(err, &ce):
		f.setTask(t.ID, func(x *TaskState) {
			x.Status, x.ConflictFiles, x.ExitCode = StatusConflict, ce.Files, int(exitcode.MergeConflict)
			x.Reason = ce.Error()
		})
		f.emit(EventConflict, t.ID, strings.Join(ce.Files, ", "), map[string]any{"files": ce.Files, "branch": ts.Branch, "target": st.Target})
	case err != nil:
		f.mergeFailed(ctx, nil, t.ID, err)
	default:
		f.setTask(t.ID, func(x *TaskState) { x.Status, x.Head = StatusMerged, head })
		what, data := ts.Branch, map[string]any{"branch": ts.Branch}
		if m != nil {
			what, data = m.Merged(f.st.task(t.ID))
		}
		data["target"], data["head"] = st.Target, head
		f.emit(EventMerged, t.ID, fmt.Sprintf("%s -> %s at %.12s", what, st.Target, head), data)
	}
}

// mergeFailed records that task id's merge failed (m, if set, is told).
func (f *fleet) mergeFailed(ctx context.Context, m Merger, id string, err error) {
	f.setTask(id, func(x *TaskState) {
		x.Status, x.Reason, x.ExitCode = StatusFailed, err.Error(), int(exitcode.AgentError)
	})
	f.emit(EventFailed, id, "merge: "+err.Error(), nil)
	if m != nil {
		m.MergeEnded(ctx, f.st.task(id))
	}
}

// Merges says whether finished tasks are merged (merge: not false).
func (p *Plan) Merges() bool { return p.Merge == nil || *p.Merge }

// ErrCheckTimeout: the check ran past the plan's check_timeout and was
// killed.
var ErrCheckTimeout = errors.New("check timed out")

// check is the plan's check for task (nil without one), killed at the
// plan's check_timeout by the fleet's clock.
func (f *fleet) check(task string) func(ctx context.Context, dir string) error {
	run := f.plan.CheckFunc(f.o.Sandbox, f.checkStarted(task))
	limit := time.Duration(f.plan.CheckTimeout)
	if run == nil || limit <= 0 {
		return run
	}
	return func(ctx context.Context, dir string) error {
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		t := f.clock.AfterFunc(limit, func() { cancel(ErrCheckTimeout) }, "fleet", "check")
		defer t.Stop()
		err := run(ctx, dir)
		if err != nil && errors.Is(context.Cause(ctx), ErrCheckTimeout) {
			return fmt.Errorf("%s: %w: killed after %s", f.plan.Check, ErrCheckTimeout, limit)
		}
		return err
	}
}

// score runs, under merge: false, the plan's check in a finished task's
// worktree and records the result as the task's score; the task stays
// done, on its branch, for a pick.
func (f *fleet) score(ctx context.Context, t *Task) {
	ts := f.st.task(t.ID)
	if ts.Check != nil || ts.Branch == "" || f.plan.Check == "" {
		return
	}
	ctx = context.WithoutCancel(ctx) // a score half-taken is no score
	st := f.st.snapshot()
	h, err := f.wt.Create(ctx, f.o.RunID, t.ID, st.Target, st.Target, worktree.Owner{PID: os.Getpid(), Command: f.o.Command})
	if err != nil {
		f.setTask(t.ID, func(x *TaskState) { x.Check = &CheckResult{Output: "worktree: " + err.Error()} })
		return
	}
	defer func() { _ = h.Release(ctx) }()
	err = f.check(t.ID)(ctx, h.Path)
	res := &CheckResult{Passed: err == nil, TimedOut: errors.Is(err, ErrCheckTimeout)}
	if err != nil {
		res.Output = truncate(err.Error(), 2000)
	}
	f.setTask(t.ID, func(x *TaskState) { x.Check = res })
	f.emit(EventScored, t.ID, map[bool]string{true: "check passed", false: "check failed"}[res.Passed],
		map[string]any{"passed": res.Passed, "timed_out": res.TimedOut, "output": res.Output})
}

// checkStarted records in the audit log, as an event, how the plan's
// check for task is confined.
func (f *fleet) checkStarted(task string) func(dir string, st sandbox.Status) {
	return func(dir string, st sandbox.Status) {
		f.emit(EventCheck, task, CheckDetail(f.plan.Check, st), map[string]any{"check": f.plan.Check, "dir": dir, "sandbox": st})
	}
}

// CheckWarning is the warning a run of a plan whose check is not
// confined starts with ("" when it is).
func (p *Plan) CheckWarning() string {
	if p.Check == "" || p.CheckSandbox != CheckSandboxOff {
		return ""
	}
	return fmt.Sprintf("check_sandbox: off: the plan's check (%s) runs unconfined, on code the agents wrote", p.Check)
}

// CheckDetail says, for a progress line, how the check is confined.
func CheckDetail(check string, st sandbox.Status) string {
	how := "confined (Landlock ABI " + fmt.Sprint(st.ABI) + ")"
	if !st.Enabled {
		how = "NOT confined"
		if st.Reason != "" {
			how += ": " + st.Reason
		}
	}
	return check + ": " + how
}

// cleanup removes, after a successful run, the worktrees and branches of
// the merged tasks: their work is in the target, and a worktree left
// behind would carry a stale owner pid. Remove itself keeps anything that
// would be lost.
func (f *fleet) cleanup(ctx context.Context, st State) {
	for _, id := range st.Order {
		ts, t := st.Tasks[id], f.plan.Task(id)
		if ts.Status != StatusMerged || ts.Branch == "" || t == nil || strings.HasPrefix(t.Worktree, "shared:") {
			continue
		}
		rec, err := f.wt.Lookup(f.o.RunID, id)
		if err != nil {
			continue
		}
		if err := f.wt.Remove(context.WithoutCancel(ctx), rec, worktree.RemoveOptions{Targets: []string{st.Target}}); err != nil {
			f.emit(EventWarning, id, "worktree kept: "+err.Error(), nil)
			continue
		}
		f.setTask(id, func(x *TaskState) { x.Worktree = "" })
	}
}

// CheckSandboxOff is check_sandbox's one value: the plan's check runs
// unconfined.
const CheckSandboxOff = "off"

// CheckFunc is the plan's check as Integrate runs it in a rebased
// worktree (nil without one): `sh -c` through tai's launcher, so that its
// cgroup takes the whole tree, background children and all, when ctx ends
// or when tai dies, even by kill -9. The check runs what the agents wrote
// (a rewritten check.sh, an added _test.go), so it is confined as a task's
// agent is (sb, the fleet's sandbox): the worktree and the caches every
// agent's runtime writes are writable, the network is as sb says.
// check_sandbox: off, or a nil sb (tests whose binary is not tai), runs it
// unconfined. started, if set, is told how each run is confined before it
// starts, for the audit log. The error carries the end of its output.
func (p *Plan) CheckFunc(sb *agentspec.Sandbox, started func(dir string, st sandbox.Status)) func(ctx context.Context, dir string) error {
	if p.Check == "" {
		return nil
	}
	return func(ctx context.Context, dir string) error {
		cfg := &sandbox.Config{Mode: sandbox.ModeOff}
		if sb != nil && p.CheckSandbox != CheckSandboxOff {
			var err error
			if cfg, err = agentspec.CommandSandbox(*sb, dir, nil); err != nil {
				return fmt.Errorf("%s: sandbox: %w", p.Check, err)
			}
		}
		sb, err := sandbox.New(*cfg)
		if err != nil {
			return fmt.Errorf("%s: sandbox: %w", p.Check, err)
		}
		defer func() { _ = sb.Close() }()
		if started != nil {
			st := sb.Status()
			if p.CheckSandbox == CheckSandboxOff {
				st.Reason = "check_sandbox: off"
			}
			started(dir, st)
		}
		out := &agentproc.Tail{Max: 2000}
		cmd := exec.Command("sh", "-c", p.Check)
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, out, out
		cmd.SysProcAttr = agentproc.Group()
		// Output a child outside the tree still holds (none can leave
		// the cgroup) does not hold Wait for more than this.
		cmd.WaitDelay = time.Second
		launch, err := sb.Start(cmd, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", p.Check, err)
		}
		stop := context.AfterFunc(ctx, launch.Kill)
		err = cmd.Wait()
		stop()
		launch.Release()
		if err != nil {
			return fmt.Errorf("%s: %w: %s", p.Check, err, strings.ToValidUTF8(strings.TrimSpace(out.String()), ""))
		}
		return nil
	}
}
