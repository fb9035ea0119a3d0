package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/runner"
	"github.com/tai-dev/tai/worktree"
)

// errUnanswered is a question nobody could answer.
var errUnanswered = errors.New("nobody could answer it")

// CannotAnswer is what the answerer replies when it does not know.
const CannotAnswer = "CANNOT_ANSWER"

// answer routes a question: to the plan's answerer agent (with the plan's
// context and the task's diff), then to a human.
func (f *fleet) answer(ctx context.Context, t *Task, cwd string, h *worktree.Handle, q string) (string, string, Usage, error) {
	if f.ask != nil {
		return f.ask(ctx, q) // a remote task: its coordinator answers, by its own route
	}
	ans, spent, err := f.askAnswerer(ctx, t, cwd, h, q)
	switch {
	case err == nil:
		return ans, string(driver.ByAnswerer), spent, nil
	case !errors.Is(err, errUnanswered):
		return "", "", spent, err
	}
	if f.o.AskHuman != nil {
		ans, err := f.o.AskHuman(ctx, t.ID, q)
		if err == nil && strings.TrimSpace(ans) != "" {
			return strings.TrimSpace(ans), string(driver.ByHuman), spent, nil
		}
	}
	return "", "", spent, fmt.Errorf("%w (no answerer could, and no terminal to ask a human)", errUnanswered)
}

// askAnswerer asks the plan's answerer agent alone: errUnanswered when
// there is none or it could not answer.
func (f *fleet) askAnswerer(ctx context.Context, t *Task, cwd string, h *worktree.Handle, q string) (string, Usage, error) {
	var spent Usage
	if a := f.plan.Answerer; a != nil {
		diff := "(no worktree)"
		if f.patch != "" {
			diff = f.patch
		} else if h != nil {
			if p, err := f.wt.WorkDiff(ctx, cwd, h.Base, 16<<10); err == nil {
				diff = p
			}
		}
		var b strings.Builder
		if a.Prompt != "" {
			b.WriteString(a.Prompt + "\n\n")
		}
		fmt.Fprintf(&b, "You answer questions from agents working on a plan; they never talk to each other.\nPlan: %s\nGoal: %s\n\nTask %q (its prompt was:\n%s\n) asks:\n%s\n\nIts changes so far:\n%s\n\nAnswer the question directly. If you cannot answer it, reply exactly %s.",
			f.plan.Name, f.plan.Goal, t.ID, truncate(t.Prompt, 4000), q, diff, CannotAnswer)
		// The answerer reads; it never writes in the task's worktree.
		pol := f.plan.effectivePolicy(&Policy{Approve: "reads", NonInteractive: "deny", Deny: []string{"edit", "delete", "move", "execute"}})
		pol.AllowDenials = true
		opts, _, err := f.resolve(a.AgentSpec, pol, cwd, "task "+t.ID+"'s answerer")
		if err != nil {
			return "", spent, err
		}
		opts.Prompt = []driver.Content{driver.TextContent(b.String())}
		opts.Audit, opts.AuditTask = f.o.Audit, t.ID
		opts.RunID = fmt.Sprintf("%s/%s/answerer", f.o.RunID, t.ID)
		r, err := runner.Run(ctx, opts)
		spent.Turns, spent.Tokens = 1, tokensOf(r.Usage)
		if r.Usage != nil {
			spent.Cost = r.Usage.CostAmount
		}
		ans := strings.TrimSpace(r.Message)
		if err == nil && r.ExitCode == 0 && ans != "" && !strings.Contains(ans, CannotAnswer) {
			return ans, spent, nil
		}
		f.emit(EventAnswererPass, t.ID, "the answerer could not answer", map[string]any{"question": q, "exit_code": r.ExitCode})
	}
	return "", spent, errUnanswered
}
