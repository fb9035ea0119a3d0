package fleet

import (
	"context"
	"strings"
	"sync"
	"testing"

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
