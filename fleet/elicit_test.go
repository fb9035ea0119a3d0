package fleet

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/policy"
)

// formHuman is the run's human for forms: it records who each form was
// for and fills it in.
type formHuman struct {
	mu    sync.Mutex
	tasks []string
}

func (h *formHuman) Answer(ctx context.Context, req driver.ElicitationRequest) (driver.ElicitationAnswer, error) {
	h.mu.Lock()
	h.tasks = append(h.tasks, policy.AskerOf(ctx))
	h.mu.Unlock()
	return driver.ElicitationAnswer{Action: driver.ElicitAccept, Content: map[string]any{"colour": "red"}, Via: string(ask.ViaFeed)}, nil
}

// A form the answerer cannot fill in goes to the human as a form (the
// feed's ELICIT), tagged with its task, never as a question; one the
// answerer fills in never reaches the human. With no answerer, the human
// is asked at once.
func TestFleetElicitationEscalatesAsAForm(t *testing.T) {
	form := `steps:
  - elicit_form:
      message: "Which colour?"
      schema:
        properties:
          colour: {type: string, enum: [red, blue]}
        required: [colour]
  - text: "done"
`
	for _, tc := range []struct {
		name, answerer string // the answerer's script; "" = no answerer
		asked          string // who the human was asked for
		audit          string
	}{
		{"the answerer cannot", "steps:\n  - text: \"CANNOT_ANSWER\"\n", "task form", `"content":{"colour":"red"},"decided_by":"human","via":"feed"`},
		{"no answerer", "", "task form", `"content":{"colour":"red"},"decided_by":"human","via":"feed"`},
		{"the answerer can", "steps:\n  - text: \"{\\\"colour\\\": \\\"blue\\\"}\"\n", "", `"content":{"colour":"blue"},"decided_by":"answerer"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, pd := gitRepo(t), t.TempDir()
			plan := "policy: {approve: all}\ntasks:\n  - {id: form, script: form.yaml, prompt: go}\n"
			files := map[string]string{"form.yaml": form}
			if tc.answerer != "" {
				plan = "answerer: {script: answerer.yaml}\n" + plan
				files["answerer.yaml"] = tc.answerer
			}
			files["plan.yaml"] = plan
			fixture(t, pd, files)
			h := &formHuman{}
			questions := 0
			out := runPlan(t, repo, pd, func(o *Options) {
				o.ElicitHuman = h
				o.AskHuman = func(context.Context, string, string) (string, error) { questions++; return "red", nil }
			})
			if got := strings.Join(h.tasks, ","); got != tc.asked {
				t.Errorf("the human was asked for %q, want %q", got, tc.asked)
			}
			if questions != 0 {
				t.Errorf("the form went to the human as a question (%d)", questions)
			}
			if !strings.Contains(out.audit, tc.audit) {
				t.Errorf("the audit log lacks %s:\n%s", tc.audit, out.audit)
			}
			if s := out.st.Tasks["form"].Status; s != StatusMerged && s != StatusDone {
				t.Errorf("task status %s", s)
			}
		})
	}
}

// barrierHuman answers a form only once n are waiting on it at once.
type barrierHuman struct {
	n       int
	mu      sync.Mutex
	waiting int
	all     chan struct{}
}

func (h *barrierHuman) Answer(ctx context.Context, req driver.ElicitationRequest) (driver.ElicitationAnswer, error) {
	h.mu.Lock()
	if h.waiting++; h.waiting == h.n {
		close(h.all)
	}
	h.mu.Unlock()
	select {
	case <-h.all:
		return driver.ElicitationAnswer{Action: driver.ElicitAccept, Content: map[string]any{"colour": "red"}, Via: string(ask.ViaFeed)}, nil
	case <-ctx.Done():
		return driver.ElicitationAnswer{}, ctx.Err()
	case <-time.After(time.Minute): // only guards a hang: a form waiting behind another
		return driver.ElicitationAnswer{}, errors.New("the other tasks' forms never came")
	}
}

// A fleet's tasks put their forms to the human at once (tai top lists
// them all, each answered on its own), not one behind the other.
func TestFleetTasksAskAtOnce(t *testing.T) {
	form := "steps:\n  - elicit_form:\n      message: \"Which colour?\"\n      schema:\n        properties:\n          colour: {type: string}\n  - text: \"done\"\n"
	repo, pd := gitRepo(t), t.TempDir()
	fixture(t, pd, map[string]string{"form.yaml": form,
		// policy approve: all: only the forms wait for the human.
		"plan.yaml": "policy: {approve: all}\nconcurrency: 3\ntasks:\n  - {id: a, script: form.yaml, prompt: go}\n  - {id: b, script: form.yaml, prompt: go}\n  - {id: c, script: form.yaml, prompt: go}\n"})
	h := &barrierHuman{n: 3, all: make(chan struct{})}
	out := runPlan(t, repo, pd, func(o *Options) { o.ElicitHuman = h })
	if n := strings.Count(out.audit, `"content":{"colour":"red"},"decided_by":"human"`); n != 3 {
		t.Fatalf("%d forms answered by the human at once, want 3:\n%s", n, out.audit)
	}
}
