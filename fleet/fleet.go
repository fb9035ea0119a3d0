// Package fleet runs a plan of agent tasks as a DAG: each task in its own
// git worktree, at most N at a time, under one budget, with the results of
// finished tasks routed into their dependents' prompts, agents' questions
// routed to an answerer agent (then a human), and finished branches merged
// back in dependency order through a fast-forward-only merge queue. Its
// state is persisted atomically after every step, so a run killed even by
// SIGKILL resumes without redoing finished tasks.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/coder/quartz"
	"github.com/gofrs/flock"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/preset"
	"github.com/tai-dev/tai/runner"
	"github.com/tai-dev/tai/sandbox"
	"github.com/tai-dev/tai/worktree"
)

// Options configure a fleet run.
type Options struct {
	Plan  *Plan  // nil on resume: the run directory's copy is used
	RunID string // required
	Dir   string // run directory; default RunDir(RunID)
	Repo  string // a directory in the repository; default the plan's directory
	// Concurrency overrides the plan's (0 = the plan's, else 4).
	Concurrency int
	FailFast    bool // or the plan's
	// Resume continues an existing run.
	Resume bool

	Audit    *audit.Log      // every fleet event and every task's run events; required
	Progress func(Event)     // progress events, called serially
	Prompter policy.Prompter // a human for permission asks; nil = headless
	// TaskSink, if set, gives each task's turns one more sink (the live
	// feed, stream-json output), by task id.
	TaskSink func(task string) driver.Sink
	// AskHuman asks a human a question an agent asked and the answerer
	// could not answer; nil = headless (the task ends blocked).
	AskHuman func(ctx context.Context, task, question string) (string, error)
	// Command records who owns the worktrees ("tai fleet run plan.yaml").
	Command     string
	Version     string
	CancelGrace time.Duration
	Clock       quartz.Clock
	Logger      *slog.Logger
	// Exe is the tai binary for the built-in agent; default os.Executable.
	Exe string
	// Sandbox confines a task's agent, given its preset: nil runs agents
	// unconfined. It is asked per task, so each agent's own state
	// directories are writable.
	Sandbox func(p preset.Preset) (*sandbox.Config, error)

	writeState func(path string, data []byte) error // tests: a full disk
}

// Event is a progress event.
type Event struct {
	Time   time.Time `json:"ts"`
	Kind   EventKind `json:"event"`
	Task   string    `json:"task,omitempty"`
	Detail string    `json:"detail,omitempty"`
	State  State     `json:"-"` // snapshot, for live tables
}

// EventKind names what happened to a fleet or one of its tasks.
type EventKind string

// Fleet events.
const (
	EventRunStart     EventKind = "run.start"
	EventRunEnd       EventKind = "run.end"
	EventStarted      EventKind = "started"
	EventFinished     EventKind = "finished"
	EventFailed       EventKind = "failed"
	EventRefused      EventKind = "refused"
	EventAsked        EventKind = "asked"
	EventAnswered     EventKind = "answered"
	EventAnswererPass EventKind = "answerer.pass" // the answerer could not answer; a human is asked
	EventMerged       EventKind = "merged"
	EventConflict     EventKind = "conflict"
	EventSkipped      EventKind = "skipped"
	EventBudget       EventKind = "budget"
	EventRetry        EventKind = "retry"
	EventBlocked      EventKind = "blocked"
	EventCancelled    EventKind = "cancelled"
	EventWarning      EventKind = "warning"
)

// Fleet is a run in progress.
type fleet struct {
	o      Options
	plan   *Plan
	st     *store
	wt     *worktree.Manager
	meter  *Meter
	memory *policy.Memory
	clock  quartz.Clock
	log    *slog.Logger

	stop    context.CancelCauseFunc // ends the run (set by run)
	evMu    sync.Mutex
	mergeMu sync.Mutex // the merge queue: one branch at a time
	runMu   sync.Mutex
	running map[string]*Task // tasks whose agent is working, for the owns: overlap warning
	done    map[string]chan struct{}
	humanMu sync.Mutex
}

