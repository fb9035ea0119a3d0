package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/agentspec"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/quota"
	"github.com/tai-dev/tai/runner"
	"github.com/tai-dev/tai/worktree"
)

// runTask runs a task's turns in its worktree: the prompt, then the
// answers to its questions, with retries; then it keeps the work on the
// task's branch. It returns what it spent.
func (f *fleet) runTask(ctx context.Context, t *Task, res *Reservation) Usage {
	r := &taskRun{f: f, t: t, res: res, prev: f.st.task(t.ID), start: f.clock.Now()}
	r.acct = r.prev.Account
	f.setTask(t.ID, func(ts *TaskState) {
		ts.Status, ts.Started, ts.Finished, ts.Questions, ts.Reason = StatusRunning, r.start.UTC(), time.Time{}, nil, ""
	})
	cwd, h, err := f.workspace(ctx, t)
	if err != nil {
		return r.end(taskEnd{StatusFailed, exitcode.AgentError, err.Error()})
	}
	r.cwd, r.h = cwd, h
	if h != nil {
		defer func() { _ = h.Release(context.WithoutCancel(ctx)) }()
		f.setTask(t.ID, func(ts *TaskState) { ts.Branch, ts.Worktree, ts.Base = h.Branch, h.Path, h.Base })
	}
	if r.prompt, err = f.prompt(ctx, t); err != nil {
		return r.end(taskEnd{StatusFailed, exitcode.Usage, err.Error()})
	}
	defer f.track(t)()

	taskCtx, cancelTask := context.WithCancelCause(ctx)
	defer cancelTask(nil)
	r.wall = taskWall(f.clock, time.Duration(t.Budget.WallTime), t.ID, cancelTask)
	defer r.wall.stop()
	if e := r.turns(ctx, taskCtx, cancelTask); e != nil {
		return r.end(*e)
	}
	if e := r.keep(ctx); e != nil {
		return r.end(*e)
	}
	return r.done()
}

// taskRun is one run of a task: its worktree, its turns so far and what
// they spent.
type taskRun struct {
	f      *fleet
	t      *Task
	res    *Reservation
	prev   TaskState // the task as it was before this run (a resume's)
	start  time.Time
	cwd    string
	h      *worktree.Handle // nil: no worktree of its own
	prompt string
	spent  Usage
	last   runner.Result // the last turn's
	acct   string        // whose usage limit it spends
	parks  int           // turns that ended parked (not failed attempts)
	wall   *wallBudget   // its wall time, held while it is parked
	// announced: the started event is out.
	announced bool
}

// taskEnd is how a task ends when it does not finish.
type taskEnd struct {
	status TaskStatus
	code   exitcode.Code
	reason string
}

// next is what the next turn sends: a prompt, in a session it resumes
// (if any), and the answer with the whole task, for a fresh session.
type next struct {
	prompt, resume, full string
}

// turns runs turns until the agent is done: each failed turn is retried
// (a lost session continued in a new one), each question answered and the
// answer sent on, within the task's budget and questions.
func (r *taskRun) turns(ctx, taskCtx context.Context, cancelTask context.CancelCauseFunc) *taskEnd {
	f, t := r.f, r.t
	n := next{prompt: r.prompt}
	if tp := r.prev.Park; tp != nil {
		// Parked when the run stopped: it resumes where it was.
		n = r.resumeNext(ctx, tp, n)
		f.emit(EventResumed, t.ID, "resumed after the run's restart", map[string]any{"account": r.acct, "session": tp.Session, "resumable": tp.Resumable})
	}
	for attempt := 1; ; attempt++ {
		if err := r.res.CanTurn(r.spent); err != nil {
			return &taskEnd{StatusBudget, exitcode.BudgetExceeded, err.Error()}
		}
		// Each turn can be cancelled on its own when its account parks;
		// one that would start while it is parked does not start.
		turnCtx, cancelTurn := context.WithCancelCause(taskCtx)
		leave := f.enterTurn(r.acct, t.ID, cancelTurn, r.started)
		var res runner.Result
		var err error
		_, parkedNow := context.Cause(turnCtx).(*parkCause)
		if !parkedNow {
			f.setTask(t.ID, func(ts *TaskState) { ts.Attempts++; ts.Status = StatusRunning })
			var turnSpent Usage
			res, turnSpent, err = f.turn(turnCtx, cancelTask, t, r.res, r.spent, r.cwd, n.prompt, n.resume, attempt)
			r.spent, r.last = r.spent.add(turnSpent), res
			f.setTask(t.ID, func(ts *TaskState) {
				ts.Usage, ts.SessionID, ts.Message, ts.ExitCode = r.prev.Usage.add(r.spent), res.SessionID, res.Message, res.ExitCode
			})
		}
		leave()
		l, parked := parkedBy(turnCtx, res, err, f.clock.Now())
		cancelTurn(nil)
		var e *taskEnd
		if parked && taskCtx.Err() == nil {
			r.parks++
			n, e = r.park(ctx, res, l, n, !parkedNow)
		} else if err != nil || res.ExitCode != 0 {
			n, e = r.failed(ctx, taskCtx, res, err, n, attempt-r.parks)
		} else if q := strings.TrimSpace(res.Message); strings.HasSuffix(q, "?") {
			n, e = r.asked(taskCtx, res, q, n)
		} else {
			return nil
		}
		if e != nil {
			return e
		}
	}
}

