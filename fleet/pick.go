package fleet

import (
	"context"
	"fmt"
	"sort"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/worktree"
)

// Pick merges one finished task of a run whose plan does not merge (tai
// compare) into the run's target, through the merge queue: rebase, check,
// fast-forward. It works from the saved state, so a run killed even by
// SIGKILL can still be picked from. The other tasks' worktrees and
// branches stay until tai worktree gc. o needs RunID and Audit (the run's
// log, continued).
func Pick(ctx context.Context, o Options, task string) (*State, error) {
	o.Resume = true
	f, unlock, err := openRun(&o, false, func(run string) error { return exitcode.Usagef("run %s is still running: pick once it ends", run) })
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := f.load(); err != nil {
		return nil, err
	}
	st := f.st.snapshot()
	ts, t := st.Tasks[task], f.plan.Task(task)
	if ts == nil || t == nil {
		ids := append([]string(nil), st.Order...)
		sort.Strings(ids)
		return nil, exitcode.Usagef("run %s has no candidate %q (it has: %v)", o.RunID, task, ids)
	}
	if t.Merges(f.plan) {
		return nil, exitcode.Usagef("task %s of run %s is not a compare's candidate: the fleet merges it itself (tai fleet resume %s)", task, o.RunID, o.RunID)
	}
	for _, id := range st.Order {
		other := f.plan.Task(id)
		if other != nil && other.CompareOf == t.CompareOf && !other.Merges(f.plan) && st.Tasks[id].Status == StatusMerged && st.Tasks[id].Branch != "" {
			return nil, exitcode.Usagef("run %s has a pick already: %s is merged into %s", o.RunID, id, st.Target)
		}
	}
	if ts.Status != StatusDone || ts.Branch == "" {
		return nil, exitcode.Usagef("candidate %s is %s, not done: only a finished candidate's work can be picked", task, ts.Status)
	}
	wt, err := worktree.Open(ctx, st.Repo)
	if err != nil {
		return nil, exitcode.With(exitcode.Usage, err)
	}
	f.wt, wt.Log = wt, f.log
	f.merge(ctx, t)
	// The log of a pick ends as a run's does, so audit verify sees it
	// complete.
	defer func() {
		if err := f.o.Audit.Append(audit.KindRunEnd, "", map[string]any{"fleet": o.RunID, "status": "picked", "task": task}); err != nil {
			f.log.Error("audit", "err", err)
		}
	}()
	after := f.st.task(task)
	data := map[string]any{"agent": after.Agent, "status": string(after.Status), "usage": after.Usage, "repo": st.Repo, "target": st.Target}
	if after.Check != nil {
		data["check_passed"] = after.Check.Passed
	}
	if after.Diff != nil {
		data["insertions"], data["deletions"], data["files"] = after.Diff.Insertions, after.Diff.Deletions, len(after.Diff.Files)
	}
	if after.Status != StatusMerged {
		f.emit(EventPicked, task, "not merged: "+after.Reason, data)
		final := f.st.snapshot()
		code := exitcode.AgentError
		if after.Status == StatusConflict {
			code = exitcode.MergeConflict
		}
		return &final, exitcode.With(code, fmt.Errorf("pick %s: %s: %s", task, after.Status, after.Reason))
	}
	f.emit(EventPicked, task, fmt.Sprintf("%s merged into %s at %.12s", task, st.Target, after.Head), data)
	final := f.st.snapshot()
	return &final, nil
}
