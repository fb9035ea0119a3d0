package fleet

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/agentspec"
	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/quota"
	"github.com/tai-dev/tai/runner"
)

// TaskRunOptions configure RunTaskIn: one task run outside a local fleet
// (by a remote worker), with the same agent, policy and budget logic.
type TaskRunOptions struct {
	RunID       string
	Attempt     int // the lease's attempt number, recorded in run ids
	Audit       *audit.Log
	Exe         string // the tai binary for the built-in agent; default os.Executable
	Version     string
	CancelGrace time.Duration
	Clock       quartz.Clock
	Logger      *slog.Logger
	// Sandbox confines the task's agent, as Options.Sandbox.
	Sandbox *agentspec.Sandbox
	// Ask routes a question the agent asks (a turn ending in one, or a
	// form) to the run's coordinator, which answers it as a local fleet
	// does (the plan's answerer, then a human) and says who answered.
	// nil: a question ends the task blocked.
	Ask func(ctx context.Context, question string) (answer, decidedBy string, spent Usage, err error)
	// Prompter decides the permission asks policy sends to a human (the
	// coordinator's terminal or feed); nil: the non-interactive rule.
	Prompter policy.Prompter
	// TaskSink, if set, gets the task's session events (as
	// Options.TaskSink's does).
	TaskSink driver.Sink
	// Resume is the session of a parked attempt this one continues (its
	// first turn sends runner.ContinuePrompt there); Full is the prompt of
	// a new session when that session is gone (runner.ResumePrompt: the task and
	// what was done so far).
	Resume, Full string
	// Park is closed when the task's account parks (the coordinator's
	// word): the turn running stops, and the attempt ends parked.
	Park <-chan struct{}
	// ParkWhy is the coordinator's word on why it parked (the withdrawn
	// asks say it); "" or nil: its account parked.
	ParkWhy func() string
}

// TaskOutcome is what a task run by RunTaskIn ended with.
type TaskOutcome struct {
	Status    TaskStatus `json:"status"` // done | failed | budget | blocked | cancelled
	ExitCode  int        `json:"exit_code"`
	Reason    string     `json:"reason,omitempty"`
	Message   string     `json:"message,omitempty"`
	SessionID string     `json:"session_id,omitempty"`
	Usage     Usage      `json:"usage"`
	Turns     int        `json:"turns"`
	Questions []QA       `json:"questions,omitempty"` // what it asked and the answers it got
	// Park says where a parked attempt (Status parked) stopped: the
	// limit it hit (none: stopped because its account parked), its
	// account, and the session it resumes.
	Park *OutcomePark `json:"park,omitempty"`
}

// OutcomePark is a remote attempt's park: what the coordinator parks the
// task's account on, and the session the task resumes.
type OutcomePark struct {
	Limit     *quota.Limit  `json:"limit,omitempty"`
	Account   quota.Account `json:"account"`
	Session   string        `json:"session,omitempty"`
	Resumable bool          `json:"resumable,omitempty"`
	// Started: the agent had a session (a turn ran, or it resumed one):
	// there is work to resume. Not: it parked before its first turn.
	Started bool `json:"started,omitempty"`
}

