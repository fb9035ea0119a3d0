package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/elicit"
	"github.com/tai-dev/tai/policy"
)

// elicitor is a task's elicitation chain: the plan's answerer agent, then
// the human — as a form (Options.ElicitHuman: the terminal and the feed's
// ELICIT) when the run has one, else as a question — then decline.
func (f *fleet) elicitor(t *Task, cwd string, spent *spend) driver.Elicitor {
	if f.o.ElicitHuman == nil {
		return &elicit.Chain{Links: []elicit.Link{{By: elicit.ByAnswerer, A: fleetAnswerer{f: f, t: t, cwd: cwd, spent: spent}}}}
	}
	return &elicit.Chain{Links: []elicit.Link{
		{By: elicit.ByAnswerer, A: fleetAnswerer{f: f, t: t, cwd: cwd, spent: spent, agentOnly: true}},
		{By: elicit.ByHuman, A: taskHuman{f: f, t: t}},
	}}
}

// taskHuman puts a task's elicitation to the run's human, tagged with the
// task (the feed's elicitation says it). Tasks ask at once; the terminal
// shows one at a time itself.
type taskHuman struct {
	f *fleet
	t *Task
}

func (h taskHuman) Answer(ctx context.Context, req driver.ElicitationRequest) (driver.ElicitationAnswer, error) {
	return h.f.o.ElicitHuman.Answer(policy.WithAsker(ctx, "task "+h.t.ID), req)
}

// spend adds up what the answerer spent on a turn's elicitations, for the
// task's budget.
type spend struct {
	mu sync.Mutex
	u  Usage
}

func (s *spend) add(u Usage) {
	s.mu.Lock()
	s.u = s.u.add(u)
	s.mu.Unlock()
}

func (s *spend) total() Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.u
}

// fleetAnswerer puts a form to the fleet's answerer as a question whose
// answer is a JSON object of the field values.
type fleetAnswerer struct {
	f     *fleet
	t     *Task
	cwd   string
	spent *spend
	// agentOnly: ask the answerer agent alone; a human is the next link.
	agentOnly bool
}

// Decline is what the answerer replies to refuse a form.
const Decline = "DECLINE"

func (a fleetAnswerer) Answer(ctx context.Context, req driver.ElicitationRequest) (driver.ElicitationAnswer, error) {
	if req.Mode != driver.ElicitForm || a.f.plan.Answerer == nil && (a.agentOnly || a.f.o.AskHuman == nil && a.f.ask == nil) {
		return driver.ElicitationAnswer{}, elicit.ErrPass // a URL needs a person at a browser
	}
	fields, _ := json.Marshal(req.Fields)
	q := fmt.Sprintf("%s\n\nFill in this form. Its fields (name, type, choices, bounds) are:\n%s\n\nReply with only a JSON object of the values by field name, or %s to refuse.",
		req.Message, fields, Decline)
	var ans, by string
	var used Usage
	var err error
	if a.agentOnly {
		ans, used, err = a.f.askAnswerer(ctx, a.t, a.cwd, nil, q)
		by = string(driver.ByAnswerer)
	} else {
		ans, by, used, err = a.f.answer(ctx, a.t, a.cwd, nil, q)
	}
	a.spent.add(used)
	if err != nil {
		return driver.ElicitationAnswer{}, elicit.ErrPass
	}
	if by == string(driver.ByHuman) {
		by = elicit.ByHuman
	}
	if strings.TrimSpace(ans) == Decline {
		return driver.ElicitationAnswer{Action: driver.ElicitDecline, DecidedBy: by, Reason: "the fleet's " + by + " declined"}, nil
	}
	i, j := strings.Index(ans, "{"), strings.LastIndex(ans, "}")
	if i < 0 || j < i {
		return driver.ElicitationAnswer{}, fmt.Errorf("the %s's reply holds no JSON object", by)
	}
	var content map[string]any
	if err := json.Unmarshal([]byte(ans[i:j+1]), &content); err != nil {
		return driver.ElicitationAnswer{}, fmt.Errorf("the %s's reply: %w", by, err)
	}
	return driver.ElicitationAnswer{Action: driver.ElicitAccept, Content: content, DecidedBy: by, Reason: "answered by the fleet's " + by}, nil
}
