package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/e2e/internal/build"
	"github.com/tai-dev/tai/feed"
)

// A fleet task's form that the plan's answerer cannot fill in goes to the
// human as a form: at the fleet's terminal and on its feed as an
// elicitation tagged with the task (tai top's ELICIT), not a question. A
// feed client answers it; the agent gets the values and the audit log
// says human via feed.
func TestFeedAnswersAFleetTasksElicitation(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	for _, a := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "T"},
		{"commit", "-q", "--allow-empty", "-m", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, a...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", a, err, out)
		}
	}
	pd := t.TempDir()
	// policy approve: all: only the elicitation should wait for an answer.
	for name, body := range map[string]string{
		"plan.yaml":     "policy: {approve: all}\nanswerer: {script: answerer.yaml}\ntasks:\n  - {id: paint, script: form.yaml, prompt: go}\n",
		"answerer.yaml": "steps:\n  - text: \"CANNOT_ANSWER\"\n",
		"form.yaml": `steps:
  - elicit_form:
      message: "Which colour should I paint it?"
      schema:
        properties:
          colour: {type: string, enum: [red, blue]}
          coats: {type: integer, minimum: 1}
        required: [colour]
  - text: "Painted."
`} {
		if err := os.WriteFile(filepath.Join(pd, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rt, err := os.MkdirTemp("", "rt") // short: a socket path has 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(rt)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, taiBin, "fleet", "run", "-C", repo, "--no-notify", "-o", "json", filepath.Join(pd, "plan.yaml"))
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+stateDir, "XDG_RUNTIME_DIR="+rt, "NO_COLOR=1")
	var stdout build.Buffer
	cmd.Stdout = &stdout
	p := startOnPTY(t, cmd, rt)
	screen, copied, ep := p.screen, p.copied, p.ep
	c := feed.Dial(ep.Path)
	defer c.Close()
	var el feed.Elicitation
	if _, err := c.Events(ctx, 0, func(ev feed.Event) error {
		var f feed.ElicitFrame
		if json.Unmarshal(ev.Data, &f) == nil && f.Type == feed.FrameElicitOpened {
			el = f.Elicitation
			return errStop
		}
		return nil
	}); !errors.Is(err, errStop) {
		t.Fatalf("waiting for the elicitation: %v\n%s", err, screen.String())
	}
	if el.Task != "paint" || el.Request.Mode != "form" || !strings.Contains(el.Request.Message, "colour") {
		t.Fatalf("the feed's elicitation: %+v", el)
	}
	if st, err := c.State(ctx); err != nil || len(st.Questions) != 0 || len(st.Elicitations) != 1 {
		t.Fatalf("the feed's state: questions %+v, elicitations %+v (%v)", st.Questions, st.Elicitations, err)
	}
	if err := c.AnswerElicitation(ctx, el.ID, "accept", map[string]any{"colour": "blue", "coats": 2}, "feed"); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("tai fleet run: %v\n%s", err, screen.String())
	}
	<-copied
	if !strings.Contains(screen.String(), "answered via feed: accept") {
		t.Errorf("the terminal did not say the form was answered elsewhere:\n%s", screen.String())
	}
	var sum struct {
		Audit string `json:"audit"`
	}
	if err := json.Unmarshal([]byte(stdout.String()), &sum); err != nil || sum.Audit == "" {
		t.Fatalf("summary: %v\n%s", err, stdout.String())
	}
	log, err := os.ReadFile(sum.Audit)
	if err != nil {
		t.Fatal(err)
	}
	var answers []string
	for _, l := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		var e struct {
			Kind string
			Data struct {
				Content   map[string]any
				DecidedBy string `json:"decided_by"`
				Via       string
			}
		}
		if json.Unmarshal([]byte(l), &e) == nil && e.Kind == "elicitation.answer" {
			answers = append(answers, e.Data.DecidedBy+" via "+e.Data.Via+" "+e.Data.Content["colour"].(string))
		}
	}
	if strings.Join(answers, ", ") != "human via feed blue" {
		t.Fatalf("the audit log's elicitation answers: %v", answers)
	}
	if !strings.Contains(stdout.String(), `colour=\"blue\"`) { // the task's last message, in the summary
		t.Errorf("the agent did not get the values:\n%s", stdout.String())
	}
}