// RunTaskIn runs task id of plan in cwd with the rendered prompt, within
// limits (the coordinator's reservation), retrying as the task says. Its
// questions go to o.Ask, and the agent goes on with the answers, as in a
// local fleet (the same session when the agent can resume it).
func RunTaskIn(ctx context.Context, plan *Plan, id, cwd, prompt string, limits Limits, o TaskRunOptions) TaskOutcome {
	t := plan.Task(id)
	if t == nil {
		return TaskOutcome{Status: StatusFailed, ExitCode: int(exitcode.Usage), Reason: fmt.Sprintf("no task %q in the plan", id)}
	}
	if o.Clock == nil {
		o.Clock = quartz.NewReal()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	f := remoteFleet(plan, o)
	// The coordinator reserved the budget; this meter holds the task to it.
	res, err := NewMeter(limits, 1, Usage{}, nil).Reserve(ctx, id, limits)
	if err != nil {
		return TaskOutcome{Status: StatusRefused, ExitCode: int(exitcode.BudgetExceeded), Reason: err.Error()}
	}
	defer res.Release(Usage{})
	taskCtx, cancelTask := context.WithCancelCause(ctx)
	defer cancelTask(nil)
	defer taskWall(o.Clock, time.Duration(limits.WallTime), id, cancelTask).stop()
	r := &remoteRun{f: f, t: t, res: res, cwd: cwd, prompt: prompt, attempt: o.Attempt, acct: f.account(f.accountKey(t.AgentSpec)), park: o.Park, parkWhy: o.ParkWhy}
	n := next{prompt: prompt}
	if o.Resume != "" {
		n = next{prompt: runner.ContinuePrompt, resume: o.Resume, full: cmp.Or(o.Full, prompt)}
	}
	return r.turns(ctx, taskCtx, cancelTask, n)
}

// remoteFleet is the fleet a remote task runs in: just this task's plan,
// policy and answerer, no local state.
func remoteFleet(plan *Plan, o TaskRunOptions) *fleet {
	f := &fleet{o: Options{RunID: o.RunID, Audit: o.Audit, Exe: o.Exe, Version: o.Version, CancelGrace: o.CancelGrace, Clock: o.Clock, Logger: o.Logger,
		Sandbox: o.Sandbox, Prompter: o.Prompter},
		plan: plan, memory: policy.NewMemory(policy.ScopeRun), clock: o.Clock, log: o.Logger, stop: func(error) {}, parks: newParks()}
	if o.TaskSink != nil {
		f.o.TaskSink = func(string) driver.Sink { return o.TaskSink }
	}
	if o.Ask != nil {
		f.ask = func(ctx context.Context, q string) (string, string, Usage, error) { return o.Ask(ctx, q) }
	}
	return f
}

// remoteRun is one attempt of a task on a remote worker: the local
// taskRun's turns, with its state kept in the outcome (the coordinator
// records it) rather than in fleet state.
type remoteRun struct {
	f       *fleet
	t       *Task
	res     *Reservation
	cwd     string
	prompt  string
	attempt int // the lease's: turn run ids are attempt*100+turn
	acct    quota.Account
	park    <-chan struct{} // closed when the account parks
	parkWhy func() string   // why, as the coordinator said it
	out     TaskOutcome
}

// turns runs turns until the agent is done, as taskRun.turns does.
func (r *remoteRun) turns(ctx, taskCtx context.Context, cancelTask context.CancelCauseFunc, n next) TaskOutcome {
	out := &r.out
	for turn := 1; ; turn++ {
		if err := r.res.CanTurn(out.Usage); err != nil {
			return r.end(&taskEnd{StatusBudget, exitcode.BudgetExceeded, err.Error()})
		}
		// The turn stops when the account parks; one that would start
		// parked does not start.
		turnCtx, cancelTurn := context.WithCancelCause(taskCtx)
		stop := r.onPark(cancelTurn)
		var res runner.Result
		var err error
		if turnCtx.Err() == nil {
			var u Usage
			res, u, err = r.f.turn(turnCtx, cancelTask, r.t, r.res, out.Usage, r.cwd, n.prompt, n.resume, r.attempt*100+turn)
			out.Usage, out.Turns = out.Usage.add(u), out.Turns+1
			out.Message, out.SessionID, out.ExitCode = res.Message, res.SessionID, res.ExitCode
		}
		stop()
		l, parked := parkedBy(turnCtx, res, err, r.f.clock.Now())
		cancelTurn(nil)
		var e *taskEnd
		if parked && taskCtx.Err() == nil {
			// At a limit the attempt ends parked: the coordinator parks
			// its account and offers it again at the reset.
			return r.parked(res, l, n)
		}
		if err != nil || res.ExitCode != 0 {
			n, e = r.failed(ctx, taskCtx, res, err, n, turn)
		} else if q := strings.TrimSpace(out.Message); strings.HasSuffix(q, "?") {
			n, e = r.asked(ctx, taskCtx, res, q)
		} else {
			return r.end(&taskEnd{StatusDone, 0, out.Reason})
		}
		if e != nil {
			return r.end(e)
		}
	}
}

// failed decides what follows a failed turn: the task's end, or the next
// try. The failure's reason stays in the outcome even if a retry succeeds.
func (r *remoteRun) failed(ctx, taskCtx context.Context, res runner.Result, err error, n next, turn int) (next, *taskEnd) {
	out := &r.out
	out.Reason = res.Error
	if out.Reason == "" && err != nil {
		out.Reason = err.Error()
	}
	if out.ExitCode == 0 {
		out.ExitCode = int(exitcode.Of(err))
	}
	if e := interrupted(ctx, taskCtx); e != nil {
		return n, e
	}
	switch {
	case n.resume != "" && exitcode.Code(out.ExitCode) == exitcode.NoSession:
		return next{prompt: n.full, full: n.full}, nil // the session is gone: the answer goes into a new one
	case turn <= r.t.Retries:
		return next{prompt: r.prompt, full: n.full}, nil
	}
	return n, &taskEnd{StatusFailed, exitcode.Code(out.ExitCode), out.Reason}
}

// asked sends the agent's question to the coordinator (o.Ask) and makes
// the answer the next turn.
func (r *remoteRun) asked(ctx, taskCtx context.Context, res runner.Result, q string) (next, *taskEnd) {
	out := &r.out
	if r.f.ask == nil {
		return next{}, &taskEnd{StatusBlocked, exitcode.AgentError, "the agent asked a question, and a remote worker has no answerer to route it to: " + lastLine(q)}
	}
	if maxQ := maxQuestions(r.f.plan); len(out.Questions) >= maxQ {
		return next{}, &taskEnd{StatusBlocked, exitcode.AgentError, fmt.Sprintf("still asking after %d answered question(s): %s", maxQ, lastLine(q))}
	}
	ans, by, spent, err := r.f.answer(taskCtx, r.t, r.cwd, nil, q)
	out.Usage = out.Usage.add(spent)
	if err != nil {
		e := &taskEnd{StatusBlocked, exitcode.AgentError, fmt.Sprintf("the agent asked %q and %v", lastLine(q), err)}
		if ctx.Err() != nil {
			e.status, e.code = StatusCanceled, exitcode.Interrupted
		}
		return next{}, e
	}
	out.Questions = append(out.Questions, QA{Question: q, Answer: ans, DecidedBy: by})
	return answerNext(r.prompt, q, by, ans, res), nil
}

// onPark cancels the turn (cancel) when the account parks, until the
// returned func is called.
func (r *remoteRun) onPark(cancel context.CancelCauseFunc) func() {
	if r.park == nil {
		return func() {}
	}
	why := func() error {
		if r.parkWhy != nil {
			if w := r.parkWhy(); w != "" {
				return &parkCause{w}
			}
		}
		return &parkCause{"its account " + r.acct.Agent + ":" + r.acct.ID + " parked"}
	}
	select {
	case <-r.park:
		cancel(why())
		return func() {}
	default:
	}
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-r.park:
			cancel(why())
		case <-done:
		}
	}()
	return func() { close(done); <-exited }
}