// started says the task's agent starts, once: as its first turn enters,
// never while its account is parked.
func (r *taskRun) started() {
	if r.announced {
		return
	}
	r.announced = true
	r.f.emit(EventStarted, r.t.ID, fmt.Sprintf("agent %s in %s", r.f.agentLabel(r.t.AgentSpec), r.cwd), map[string]any{"worktree": r.cwd, "attempt": r.prev.Attempts + 1})
}

// failed decides what follows a failed turn: the task's end, or the
// next try.
func (r *taskRun) failed(ctx, taskCtx context.Context, res runner.Result, err error, n next, attempt int) (next, *taskEnd) {
	code := exitcode.Code(res.ExitCode)
	if code == 0 {
		code = exitcode.Of(err)
	}
	reason := res.Error
	if reason == "" && err != nil {
		reason = err.Error()
	}
	// The runner's hint names tai run's flag; a fleet's fix is its policy:
	// allowing what the task needs (allow_denials would only call the
	// task done with the work denied).
	reason = strings.ReplaceAll(reason, "pass --allow-denials to accept",
		"nobody could answer them: allow what the task needs in the plan's or the task's policy: (approve: all, or allow: rules), or run it at a terminal")
	if e := interrupted(ctx, taskCtx); e != nil {
		return n, e
	}
	switch {
	case n.resume != "" && code == exitcode.NoSession:
		// The agent lost the session: the answer goes into a fresh one
		// with the whole task again.
		r.f.emit(EventRetry, r.t.ID, fmt.Sprintf("session %s could not be resumed; continuing in a new one", n.resume), nil)
		if n.prompt == runner.ContinuePrompt {
			// A park's resume: the new session is told what the lost one
			// did (the worktree's diff), not only the task.
			return r.resumeNext(ctx, &TaskPark{}, n), nil
		}
		return next{prompt: n.full, full: n.full}, nil
	case attempt <= r.t.Retries:
		r.f.emit(EventRetry, r.t.ID, fmt.Sprintf("attempt %d failed (%s); retrying", attempt, reason), nil)
		return next{prompt: r.prompt, full: n.full}, nil
	}
	return n, &taskEnd{StatusFailed, code, reason}
}

// asked routes the agent's question to the answerer, then a human, and
// makes the answer the next turn.
func (r *taskRun) asked(taskCtx context.Context, res runner.Result, q string, n next) (next, *taskEnd) {
	f, id := r.f, r.t.ID
	if maxQ := maxQuestions(f.plan); len(f.st.task(id).Questions) >= maxQ {
		return n, &taskEnd{StatusBlocked, exitcode.AgentError, fmt.Sprintf("still asking after %d answered question(s): %s", maxQ, lastLine(q))}
	}
	f.setTask(id, func(ts *TaskState) { ts.Status = StatusAsking })
	f.emit(EventAsked, id, lastLine(q), map[string]any{"question": q})
	ans, by, aspent, err := f.answer(taskCtx, r.t, r.cwd, r.h, q)
	r.spent = r.spent.add(aspent)
	if err != nil {
		return n, &taskEnd{StatusBlocked, exitcode.AgentError, fmt.Sprintf("the agent asked %q and %v", lastLine(q), err)}
	}
	f.setTask(id, func(ts *TaskState) { ts.Questions = append(ts.Questions, QA{Question: q, Answer: ans, DecidedBy: by}) })
	f.emit(EventAnswered, id, by+": "+lastLine(ans), map[string]any{"question": q, "answer": ans, "decided_by": by})
	return answerNext(r.prompt, q, by, ans, res), nil
}

