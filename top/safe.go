package top

import (
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/feed"
	"github.com/tai-dev/tai/internal/safetext"
	"github.com/tai-dev/tai/render"
)

// Every string in a run's state may be an agent's. Frame and Peek show
// safeRuns and safeItem of what they are given, never the state itself:
// the model keeps the state as it came (its ids answer the asks).

func safeRuns(runs []feed.State) []feed.State {
	out := make([]feed.State, len(runs))
	for i, r := range runs {
		out[i] = safeRun(r)
	}
	return out
}

func safeRun(r feed.State) feed.State {
	l := safetext.Line
	r.Run = l(r.Run)
	r.Sessions = mapped(r.Sessions, func(s feed.Session) feed.Session {
		s.Task, s.Agent, s.Driver, s.Model, s.Cwd = l(s.Task), l(s.Agent), l(s.Driver), l(s.Model), l(s.Cwd)
		s.State, s.Activity, s.Currency, s.Error = feed.SessionState(l(string(s.State))), l(s.Activity), l(s.Currency), l(s.Error)
		return s
	})
	r.Tasks = mapped(r.Tasks, func(t feed.Task) feed.Task {
		t.ID, t.Agent, t.Status, t.Detail, t.Branch, t.Account = l(t.ID), l(t.Agent), l(t.Status), l(t.Detail), l(t.Branch), l(t.Account)
		return t
	})
	r.Asks = mapped(r.Asks, safeAsk)
	r.Questions = mapped(r.Questions, func(q feed.Question) feed.Question {
		q.Task, q.Text = l(q.Task), safetext.Text(q.Text)
		return q
	})
	r.Elicitations = mapped(r.Elicitations, safeElicitation)
	return r
}

// safeAsk keeps the request's raw input as it is: the command shown is
// read from it, and quoted, by render.ShownCommand.
func safeAsk(a feed.Ask) feed.Ask {
	l := safetext.Line
	a.Task, a.DecidedBy, a.Why = l(a.Task), l(a.DecidedBy), l(a.Why)
	a.Request.ToolCall = render.SafeToolCall(a.Request.ToolCall)
	a.Request.Options = mapped(a.Request.Options, func(o driver.PermissionOption) driver.PermissionOption {
		o.Name, o.Kind = l(o.Name), l(o.Kind)
		return o
	})
	return a
}

func safeElicitation(e feed.Elicitation) feed.Elicitation {
	e.Task = safetext.Line(e.Task)
	e.Request = render.SafeElicitation(e.Request)
	return e
}

// safeItem is it as Peek shows it.
func safeItem(it Item) Item {
	it.Run, it.Task, it.Title, it.Agent, it.Cwd = safetext.Line(it.Run), safetext.Line(it.Task), safetext.Line(it.Title), safetext.Line(it.Agent), safetext.Line(it.Cwd)
	if it.Ask != nil {
		a := safeAsk(*it.Ask)
		it.Ask = &a
	}
	if it.Question != nil {
		q := *it.Question
		q.Text = safetext.Text(q.Text)
		it.Question = &q
	}
	if it.Elicit != nil {
		e := safeElicitation(*it.Elicit)
		it.Elicit = &e
	}
	return it
}

func mapped[T any](xs []T, f func(T) T) []T {
	if xs == nil {
		return nil
	}
	out := make([]T, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}
