// Package fleet runs a plan of agent tasks as a DAG: each task in its own
// git worktree, at most N at a time, under one budget, with the results of
// finished tasks routed into their dependents' prompts, agents' questions
// routed to an answerer agent (then a human), and finished branches merged
// back in dependency order through a fast-forward-only merge queue (or,
// with merge: false, kept on their branches and scored by the plan's
// check, for one to be picked: tai compare). Its
// state is persisted atomically after every step, so a run killed even by
// SIGKILL resumes without redoing finished tasks.
//
// It is tai's one fleet engine: the scheduler, the budget (meter and
// reservations), the state, the events, the answerer, the merge queue and
// the check are here, and an Executor runs each task. The local executor
// (runTask) runs the task's agent on this host; package remote's runs it
// on a worker over NATS, through the hooks in executor.go.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/coder/quartz"
	"github.com/gofrs/flock"
	"golang.org/x/sync/semaphore"

	"github.com/tai-dev/tai/agentspec"
	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/elicit"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/worktree"
)

// Options configure a fleet run.
type Options struct {
	Plan  *Plan  // nil on resume: the run directory's copy is used
	RunID string // required
	Dir   string // run directory; default RunDir(RunID)
	// Repo is a directory in the repository (tai fleet run's -C, default
	// the current directory): required for a new run; a resume's default
	// is the run's own repository, and a Repo given must be that one.
	Repo string
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
	// could not answer; nil = headless (the task ends blocked). Every
	// waiting task asks at once: the human (tai top, the terminal in turn)
	// answers each on its own.
	AskHuman func(ctx context.Context, task, question string) (string, error)
	// ElicitHuman answers, as a form, an elicitation the answerer could not
	// (the terminal's form raced with the feed, tagged with the task by
	// policy.AskerOf); nil = it goes to AskHuman as a question.
	ElicitHuman elicit.Answerer
	// Command records who owns the worktrees ("tai fleet run plan.yaml").
	Command     string
	Version     string
	CancelGrace time.Duration
	Clock       quartz.Clock
	Logger      *slog.Logger
	// Exe is the tai binary for the built-in agent; default os.Executable.
	Exe string
	// Sandbox confines each task's agent (the resolver builds its config
	// from the agent's preset and the task's policy); nil starts agents
	// without tai's launcher (tests whose binary is not tai).
	Sandbox *agentspec.Sandbox
	// Executor runs the tasks; nil runs them here, each in its worktree.
	Executor Executor

	// Hands, if set, parks every account (HandPause) or releases every
	// park (HandResume) by hand: tai fleet pause and resume.
	Hands <-chan Hand
	// KeepPauses: a run resumed by no person (a hub's coordinator adopting
	// it again after a restart) keeps its parks by hand; only a release by
	// hand ends them. Without it, resuming the run is their release.
	KeepPauses bool

	writeState func(path string, data []byte) error // tests: a full disk
}

// testWriteState, set only in binaries built with the tai_testhooks tag,
// replaces the state's writes (a full disk) when Options does not.
var testWriteState func(path string, data []byte) error

// DefaultConcurrency is how many tasks run at once when neither the plan
// nor the run says.
const DefaultConcurrency = 4

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
	EventCheck        EventKind = "check"  // the plan's check starts, confined or not
	EventScored       EventKind = "scored" // merge: false: a finished task's check result
	EventPicked       EventKind = "picked" // tai compare pick: the task merged as the winner

	// A fleet over NATS: the coordinator's events about its workers.
	EventOffered         EventKind = "offered"          // the task is on the work queue, its lease open
	EventReoffered       EventKind = "reoffered"        // its message was gone while its lease was open: put back
	EventAccepted        EventKind = "accepted"         // the lease holder's result was taken
	EventPermissionAsked EventKind = "permission.asked" // a worker's agent waits for a human's decision
	EventParked          EventKind = "parked"           // an account (no task) or a task parked at a usage limit, or by hand
	EventResumed         EventKind = "resumed"          // an account released (no task), or a task resumed
)