// answerNext is the turn that sends an answer on: only the answer when the
// agent's session goes on, else the whole task with it in a fresh one.
func answerNext(prompt, q, by, ans string, res runner.Result) next {
	full := fmt.Sprintf("%s\n\n---\nYou asked:\n%s\n\nAnswer (from the %s):\n%s\n\nContinue the task with this answer.", prompt, q, by, ans)
	if res.Resumable && res.SessionID != "" {
		// The same session goes on: the agent has the task and its
		// question in context, and needs only the answer.
		return next{prompt: fmt.Sprintf("Answer (from the %s):\n%s\n\nContinue the task with this answer.", by, ans), resume: res.SessionID, full: full}
	}
	return next{prompt: full, full: full}
}

// maxQuestions is how many questions a task may have answered (default 3).
func maxQuestions(p *Plan) int {
	if p.MaxQuestions == 0 {
		return 3
	}
	return p.MaxQuestions
}

// interrupted is the task's end when a turn failed because the task was
// stopped: over its budget (wall time, tokens), or the run cancelled.
func interrupted(ctx, taskCtx context.Context) *taskEnd {
	switch cause := context.Cause(taskCtx); {
	case cause != nil && errors.Is(cause, ErrBudget):
		return &taskEnd{StatusBudget, exitcode.BudgetExceeded, cause.Error()}
	case ctx.Err() != nil:
		return &taskEnd{StatusCanceled, exitcode.Interrupted, causeText(ctx)}
	}
	return nil
}

// taskWall cancels the task when it has run for its wall time, its time
// parked not counted (none if wall is 0).
func taskWall(clock quartz.Clock, wall time.Duration, id string, cancelTask context.CancelCauseFunc) *wallBudget {
	return newWallBudget(clock, wall, func() {
		cancelTask(exitcode.With(exitcode.BudgetExceeded, fmt.Errorf("%w: task %s ran for its wall time of %s", ErrBudget, id, wall)))
	}, "fleet", "task-wall")
}

