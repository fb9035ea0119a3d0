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
}

// RunTaskIn runs task id of plan in cwd with the rendered prompt, within
// limits (the coordinator's reservation), retrying as the task says. No
// answerer is reachable from here: a question ends the task blocked.
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
	f := &fleet{o: Options{RunID: o.RunID, Audit: o.Audit, Exe: o.Exe, Version: o.Version, CancelGrace: o.CancelGrace, Clock: o.Clock, Logger: o.Logger, Sandbox: o.Sandbox},
		plan: plan, memory: policy.NewMemory(policy.ScopeRun), clock: o.Clock, log: o.Logger, stop: func(error) {}}
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
	var out TaskOutcome
	for attempt := 1; ; attempt++ {
		if err := res.CanTurn(out.Usage); err != nil {
			out.Status, out.ExitCode, out.Reason = StatusBudget, int(exitcode.BudgetExceeded), err.Error()
			return out
		}
		r, u, err := f.turn(taskCtx, cancelTask, t, res, out.Usage, cwd, prompt, "", o.Attempt*100+attempt)
		out.Usage, out.Turns = out.Usage.add(u), out.Turns+1
		out.Message, out.SessionID, out.ExitCode = r.Message, r.SessionID, r.ExitCode
		if err == nil && r.ExitCode == 0 {
			break
		}
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
		if attempt <= t.Retries {
			continue
		}
		out.Status = StatusFailed
		return out
	}
	if q := strings.TrimSpace(out.Message); strings.HasSuffix(q, "?") {
		out.Status, out.ExitCode = StatusBlocked, int(exitcode.AgentError)
		out.Reason = "the agent asked a question, and a remote worker has no answerer to route it to: " + lastLine(q)
		return out
	}
	out.Status, out.ExitCode = StatusDone, 0
	return out
}