// EventKinds lists the fleet's own event kinds (a worker's, forwarded, are
// WorkerEvent's).
var EventKinds = []EventKind{EventRunStart, EventRunEnd, EventStarted, EventFinished, EventFailed, EventRefused, EventAsked,
	EventAnswered, EventAnswererPass, EventMerged, EventConflict, EventSkipped, EventBudget, EventRetry, EventBlocked,
	EventCancelled, EventWarning, EventCheck, EventScored, EventPicked, EventOffered, EventReoffered, EventAccepted,
	EventPermissionAsked}

// WorkerEvent is the kind of a worker's event (its own word, such as
// "claimed") as its coordinator records it: "worker.claimed".
func WorkerEvent(kind string) EventKind { return EventKind("worker." + kind) }

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
	wall   *wallBudget // the fleet's wall time, held while an account is parked

	ex      Executor
	stop    context.CancelCauseFunc // ends the run (set by run)
	evMu    sync.Mutex
	mergeMu sync.Mutex // the merge queue: one branch at a time
	runMu   sync.Mutex
	running map[string]*Task // tasks whose agent is working, for the owns: overlap warning
	done    map[string]chan struct{}
	slots   *semaphore.Weighted // the run's concurrency
	parks   *parks

	// A task run by a remote worker (RunTaskIn) or answered for one (Answer).
	ask   func(ctx context.Context, q string) (string, string, Usage, error) // routes questions to the coordinator
	patch string                                                             // the remote task's changes so far, for the answerer
}