// keep commits the work on the task's branch. A task that changed files
// it does not own is not merged: its work stays on its branch, and the
// overlap is named.
func (r *taskRun) keep(ctx context.Context) *taskEnd {
	f, t, id := r.f, r.t, r.t.ID
	if r.h == nil && !strings.HasPrefix(t.Worktree, "shared:") {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	// The work is kept on the task's branch (a shared task holds the other
	// task's worktree, and its branch), wherever the agent left HEAD.
	if r.h != nil {
		if was, err := f.wt.Reattach(ctx, r.cwd, r.h.Branch); err != nil {
			return &taskEnd{StatusFailed, exitcode.AgentError, err.Error()}
		} else if was != "" {
			f.emit(EventWarning, id, fmt.Sprintf("the agent left its worktree on %s; its commits are on %s now", was, r.h.Branch), map[string]any{"was": was, "branch": r.h.Branch})
		}
	}
	head, _, err := f.wt.Commit(ctx, r.cwd, CommitMessage(f.o.RunID, id, r.prompt, r.last.Message))
	if err != nil {
		return &taskEnd{StatusFailed, exitcode.AgentError, err.Error()}
	}
	d, err := f.wt.Diff(ctx, r.cwd, f.st.task(id).Base)
	if err != nil {
		return &taskEnd{StatusFailed, exitcode.AgentError, err.Error()}
	}
	f.setTask(id, func(ts *TaskState) { ts.Head, ts.Diff = head, &d })
	if why := outsideOwns(t, &d, f.st.task(id).Branch); why != "" {
		return &taskEnd{StatusFailed, exitcode.AgentError, why}
	}
	return nil
}

// outsideOwns says why a task whose change is d may not be merged: it
// changed files outside its owns ("" when it did not, or has no owns).
func outsideOwns(t *Task, d *worktree.DiffStat, branch string) string {
	if len(t.Owns) == 0 || d == nil {
		return ""
	}
	owns, _ := policy.CompilePathSet(t.Owns) // checked with the plan
	var outside []string
	for _, fs := range d.Files {
		if !owns.Match(fs.Path) {
			outside = append(outside, fs.Path)
		}
	}
	if len(outside) == 0 {
		return ""
	}
	return fmt.Sprintf("changed files outside its owns: %s (kept on branch %s, not merged)", strings.Join(outside, ", "), branch)
}

// end records how the task ended, and says so.
func (r *taskRun) end(e taskEnd) Usage {
	f, id := r.f, r.t.ID
	f.setTask(id, func(ts *TaskState) {
		ts.Status, ts.ExitCode, ts.Reason = e.status, int(e.code), e.reason
		ts.Finished = f.clock.Now().UTC()
		ts.ElapsedMS = f.clock.Since(r.start).Milliseconds()
		ts.Usage = r.prev.Usage.add(r.spent)
	})
	kind := EventFailed
	switch e.status {
	case StatusBudget:
		f.emit(EventBudget, id, e.reason, map[string]any{"level": "hard", "reason": e.reason})
	case StatusBlocked:
		kind = EventBlocked
	case StatusCanceled:
		kind = EventCancelled
	case StatusParked:
		kind = EventParked
	}
	f.emit(kind, id, e.reason, map[string]any{"exit_code": int(e.code)})
	return r.spent
}

// done records the task finished.
func (r *taskRun) done() Usage {
	f, id := r.f, r.t.ID
	f.setTask(id, func(ts *TaskState) {
		ts.Status, ts.ExitCode, ts.Park = StatusDone, 0, nil
		ts.Finished = f.clock.Now().UTC()
		ts.ElapsedMS = f.clock.Since(r.start).Milliseconds()
	})
	ts := f.st.task(id)
	diff := "no worktree"
	if ts.Diff != nil {
		diff = ts.Diff.Summary()
	}
	f.emit(EventFinished, id, diff, map[string]any{"usage": ts.Usage, "branch": ts.Branch, "head": ts.Head})
	return r.spent
}

// track marks t running until the returned func is called, warning of
// running tasks whose owns: overlap its.
func (f *fleet) track(t *Task) func() {
	f.runMu.Lock()
	var overlaps []string
	for oid, o := range f.running {
		if ownsOverlap(t.Owns, o.Owns) {
			overlaps = append(overlaps, oid)
		}
	}
	f.running[t.ID] = t
	f.runMu.Unlock()
	sort.Strings(overlaps)
	for _, oid := range overlaps {
		f.emit(EventWarning, t.ID, fmt.Sprintf("its owns: overlaps %s's, which is running too: their merges may conflict", oid),
			map[string]any{"overlaps": oid, "owns": t.Owns})
	}
	return func() {
		f.runMu.Lock()
		delete(f.running, t.ID)
		f.runMu.Unlock()
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return truncate(s, 200)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// workspace gives a task its directory: a new worktree, another task's, or
// a scratch directory.
func (f *fleet) workspace(ctx context.Context, t *Task) (string, *worktree.Handle, error) {
	st := f.st.snapshot()
	owner := worktree.Owner{PID: os.Getpid(), Command: f.o.Command}
	switch {
	case t.Worktree == "none":
		dir := filepath.Join(f.o.Dir, "scratch", t.ID)
		return dir, nil, os.MkdirAll(dir, 0o700)
	case strings.HasPrefix(t.Worktree, "shared:"):
		other := strings.TrimPrefix(t.Worktree, "shared:")
		h, err := f.wt.Create(ctx, f.o.RunID, other, st.Target, st.Target, owner)
		if err != nil {
			return "", nil, err
		}
		// The branch is the other task's; diffs count from where it is now.
		base, err := f.wt.RevParseIn(ctx, h.Path, "HEAD")
		if err != nil {
			_ = h.Release(ctx)
			return "", nil, err
		}
		h.Base = base
		return h.Path, h, nil
	default:
		// New tasks start from the target as it is now: their dependencies
		// are merged into it already.
		h, err := f.wt.Create(ctx, f.o.RunID, t.ID, "refs/heads/"+st.Target, st.Target, owner)
		if err != nil {
			return "", nil, err
		}
		return h.Path, h, nil
	}
}

// prompt is t's prompt, with its dependencies' results.
func (f *fleet) prompt(ctx context.Context, t *Task) (string, error) {
	results := map[string]TaskResult{}
	for _, d := range t.DependsOn {
		results[d] = f.result(ctx, d)
	}
	return RenderPrompt(t, f.plan, results)
}

// result is what a finished task gives its dependents.
func (f *fleet) result(ctx context.Context, id string) TaskResult {
	ts := f.st.task(id)
	r := TaskResult{Message: ts.Message, Branch: ts.Branch, Status: ts.Status, Diff: "no changes"}
	if ts.Diff != nil {
		r.Diff = ts.Diff.Summary()
		for _, fs := range ts.Diff.Files {
			r.Files = append(r.Files, fs.Path)
		}
	}
	if ts.Branch != "" && ts.Base != "" {
		if p, err := f.wt.Patch(ctx, f.wt.Repo, ts.Base+".."+"refs/heads/"+ts.Branch, 16<<10); err == nil {
			r.Patch = p
		}
	}
	return r
}

// taskAccount is whose usage limit task t spends: the run's record of it,
// or, in a remote worker's fleet (no run state), its plan's.
func (f *fleet) taskAccount(t *Task) quota.Account {
	if f.st == nil {
		return f.account(f.accountKey(t.AgentSpec))
	}
	return f.account(f.st.task(t.ID).Account)
}

// turn runs one agent session in cwd with prompt, stopping it when the
// task goes over its budget.
func (f *fleet) turn(ctx context.Context, cancelTask context.CancelCauseFunc, t *Task, res *Reservation, before Usage, cwd, prompt, resume string, attempt int) (runner.Result, Usage, error) {
	opts, eng, err := f.resolve(t.AgentSpec, f.plan.effectivePolicy(t.Policy), cwd, "task "+t.ID)
	if err != nil {
		return runner.Result{ExitCode: int(exitcode.Usage), Error: err.Error()}, Usage{}, err
	}
	elicitSpent := &spend{}
	opts.Elicitor = f.elicitor(t, cwd, elicitSpent)
	opts.Prompt = []driver.Content{driver.TextContent(prompt)}
	opts.ResumeID = resume
	if f.parks != nil {
		// At a limit the turn ends parked; the fleet parks its account.
		opts.Quota = runner.QuotaOptions{Account: f.taskAccount(t), ParkReason: "the fleet parks the task with its account"}
	}
	opts.Audit, opts.AuditTask = f.o.Audit, t.ID
	opts.RunID = fmt.Sprintf("%s/%s/%d", f.o.RunID, t.ID, attempt)
	opts.RunInfo = map[string]any{"fleet": f.o.RunID, "task": t.ID, "approve": string(eng.Mode()), "attempt": attempt}
	kill := make(chan struct{})
	opts.Kill = kill
	meter := &liveMeter{res: res, before: before.add(Usage{Turns: 1}), stop: func(err error) {
		cancelTask(exitcode.With(exitcode.BudgetExceeded, err))
	}, kill: func() { close(kill) }}
	opts.Sinks = append(opts.Sinks, meter)
	if f.o.TaskSink != nil {
		opts.Sinks = append(opts.Sinks, f.o.TaskSink(t.ID))
	}
	if err := res.CanTurn(before); err != nil {
		return runner.Result{ExitCode: int(exitcode.BudgetExceeded), Error: err.Error()}, Usage{}, err
	}
	r, err := runner.Run(ctx, opts)
	u := Usage{Turns: 1, Tokens: tokensOf(r.Usage)}
	if r.Usage != nil {
		u.Cost = r.Usage.CostAmount
	}
	// What the agent reported after the cancel counts too: the meter saw
	// every update, the result may end at the cancel.
	live := meter.spent()
	u.Tokens, u.Cost = max(u.Tokens, live.Tokens), max(u.Cost, live.Cost)
	u = u.add(elicitSpent.total()) // the answerer's turns for the agent's forms
	if over := res.Update(before.add(u)); over != nil && r.ExitCode == 0 {
		// Over the limit at the end of the turn: the work is kept, the
		// task stops here.
		cancelTask(exitcode.With(exitcode.BudgetExceeded, over))
		r.ExitCode, r.Error = int(exitcode.BudgetExceeded), over.Error()
	}
	return r, u, err
}

// liveMeter watches a running turn's usage against the task's
// reservation and stops the task (the runner then cancels the turn) as
// soon as it is at the reservation or its next update could pass it: when
// its usage plus the largest step between two of its updates so far is
// over it. An agent whose usage passes the reservation all the same (it
// ignored the cancel, or one update jumped over it) is killed at once,
// not after the cancel grace. Agents report usage after spending it, so
// this is what keeps a task within one update of its reservation, and
// the fleet within its limit plus one update per running task.
type liveMeter struct {
	res    *Reservation
	before Usage
	stop   func(error)
	kill   func() // the runner's Kill: after stop, ends the cancel grace

	mu      sync.Mutex
	u       driver.Usage
	last    Usage // the turn's usage at the previous update
	seen    bool  // an update came
	maxStep Usage // its largest increase between two updates
	once    sync.Once
	killed  sync.Once
}

func (l *liveMeter) Emit(ev driver.Event) {
	l.mu.Lock()
	switch ev.Type {
	case driver.EventUsage:
		l.u.ContextUsed = max(l.u.ContextUsed, ev.Usage.ContextUsed)
		if ev.Usage.CostAmount > 0 {
			l.u.CostAmount = ev.Usage.CostAmount
		}
	case driver.EventTurnEnded:
		if tu := ev.Turn.Usage; tu != nil {
			l.u.InputTokens += tu.InputTokens
			l.u.OutputTokens += tu.OutputTokens
			l.u.TotalTokens += tu.TotalTokens
		}
	default:
		l.mu.Unlock()
		return
	}
	turn := Usage{Tokens: tokensOf(&l.u), Cost: l.u.CostAmount}
	if l.seen {
		// Steps between updates; the first update is not one: it carries
		// the whole initial context (system prompt, tools).
		l.maxStep = Usage{Tokens: max(l.maxStep.Tokens, turn.Tokens-l.last.Tokens), Cost: max(l.maxStep.Cost, turn.Cost-l.last.Cost)}
	}
	l.last, l.seen = turn, true
	u, step := l.before.add(turn), l.maxStep
	l.mu.Unlock()
	over := l.res.Update(u)
	err := over
	if err == nil {
		err = l.res.nextWouldPass(u, step)
	}
	if err != nil {
		l.once.Do(func() { l.stop(err) })
	}
	if over != nil && l.kill != nil {
		l.killed.Do(l.kill)
	}
}

// spent is the turn's usage as the updates reported it.
func (l *liveMeter) spent() Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Usage{Tokens: tokensOf(&l.u), Cost: l.u.CostAmount}
}

// resolve resolves an agent spec of the plan (filled from its defaults)
// under pol in cwd, through the resolver tai run uses too: the same
// command for the driver, the same quirks, and a sandbox built from the
// policy the agent runs under. "always" answers are shared by every task
// of the run.
func (f *fleet) resolve(a AgentSpec, pol Policy, cwd, asker string) (runner.Options, *policy.Engine, error) {
	a = f.merged(a)
	script := ""
	if a.Script != "" {
		script = f.plan.path(a.Script)
	}
	r, err := agentspec.Resolve(agentspec.Spec{
		Agent: agentspec.Agent{Name: a.Agent, Command: a.AgentCmd, Driver: a.Driver, Model: a.Model, Mode: a.Mode,
			Script: script, Exe: f.o.Exe, CommandHint: "set agent_cmd"},
		Cwd: cwd,
		Policy: agentspec.Policy{Approve: pol.Approve, Allow: pol.Allow, Ask: pol.Ask, Deny: pol.Deny, NonInteractive: pol.NonInteractive,
			AllowDenials: pol.AllowDenials, Memory: f.memory, Asker: asker, Prompter: f.o.Prompter},
		Sandbox: f.o.Sandbox,
	})
	switch agentspec.StageOf(err) {
	case agentspec.StagePolicy:
		err = fmt.Errorf("policy: %w", err)
	case agentspec.StageSandbox:
		err = fmt.Errorf("sandbox: %w", err)
	}
	if err != nil {
		return runner.Options{}, nil, err
	}
	o := r.Options
	o.Version, o.Clock, o.Logger, o.CancelGrace = f.o.Version, f.clock, f.log, f.o.CancelGrace
	return o, r.Engine, nil
}