// Run runs (or resumes) a fleet. The returned State is final; its
// ExitCode is the process's: 0, 1 (a task failed), 6 (budget), 7 (merge
// conflict), 130 (interrupted), 2 (usage).
func Run(ctx context.Context, o Options) (*State, error) {
	if o.Clock == nil {
		o.Clock = quartz.NewReal()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Dir == "" {
		o.Dir = RunDir(o.RunID)
	}
	if !worktree.ValidName(o.RunID) {
		return nil, exitcode.Usagef("invalid run id %q", o.RunID)
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	lk := flock.New(filepath.Join(o.Dir, "run.lock"))
	got, err := lk.TryLock()
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	if !got {
		return nil, exitcode.Usagef("fleet run %s is already running in another process", o.RunID)
	}
	defer func() { _ = lk.Unlock() }()

	f := &fleet{o: o, clock: o.Clock, log: o.Logger, memory: policy.NewMemory(policy.ScopeRun), done: map[string]chan struct{}{},
		running: map[string]*Task{}, stop: func(error) {}}
	if err := f.init(ctx); err != nil {
		return nil, err
	}
	st, err := f.run(ctx)
	if serr := f.st.err(); serr != nil && err == nil {
		// Nothing was merged after the failed write: what is merged is in
		// the target, and resume finds it there.
		err = exitcode.With(exitcode.AgentError, fmt.Errorf("the fleet stopped: its state could not be saved (%w); nothing more was merged after that; free the space, then: tai fleet resume %s", serr, o.RunID))
	}
	return st, err
}

func (f *fleet) init(ctx context.Context) error {
	o := f.o
	statePath := filepath.Join(o.Dir, "state.json")
	planCopy := filepath.Join(o.Dir, "plan.yaml")
	f.st = &store{path: statePath, now: func() time.Time { return f.clock.Now() }, write: o.writeState,
		onFail: func(err error) { f.stop(err) }}
	if o.Resume {
		st, err := LoadState(o.Dir)
		if err != nil {
			return exitcode.With(exitcode.Usage, err)
		}
		plan, err := loadPlanIn(planCopy, filepath.Dir(st.PlanFrom))
		if err != nil {
			return exitcode.With(exitcode.Usage, err)
		}
		f.plan = plan
		f.st.st = st
	} else {
		if _, err := os.Stat(statePath); err == nil {
			return exitcode.Usagef("fleet run %s exists already (use tai fleet resume %s)", o.RunID, o.RunID)
		}
		f.plan = o.Plan
	}
	repo := o.Repo
	if repo == "" {
		if f.st.st != nil {
			repo = f.st.st.Repo
		} else {
			repo = f.plan.Dir
		}
	}
	wt, err := worktree.Open(ctx, repo)
	if err != nil {
		if o.Repo == "" && !o.Resume {
			return exitcode.Usagef("the plan's directory %s is not in a git repository: a fleet works in the plan's repository unless -C names one (tai fleet run -C <repo> %s): %v", repo, f.plan.File, err)
		}
		return exitcode.With(exitcode.Usage, err)
	}
	f.wt = wt
	if !o.Resume {
		// Prompt files were inlined by LoadPlan: the copy is self-contained.
		b, err := marshalPlan(f.plan)
		if err != nil {
			return err
		}
		if err := worktree.WriteFileAtomic(planCopy, b, 0o600); err != nil {
			return err
		}
		base := f.plan.Base
		if base == "" {
			base = "HEAD"
		}
		if !wt.HasCommits(ctx) && base == "HEAD" {
			return exitcode.Usagef("the repository %s has no commits yet: a fleet's tasks start from a commit (make one, or set base: in the plan)", wt.Repo)
		}
		sha, err := wt.RevParse(ctx, base)
		if err != nil {
			return exitcode.With(exitcode.Usage, fmt.Errorf("base: %w", err))
		}
		target := f.plan.Target
		if target == "" {
			target = "tai-fleet/" + o.RunID
		}
		if p, ok, err := wt.CheckedOut(ctx, target); err != nil {
			return err
		} else if ok {
			return exitcode.Usagef("target branch %s is checked out in %s: tai merges only into branches no checkout has open (set target: to another branch, e.g. tai-fleet/%s)", target, p, o.RunID)
		}
		if err := wt.EnsureBranch(ctx, target, sha); err != nil {
			return err
		}
		st := &State{Version: 1, Run: o.RunID, Plan: planCopy, PlanFrom: f.plan.File, Repo: wt.Repo, Base: sha, Target: target,
			Created: f.clock.Now().UTC(), Order: f.plan.Order(), Tasks: map[string]*TaskState{}}
		for _, t := range f.plan.Tasks {
			st.Tasks[t.ID] = &TaskState{ID: t.ID, Agent: f.agentLabel(t.AgentSpec), Status: StatusPending}
		}
		f.st.st = st
	}
	conc := o.Concurrency
	if conc == 0 {
		conc = f.plan.Concurrency
	}
	if conc == 0 {
		conc = 4
	}
	f.plan.Concurrency = conc
	f.plan.FailFast = f.plan.FailFast || o.FailFast
	var inTarget map[string]string
	if o.Resume {
		inTarget = f.mergedInGit(ctx)
	}
	return f.st.update(func(st *State) {
		st.Status, st.PID, st.ExitCode = "running", os.Getpid(), 0
		if o.Resume {
			st.Resumes++
		}
		for id, head := range inTarget {
			t := st.Tasks[id]
			t.Status, t.Head, t.Reason, t.ExitCode = StatusMerged, head, "", 0
		}
		for _, t := range st.Tasks {
			// What was in flight when the run stopped starts over (in its
			// kept worktree); what finished stays finished.
			if !succeeded(t.Status) {
				t.Status, t.Reason, t.ExitCode = StatusPending, "", 0
			}
		}
	})
}

func (f *fleet) agentLabel(a AgentSpec) string {
	a = f.merged(a)
	if a.AgentCmd != "" {
		return a.AgentCmd
	}
	return a.Agent
}

// merged fills a task's agent spec from the plan's defaults.
func (f *fleet) merged(a AgentSpec) AgentSpec {
	d := f.plan.Defaults
	if a.Agent == "" && a.AgentCmd == "" {
		a.Agent, a.AgentCmd = d.Agent, d.AgentCmd
		if a.Script == "" {
			a.Script = d.Script
		}
	}
	if a.Agent == "" && a.AgentCmd == "" {
		a.Agent = "builtin"
	}
	if a.Driver == "" {
		a.Driver = d.Driver
	}
	if a.Model == "" {
		a.Model = d.Model
	}
	if a.Mode == "" {
		a.Mode = d.Mode
	}
	return a
}

// emit records a fleet event in the audit log and tells the progress sink.
func (f *fleet) emit(kind EventKind, task, detail string, data map[string]any) {
	if data == nil {
		data = map[string]any{}
	}
	data["event"], data["task"] = string(kind), task
	if detail != "" {
		data["detail"] = detail
	}
	auditKind := audit.KindFleet
	if kind == EventBudget {
		auditKind = audit.KindBudget
	}
	if err := f.o.Audit.Append(auditKind, "", data); err != nil {
		f.log.Error("audit", "err", err)
	}
	f.evMu.Lock()
	defer f.evMu.Unlock()
	if f.o.Progress != nil {
		f.o.Progress(Event{Time: f.clock.Now(), Kind: kind, Task: task, Detail: detail, State: f.st.snapshot()})
	}
}

func (f *fleet) setTask(id string, fn func(t *TaskState)) {
	if err := f.st.update(func(st *State) { fn(st.Tasks[id]) }); err != nil {
		f.log.Error("saving fleet state", "err", err)
	}
}

// runTask runs a task's turns in its worktree: the prompt, then the
// answers to its questions, with retries. It returns what it spent.
func (f *fleet) runTask(ctx context.Context, t *Task, res *Reservation) Usage {
	id := t.ID
	prev := f.st.task(id)
	spent := Usage{}
	start := f.clock.Now()
	f.setTask(id, func(ts *TaskState) {
		ts.Status, ts.Started, ts.Finished, ts.Questions, ts.Reason = StatusRunning, start.UTC(), time.Time{}, nil, ""
	})
	fail := func(status TaskStatus, code exitcode.Code, reason string) Usage {
		f.setTask(id, func(ts *TaskState) {
			ts.Status, ts.ExitCode, ts.Reason = status, int(code), reason
			ts.Finished = f.clock.Now().UTC()
			ts.ElapsedMS = f.clock.Since(start).Milliseconds()
			ts.Usage = prev.Usage.add(spent)
		})
		kind := EventFailed
		switch status {
		case StatusBudget:
			f.emit(EventBudget, id, reason, map[string]any{"level": "hard", "reason": reason})
		case StatusBlocked:
			kind = EventBlocked
		case StatusCanceled:
			kind = EventCancelled
		}
		f.emit(kind, id, reason, map[string]any{"exit_code": int(code)})
		return spent
	}

	// Workspace.
	cwd, h, err := f.workspace(ctx, t)
	if err != nil {
		return fail(StatusFailed, exitcode.AgentError, err.Error())
	}
	if h != nil {
		defer func() { _ = h.Release(context.WithoutCancel(ctx)) }()
		f.setTask(id, func(ts *TaskState) { ts.Branch, ts.Worktree, ts.Base = h.Branch, h.Path, h.Base })
	}
	results := map[string]TaskResult{}
	for _, d := range t.DependsOn {
		results[d] = f.result(ctx, d)
	}
	prompt, err := RenderPrompt(t, f.plan, results)
	if err != nil {
		return fail(StatusFailed, exitcode.Usage, err.Error())
	}
	f.emit(EventStarted, id, fmt.Sprintf("agent %s in %s", f.agentLabel(t.AgentSpec), cwd), map[string]any{"worktree": cwd, "attempt": prev.Attempts + 1})
	f.runMu.Lock()
	var overlaps []string
	for oid, o := range f.running {
		if ownsOverlap(t.Owns, o.Owns) {
			overlaps = append(overlaps, oid)
		}
	}
	f.running[id] = t
	f.runMu.Unlock()
	defer func() {
		f.runMu.Lock()
		delete(f.running, id)
		f.runMu.Unlock()
	}()
	sort.Strings(overlaps)
	for _, oid := range overlaps {
		f.emit(EventWarning, id, fmt.Sprintf("its owns: overlaps %s's, which is running too: their merges may conflict", oid),
			map[string]any{"overlaps": oid, "owns": t.Owns})
	}

	taskCtx, cancelTask := context.WithCancelCause(ctx)
	defer cancelTask(nil)
	if wall := time.Duration(t.Budget.WallTime); wall > 0 {
		tm := f.clock.AfterFunc(wall, func() {
			cancelTask(exitcode.With(exitcode.BudgetExceeded, fmt.Errorf("%w: task %s ran for its wall time of %s", ErrBudget, id, wall)))
		}, "fleet", "task-wall")
		defer tm.Stop()
	}

	maxQ := f.plan.MaxQuestions
	if maxQ == 0 {
		maxQ = 3
	}
	next := prompt
	resume := "" // the session a follow-up continues, if the agent can resume it
	attempts := 0
	var last runner.Result
	var fullFollowUp string // the answer with the whole task, for a fresh session
	for {
		if err := res.CanTurn(spent); err != nil {
			return fail(StatusBudget, exitcode.BudgetExceeded, err.Error())
		}
		attempts++
		f.setTask(id, func(ts *TaskState) { ts.Attempts++; ts.Status = StatusRunning })
		r, turnSpent, err := f.turn(taskCtx, cancelTask, t, res, spent, cwd, next, resume, attempts)
		spent = spent.add(turnSpent)
		last = r
		f.setTask(id, func(ts *TaskState) {
			ts.Usage, ts.SessionID, ts.Message, ts.ExitCode = prev.Usage.add(spent), r.SessionID, r.Message, r.ExitCode
		})
		if err != nil || r.ExitCode != 0 {
			code := exitcode.Code(r.ExitCode)
			if code == 0 {
				code = exitcode.Of(err)
			}
			reason := r.Error
			if reason == "" && err != nil {
				reason = err.Error()
			}
			// The runner's hint names tai run's flag; a fleet's is a policy key.
			reason = strings.ReplaceAll(reason, "pass --allow-denials to accept", "set allow_denials: true in the plan's or the task's policy to accept")
			if cause := context.Cause(taskCtx); cause != nil && errors.Is(cause, ErrBudget) {
				return fail(StatusBudget, exitcode.BudgetExceeded, cause.Error())
			}
			if ctx.Err() != nil {
				return fail(StatusCanceled, exitcode.Interrupted, causeText(ctx))
			}
			if resume != "" && code == exitcode.NoSession {
				// The agent lost the session: the answer goes into a
				// fresh one with the whole task again.
				f.emit(EventRetry, id, fmt.Sprintf("session %s could not be resumed; continuing in a new one", resume), nil)
				next, resume = fullFollowUp, ""
				continue
			}
			if attempts <= t.Retries {
				f.emit(EventRetry, id, fmt.Sprintf("attempt %d failed (%s); retrying", attempts, reason), nil)
				next, resume = prompt, ""
				continue
			}
			return fail(StatusFailed, code, reason)
		}
		q := strings.TrimSpace(r.Message)
		if !strings.HasSuffix(q, "?") {
			break
		}
		// The agent asked something: the answerer, then a human.
		if len(f.st.task(id).Questions) >= maxQ {
			return fail(StatusBlocked, exitcode.AgentError, fmt.Sprintf("still asking after %d answered question(s): %s", maxQ, lastLine(q)))
		}
		f.setTask(id, func(ts *TaskState) { ts.Status = StatusAsking })
		f.emit(EventAsked, id, lastLine(q), map[string]any{"question": q})
		ans, by, aspent, err := f.answer(taskCtx, t, cwd, h, q)
		spent = spent.add(aspent)
		if err != nil {
			return fail(StatusBlocked, exitcode.AgentError, fmt.Sprintf("the agent asked %q and %v", lastLine(q), err))
		}
		f.setTask(id, func(ts *TaskState) { ts.Questions = append(ts.Questions, QA{Question: q, Answer: ans, DecidedBy: by}) })
		f.emit(EventAnswered, id, by+": "+lastLine(ans), map[string]any{"question": q, "answer": ans, "decided_by": by})
		fullFollowUp = fmt.Sprintf("%s\n\n---\nYou asked:\n%s\n\nAnswer (from the %s):\n%s\n\nContinue the task with this answer.", prompt, q, by, ans)
		next, resume = fullFollowUp, ""
		if r.Resumable && r.SessionID != "" {
			// The same session goes on: the agent has the task and its
			// question in context, and needs only the answer.
			next, resume = fmt.Sprintf("Answer (from the %s):\n%s\n\nContinue the task with this answer.", by, ans), r.SessionID
		}
	}

	// Keep the work: commit it on the task's branch.
	if h != nil || strings.HasPrefix(t.Worktree, "shared:") {
		head, _, err := f.wt.Commit(context.WithoutCancel(ctx), cwd, fmt.Sprintf("tai fleet %s: task %s\n\n%s", f.o.RunID, id, truncate(last.Message, 2000)))
		if err != nil {
			return fail(StatusFailed, exitcode.AgentError, err.Error())
		}
		base := f.st.task(id).Base
		d, err := f.wt.Diff(context.WithoutCancel(ctx), cwd, base)
		if err != nil {
			return fail(StatusFailed, exitcode.AgentError, err.Error())
		}
		f.setTask(id, func(ts *TaskState) { ts.Head, ts.Diff = head, &d })
		// A task that changed files it does not own is not merged: its
		// work stays on its branch, and the overlap is named.
		if len(t.Owns) > 0 {
			owns, _ := policy.CompilePathSet(t.Owns) // checked with the plan
			var outside []string
			for _, fs := range d.Files {
				if !owns.Match(fs.Path) {
					outside = append(outside, fs.Path)
				}
			}
			if len(outside) > 0 {
				return fail(StatusFailed, exitcode.AgentError, fmt.Sprintf("changed files outside its owns: %s (kept on branch %s, not merged)",
					strings.Join(outside, ", "), f.st.task(id).Branch))
			}
		}
	}
	f.setTask(id, func(ts *TaskState) {
		ts.Status, ts.ExitCode = StatusDone, 0
		ts.Finished = f.clock.Now().UTC()
		ts.ElapsedMS = f.clock.Since(start).Milliseconds()
	})
	ts := f.st.task(id)
	diff := "no worktree"
	if ts.Diff != nil {
		diff = ts.Diff.Summary()
	}
	f.emit(EventFinished, id, diff, map[string]any{"usage": ts.Usage, "branch": ts.Branch, "head": ts.Head})
	return spent
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

// turn runs one agent session in cwd with prompt, stopping it when the
// task goes over its budget.
func (f *fleet) turn(ctx context.Context, cancelTask context.CancelCauseFunc, t *Task, res *Reservation, before Usage, cwd, prompt, resume string, attempt int) (runner.Result, Usage, error) {
	spec := f.merged(t.AgentSpec)
	opts, err := f.agentOptions(spec, cwd)
	if err != nil {
		return runner.Result{ExitCode: int(exitcode.Usage), Error: err.Error()}, Usage{}, err
	}
	eng, pol, err := f.engine(t.Policy, cwd, "task "+t.ID)
	if err != nil {
		return runner.Result{ExitCode: int(exitcode.Usage), Error: err.Error()}, Usage{}, err
	}
	opts.Decider, opts.Modes = eng, eng
	elicitSpent := &spend{}
	opts.Elicitor = f.elicitor(t, cwd, elicitSpent)
	opts.AllowDenials = pol.AllowDenials
	if opts.Mode == "" {
		opts.Mode = eng.DefaultMode()
	}
	opts.Prompt = []driver.Content{driver.TextContent(prompt)}
	opts.ResumeID = resume
	opts.Audit, opts.AuditTask = f.o.Audit, t.ID
	opts.RunID = fmt.Sprintf("%s/%s/%d", f.o.RunID, t.ID, attempt)
	opts.RunInfo = map[string]any{"fleet": f.o.RunID, "task": t.ID, "approve": string(eng.Mode()), "attempt": attempt}
	meter := &liveMeter{res: res, before: before.add(Usage{Turns: 1}), stop: func(err error) {
		cancelTask(exitcode.With(exitcode.BudgetExceeded, err))
	}}
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
// reservation and stops the task (the runner then cancels the turn, and
// kills an agent that ignores the cancel after the cancel grace) as soon
// as it is at the reservation or its next update could pass it: when its
// usage plus the largest step between two of its updates so far is over
// it. Agents report usage after
// spending it, so this is what keeps a task within about one update of
// its reservation, and the fleet within its limit.
type liveMeter struct {
	res    *Reservation
	before Usage
	stop   func(error)

	mu      sync.Mutex
	u       driver.Usage
	last    Usage // the turn's usage at the previous update
	seen    bool  // an update came
	maxStep Usage // its largest increase between two updates
	once    sync.Once
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
	err := l.res.Update(u)
	if err == nil {
		err = l.res.nextWouldPass(u, step)
	}
	if err != nil {
		l.once.Do(func() { l.stop(err) })
	}
}

// spent is the turn's usage as the updates reported it.
func (l *liveMeter) spent() Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Usage{Tokens: tokensOf(&l.u), Cost: l.u.CostAmount}
}

// agentOptions resolves an agent spec like tai run does.
func (f *fleet) agentOptions(a AgentSpec, cwd string) (runner.Options, error) {
	o := runner.Options{Cwd: cwd, Driver: a.Driver, Model: a.Model, Mode: a.Mode, Version: f.o.Version,
		Clock: f.clock, Logger: f.log, CancelGrace: f.o.CancelGrace}
	var p preset.Preset
	switch {
	case a.AgentCmd != "":
		cp, argv, err := preset.Custom(a.AgentCmd)
		if err != nil {
			return o, err
		}
		if known, ok := preset.Lookup(a.Agent); ok && a.Agent != "" && a.Agent != "builtin" {
			cp.Quirks, cp.Name = known.Quirks, known.Name
		}
		p, o.Argv = cp, argv
	default:
		known, ok := preset.Lookup(a.Agent)
		if !ok {
			return o, fmt.Errorf("unknown agent %q (known: %s; or set agent_cmd)", a.Agent, strings.Join(preset.Names(), ", "))
		}
		if known.Builtin {
			exe := f.o.Exe
			if exe == "" {
				var err error
				if exe, err = os.Executable(); err != nil {
					return o, fmt.Errorf("locating tai for the built-in agent: %w", err)
				}
			}
			o.Argv = []string{exe, "agent", "builtin"}
			if a.Script != "" {
				o.Argv = append(o.Argv, "--script", f.plan.path(a.Script))
			}
		} else {
			argv, err := known.Command()
			if err != nil {
				return o, err
			}
			o.Argv = argv
		}
		p = known
	}
	if o.Driver == "" {
		o.Driver = p.Driver
	}
	o.Agent, o.NoClientFS, o.IgnoresStdinEOF = p.Name, p.Quirks.NoClientFS, p.Quirks.IgnoresStdinEOF
	if f.o.Sandbox != nil {
		cfg, err := f.o.Sandbox(p)
		if err != nil {
			return o, fmt.Errorf("sandbox: %w", err)
		}
		o.Sandbox = cfg
	}
	return o, nil
}

// engine builds a task's policy: the plan's, then the task's overrides;
// "always" answers are shared by every task of the run.
func (f *fleet) engine(tp *Policy, cwd, asker string) (*policy.Engine, Policy, error) {
	p := f.plan.effectivePolicy(tp)
	cfg, err := checkPolicy(p)
	if err != nil {
		return nil, p, fmt.Errorf("policy: %w", err)
	}
	var ni policy.NonInteractive
	if p.NonInteractive != "" {
		if ni, err = policy.ParseNonInteractive(p.NonInteractive); err != nil {
			return nil, p, fmt.Errorf("policy: %w", err)
		}
	}
	eng, err := policy.NewEngine(cfg, policy.Options{Workspace: cwd, Prompter: f.o.Prompter, NonInteractive: ni, Memory: f.memory, Asker: asker})
	if err != nil {
		return nil, p, fmt.Errorf("policy: %w", err)
	}
	return eng, p, nil
}

// finish computes the run's outcome and saves it.
func (f *fleet) finish(ctx, runCtx context.Context) *State {
	code := exitcode.OK
	status := "done"
	st := f.st.snapshot()
	rank := func(c exitcode.Code) int {
		switch c {
		case exitcode.Interrupted:
			return 4
		case exitcode.MergeConflict:
			return 3
		case exitcode.BudgetExceeded:
			return 2
		case exitcode.OK:
			return 0
		}
		return 1
	}
	for _, id := range st.Order {
		ts := st.Tasks[id]
		var c exitcode.Code
		switch ts.Status {
		case StatusMerged, StatusDone:
			continue
		case StatusConflict:
			c = exitcode.MergeConflict
		case StatusRefused, StatusBudget:
			c = exitcode.BudgetExceeded
		case StatusSkipped:
			c = exitcode.AgentError
		case StatusCanceled, StatusPending, StatusWaiting:
			c = exitcode.Of(context.Cause(runCtx))
			if c == exitcode.OK {
				c = exitcode.Interrupted
			}
		default:
			c = exitcode.AgentError
		}
		if rank(c) > rank(code) {
			code = c
		}
	}
	if ctx.Err() != nil {
		code, status = exitcode.Interrupted, "interrupted"
	} else if code != exitcode.OK {
		status = "failed"
	}
	if code == exitcode.OK && f.st.err() == nil {
		f.cleanup(ctx, st)
	}
	_ = f.st.update(func(s *State) {
		s.Status, s.ExitCode, s.PID, s.Usage = status, int(code), 0, f.meter.Used()
	})
	f.emit(EventRunEnd, "", fmt.Sprintf("%s (exit %d)", status, code), map[string]any{"status": status, "exit_code": int(code)})
	// The log of a fleet run ends like a single run's, so audit verify
	// sees it complete.
	if err := f.o.Audit.Append(audit.KindRunEnd, "", map[string]any{"fleet": f.o.RunID, "status": status, "exit_code": int(code)}); err != nil {
		f.log.Error("audit", "err", err)
	}
	final := f.st.snapshot()
	return &final
}
