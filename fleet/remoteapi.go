package fleet

import (
	"context"
	"errors"
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
	f := &fleet{o: Options{RunID: o.RunID, Audit: o.Audit, Exe: o.Exe, Version: o.Version, CancelGrace: o.CancelGrace, Clock: o.Clock, Logger: o.Logger,
		Sandbox: o.Sandbox, Prompter: o.Prompter},
		plan: plan, memory: policy.NewMemory(policy.ScopeRun), clock: o.Clock, log: o.Logger, stop: func(error) {}}
	if o.TaskSink != nil {
		f.o.TaskSink = func(string) driver.Sink { return o.TaskSink }
	}
	if o.Ask != nil {
		f.ask = func(ctx context.Context, q string) (string, string, Usage, error) { return o.Ask(ctx, q) }
	}
	meter := NewMeter(limits, 1, Usage{}, nil)
	res, err := meter.Reserve(ctx, id, limits)
	if err != nil {
		return TaskOutcome{Status: StatusRefused, ExitCode: int(exitcode.BudgetExceeded), Reason: err.Error()}
	}
	defer res.Release(Usage{})
	taskCtx, cancelTask := context.WithCancelCause(ctx)
	defer cancelTask(nil)
	if wall := time.Duration(limits.WallTime); wall > 0 {
		tm := o.Clock.AfterFunc(wall, func() {
			cancelTask(exitcode.With(exitcode.BudgetExceeded, fmt.Errorf("%w: task %s ran for its wall time of %s", ErrBudget, id, wall)))
		}, "fleet", "task-wall")
		defer tm.Stop()
	}
	maxQ := plan.MaxQuestions
	if maxQ == 0 {
		maxQ = 3
	}
	var out TaskOutcome
	next, resume, full := prompt, "", ""
	for turn := 1; ; turn++ {
		if err := res.CanTurn(out.Usage); err != nil {
			out.Status, out.ExitCode, out.Reason = StatusBudget, int(exitcode.BudgetExceeded), err.Error()
			return out
		}
		r, u, err := f.turn(taskCtx, cancelTask, t, res, out.Usage, cwd, next, resume, o.Attempt*100+turn)
		out.Usage, out.Turns = out.Usage.add(u), out.Turns+1
		out.Message, out.SessionID, out.ExitCode = r.Message, r.SessionID, r.ExitCode
		if err != nil || r.ExitCode != 0 {
			out.Reason = r.Error
			if out.Reason == "" && err != nil {
				out.Reason = err.Error()
			}
			if out.ExitCode == 0 {
				out.ExitCode = int(exitcode.Of(err))
			}
			switch cause := context.Cause(taskCtx); {
			case cause != nil && errors.Is(cause, ErrBudget):
				out.Status, out.ExitCode, out.Reason = StatusBudget, int(exitcode.BudgetExceeded), cause.Error()
				return out
			case ctx.Err() != nil:
				out.Status, out.ExitCode, out.Reason = StatusCanceled, int(exitcode.Interrupted), causeText(ctx)
				return out
			}
			if resume != "" && exitcode.Code(out.ExitCode) == exitcode.NoSession {
				next, resume = full, "" // the session is gone: the answer goes into a new one
				continue
			}
			if turn <= t.Retries {
				next, resume = prompt, ""
				continue
			}
			out.Status = StatusFailed
			return out
		}
		q := strings.TrimSpace(out.Message)
		if !strings.HasSuffix(q, "?") {
			break
		}
		if f.ask == nil {
			out.Status, out.ExitCode = StatusBlocked, int(exitcode.AgentError)
			out.Reason = "the agent asked a question, and a remote worker has no answerer to route it to: " + lastLine(q)
			return out
		}
		if len(out.Questions) >= maxQ {
			out.Status, out.ExitCode = StatusBlocked, int(exitcode.AgentError)
			out.Reason = fmt.Sprintf("still asking after %d answered question(s): %s", maxQ, lastLine(q))
			return out
		}
		ans, by, spent, err := f.answer(taskCtx, t, cwd, nil, q)
		out.Usage = out.Usage.add(spent)
		if err != nil {
			out.Status, out.ExitCode = StatusBlocked, int(exitcode.AgentError)
			if ctx.Err() != nil {
				out.Status, out.ExitCode = StatusCanceled, int(exitcode.Interrupted)
			}
			out.Reason = fmt.Sprintf("the agent asked %q and %v", lastLine(q), err)
			return out
		}
		out.Questions = append(out.Questions, QA{Question: q, Answer: ans, DecidedBy: by})
		full = fmt.Sprintf("%s\n\n---\nYou asked:\n%s\n\nAnswer (from the %s):\n%s\n\nContinue the task with this answer.", prompt, q, by, ans)
		next, resume = full, ""
		if r.Resumable && r.SessionID != "" {
			next, resume = fmt.Sprintf("Answer (from the %s):\n%s\n\nContinue the task with this answer.", by, ans), r.SessionID
		}
	}
	out.Status, out.ExitCode = StatusDone, 0
	return out
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