// parked ends an attempt at a usage limit: its outcome names the limit,
// the account and the session to resume.
func (r *remoteRun) parked(res runner.Result, l *quota.Limit, n next) TaskOutcome {
	p := &OutcomePark{Limit: l, Account: r.acct, Session: res.SessionID, Resumable: res.Resumable && res.SessionID != "",
		Started: res.SessionID != "" || n.resume != ""}
	if p.Session == "" && n.resume != "" {
		p.Session, p.Resumable = n.resume, true // it ended before the agent named the session it resumed
	}
	if !p.Resumable {
		p.Session = ""
	}
	r.out.Park = p
	reason := "its account " + r.acct.Agent + ":" + r.acct.ID + " is at a usage limit"
	if l != nil && l.Message != "" {
		reason += ": " + l.Message
	}
	return r.end(&taskEnd{StatusParked, exitcode.Parked, reason})
}

// end puts how the attempt ended in its outcome.
func (r *remoteRun) end(e *taskEnd) TaskOutcome {
	r.out.Status, r.out.ExitCode, r.out.Reason = e.status, int(e.code), e.reason
	return r.out
}

// AnswerOptions configure Answer.
type AnswerOptions struct {
	RunID    string
	Audit    *audit.Log // required
	AskHuman func(ctx context.Context, task, question string) (string, error)
	Exe      string
	Version  string
	Clock    quartz.Clock
	Logger   *slog.Logger
	Sandbox  *agentspec.Sandbox
}

// Answer answers a question task id of plan asked elsewhere (on a remote
// worker) as a local fleet would: the plan's answerer agent, run in cwd
// with patch as the task's changes so far, then o.AskHuman. It returns
// the answer, who gave it, and what the answerer spent.
func Answer(ctx context.Context, plan *Plan, id, cwd, question, patch string, o AnswerOptions) (string, string, Usage, error) {
	t := plan.Task(id)
	if t == nil {
		return "", "", Usage{}, fmt.Errorf("no task %q in the plan", id)
	}
	if o.Clock == nil {
		o.Clock = quartz.NewReal()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	f := &fleet{o: Options{RunID: o.RunID, Audit: o.Audit, AskHuman: o.AskHuman, Exe: o.Exe, Version: o.Version, Clock: o.Clock, Logger: o.Logger, Sandbox: o.Sandbox},
		plan: plan, memory: policy.NewMemory(policy.ScopeRun), clock: o.Clock, log: o.Logger, stop: func(error) {}, patch: patch}
	return f.answer(ctx, t, cwd, nil, question)
}