// Run runs (or resumes) a fleet. The returned State is final; its
// ExitCode is the process's: 0, 1 (a task failed), 6 (budget), 7 (merge
// conflict), 130 (interrupted), 2 (usage).
func Run(ctx context.Context, o Options) (*State, error) {
	f, unlock, err := openRun(&o, true, func(run string) error {
		return exitcode.With(exitcode.Usage, fmt.Errorf("fleet run %s is %w", run, ErrBusy))
	})
	if err != nil {
		return nil, err
	}
	defer unlock()
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

// ErrBusy: another process runs (or coordinates) the run.
var ErrBusy = errors.New("already running in another process")

// openRun fills o's defaults, takes the run's lock, and makes the fleet
// that runs in it, for Run and Pick alike. create makes the run's
// directory (a new run); busy is the refusal when another process holds
// the lock.
func openRun(o *Options, create bool, busy func(run string) error) (*fleet, func(), error) {
	if o.Clock == nil {
		o.Clock = quartz.NewReal()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Dir == "" {
		o.Dir = RunDir(o.RunID)
	}
	if o.writeState == nil {
		o.writeState = testWriteState
	}
	if !worktree.ValidName(o.RunID) {
		return nil, nil, exitcode.Usagef("invalid run id %q", o.RunID)
	}
	if create {
		if err := os.MkdirAll(o.Dir, 0o700); err != nil {
			return nil, nil, fmt.Errorf("fleet: %w", err)
		}
	}
	lk := flock.New(filepath.Join(o.Dir, "run.lock"))
	got, err := lk.TryLock()
	if err != nil {
		return nil, nil, fmt.Errorf("fleet: %w", err)
	}
	if !got {
		return nil, nil, busy(o.RunID)
	}
	f := &fleet{o: *o, clock: o.Clock, log: o.Logger, memory: policy.NewMemory(policy.ScopeRun), done: map[string]chan struct{}{},
		running: map[string]*Task{}, stop: func(error) {}, ex: o.Executor}
	if f.ex == nil {
		f.ex = local{f}
	}
	return f, func() { _ = lk.Unlock() }, nil
}

func (f *fleet) init(ctx context.Context) error {
	o := f.o
	if op, ok := f.ex.(Opener); ok {
		return f.open(ctx, op)
	}
	if err := f.load(); err != nil {
		return err
	}
	repo := o.Repo
	switch {
	case repo == "" && o.Resume:
		repo = f.st.st.Repo
	case repo == "":
		return exitcode.Usagef("a new fleet run needs its repository")
	}
	wt, err := worktree.Open(ctx, repo)
	if err != nil {
		if !o.Resume {
			return exitcode.Usagef("%s is not in a git repository: a fleet runs in the current directory's repository unless -C names one (tai fleet run -C <repo> %s)", repo, f.plan.File)
		}
		return exitcode.With(exitcode.Usage, err)
	}
	if o.Resume && !sameDir(wt.Repo, f.st.st.Repo) {
		return exitcode.Usagef("fleet run %s belongs to the repository %s, not %s", o.RunID, f.st.st.Repo, wt.Repo)
	}
	f.wt, wt.Log = wt, f.log
	if !o.Resume {
		if err := f.start(ctx); err != nil {
			return err
		}
	}
	f.settle()
	var inTarget map[string]string
	if o.Resume {
		inTarget = f.mergedInGit(ctx)
	}
	return f.st.update(func(st *State) {
		st.Status, st.PID, st.ExitCode = RunRunning, os.Getpid(), 0
		if o.Resume {
			st.Resumes++
		}
		for id, head := range inTarget {
			t := st.Tasks[id]
			t.Status, t.Head, t.Reason, t.ExitCode = StatusMerged, head, "", 0
		}
		for _, t := range st.Tasks {
			// What was in flight when the run stopped starts over (in its
			// kept worktree); what finished stays finished. A task whose
			// merge conflicted is done: only its merge is tried again
			// (after the user resolved it in the task's worktree).
			switch {
			case t.Status == StatusConflict && t.Branch != "":
				t.Status, t.Reason, t.ExitCode, t.ConflictFiles = StatusDone, "", 0, nil
			case !succeeded(t.Status):
				t.Status, t.Reason, t.ExitCode = StatusPending, "", 0
			}
		}
	})
}

// open opens a run an Opener keeps.
func (f *fleet) open(ctx context.Context, op Opener) error {
	f.newStore()
	opened, err := op.Open(ctx, &Engine{f})
	if err != nil {
		return err
	}
	f.plan, f.wt, f.st.st = opened.Plan, opened.Repo, opened.State
	// The plan copy here too, as a local run has: tai compare pick works
	// from this host's copy of the run.
	b, err := marshalPlan(f.plan)
	if err == nil {
		err = worktree.WriteFileAtomic(filepath.Join(f.o.Dir, "plan.yaml"), b, 0o600)
	}
	if err != nil {
		f.log.Warn("the plan copy (tai compare pick needs it)", "err", err)
	}
	f.settle()
	return f.st.update(func(*State) {})
}

// settle fills the plan's concurrency and fail-fast from the run's
// options.
func (f *fleet) settle() {
	conc := f.o.Concurrency
	if conc == 0 {
		conc = f.plan.Concurrency
	}
	if conc == 0 {
		conc = DefaultConcurrency
	}
	f.plan.Concurrency = conc
	f.plan.FailFast = f.plan.FailFast || f.o.FailFast
}

// newStore makes the run's state store (its state.json, and the
// executor's record of it if it keeps one).
func (f *fleet) newStore() {
	f.st = &store{path: filepath.Join(f.o.Dir, "state.json"), now: func() time.Time { return f.clock.Now() }, write: f.o.writeState,
		onFail: func(err error) { f.stop(err) }}
	if r, ok := f.ex.(Recorder); ok {
		f.st.saved = r.Saved
	}
}

// load opens the run's state store: a resumed run's state and plan copy,
// or the new run's plan.
func (f *fleet) load() error {
	o := f.o
	f.newStore()
	statePath := f.st.path
	if !o.Resume {
		if _, err := os.Stat(statePath); err == nil {
			return exitcode.Usagef("fleet run %s exists already (use tai fleet resume %s)", o.RunID, o.RunID)
		}
		f.plan = o.Plan
		return nil
	}
	st, err := LoadState(o.Dir)
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	plan, err := loadPlanIn(filepath.Join(o.Dir, "plan.yaml"), filepath.Dir(st.PlanFrom))
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	f.plan, f.st.st = plan, st
	return nil
}

// start sets a new run up: the self-contained plan copy, the base commit,
// the target branch and the first state.
func (f *fleet) start(ctx context.Context) error {
	o, wt := f.o, f.wt
	planCopy := filepath.Join(o.Dir, "plan.yaml")
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
	return nil
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
	if a.Account == "" {
		a.Account = d.Account
	}
	return a
}

// emit records a fleet event in the audit log and tells the progress sink.
func (f *fleet) emit(kind EventKind, task, detail string, data map[string]any) {
	f.emitAt(f.clock.Now(), kind, task, detail, data)
}

// emitAt records an event that happened at t: the audit log, then the
// progress sink, then the executor's record (a network round trip comes
// last: a process killed in it has shown what it recorded).
func (f *fleet) emitAt(t time.Time, kind EventKind, task, detail string, data map[string]any) {
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
	ev := Event{Time: t, Kind: kind, Task: task, Detail: detail}
	f.evMu.Lock()
	if f.o.Progress != nil {
		ev.State = f.st.snapshot()
		f.o.Progress(ev)
	}
	f.evMu.Unlock()
	if r, ok := f.ex.(Recorder); ok {
		r.Emitted(ev)
	}
}

func (f *fleet) setTask(id string, fn func(t *TaskState)) {
	if err := f.st.update(func(st *State) { fn(st.Tasks[id]) }); err != nil {
		f.log.Error("saving fleet state", "err", err)
	}
}

// finish computes the run's outcome and saves it.
func (f *fleet) finish(ctx, runCtx context.Context) *State {
	code := exitcode.OK
	status := RunDone
	st := f.st.snapshot()
	rank := func(c exitcode.Code) int {
		switch c {
		case exitcode.Interrupted:
			return 5
		case exitcode.MergeConflict:
			return 4
		case exitcode.BudgetExceeded:
			return 3
		case exitcode.Parked: // try again later: below what needs a fix
			return 1
		case exitcode.OK:
			return 0
		}
		return 2
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
		case StatusParked:
			c = exitcode.Parked
		case StatusCanceled, StatusPending, StatusWaiting, StatusRunning, StatusAsking:
			// Not run, or still out there (on a worker) when the run stopped.
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
	switch {
	case ctx.Err() != nil || code == exitcode.Interrupted:
		code, status = exitcode.Interrupted, RunInterrupted
	case code == exitcode.Parked:
		status = RunParked
	case code != exitcode.OK:
		status = RunFailed
	}
	if code == exitcode.OK && f.st.err() == nil {
		f.cleanup(ctx, st)
	}
	_ = f.st.update(func(s *State) {
		s.Status, s.ExitCode, s.PID, s.Usage = status, int(code), 0, f.meter.Used()
	})
	if fin, ok := f.ex.(Finisher); ok {
		fin.Finished(ctx, f.st.snapshot())
	}
	f.emit(EventRunEnd, "", fmt.Sprintf("%s (exit %d)", status, code), map[string]any{"status": status, "exit_code": int(code)})
	// The log of a fleet run ends like a single run's, so audit verify
	// sees it complete.
	if err := f.o.Audit.Append(audit.KindRunEnd, "", map[string]any{"fleet": f.o.RunID, "status": status, "exit_code": int(code)}); err != nil {
		f.log.Error("audit", "err", err)
	}
	final := f.st.snapshot()
	return &final
}

// sameDir: a and b name one directory (through symlinks too).
func sameDir(a, b string) bool {
	if a == b {
		return true
	}
	ia, errA := os.Stat(a)
	ib, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(ia, ib)
}
