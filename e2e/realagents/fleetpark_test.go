package realagents

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/e2e/internal/auditlog"
)

// A fleet of two claude-agent-acp tasks on one account (the same API key)
// meets the account's limit: the model's first turn is refused with a 429
// that says the limit clears in 3 seconds. The account parks (its running
// task handed back parked, the other parked or held), and at the reset
// each task resumes its own session (the adapter's session/resume or
// session/load) with the continue prompt, or, where the agent lost it, a
// new session is told the task and what was done; each finishes. Nothing runs
// twice: each task's prompt is sent once, and all of a task's prompts go
// to one session. Default sandbox, the suite's user-like HOME, the
// preset's own package; CLAUDE_CODE_MAX_RETRIES=0 so that the CLI does
// not back off for minutes first.
func TestRealAgentFleetParksAndResumes(t *testing.T) {
	need(t)
	var a agent
	for _, x := range agents {
		if x.name == "claude" {
			a = x
		}
	}
	exe, _ := a.installed(t)
	const run, done = "realpark", "Finished after the reset."
	script := filepath.Join(t.TempDir(), "limit.json")
	writeFile(t, script, `{"limit": {"times": 1, "tooled": true, "retry_after": 3, "message": "Usage limit reached; try again in 3 seconds."}, "turns": [{"text": "`+done+`"}], "default": {"text": "`+done+`"}}`)
	w := newWorld(t, a, exe, "limit", script)
	w.env = append(w.env, "CLAUDE_CODE_MAX_RETRIES=0")
	plan := filepath.Join(w.dir, "plan.yaml")
	// stagger 1ms: the default 10 s between resumes would only slow the
	// test.
	writeFile(t, plan, fmt.Sprintf(`name: realpark
concurrency: 2
quota: {stagger: 1ms}
tasks:
  - {id: one, agent: claude, agent_cmd: %q, prompt: "Task one: say hello."}
  - {id: two, agent: claude, agent_cmd: %q, prompt: "Task two: say hello."}
`, a.command(t, exe), a.command(t, exe)))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, taiBin, "fleet", "run", "--run-id", run, "-C", w.repo, "-o", "json", plan)
	cmd.Dir, cmd.Env = w.repo, w.env
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("tai fleet run: %v\n%s\n%s", err, out, tail(string(stderr), 3000))
	}
	var sum struct {
		Tasks []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(out, &sum); err != nil {
		t.Fatalf("summary: %v\n%s", err, out)
	}
	for _, task := range sum.Tasks {
		if task.Status != "done" && task.Status != "merged" {
			t.Errorf("task %s ended %s", task.ID, task.Status)
		}
	}
	w.audit = filepath.Join(w.home, ".local", "state", "tai", "fleet", run, "audit.jsonl")
	entries := auditlog.Read(t, w.audit)
	var accountParks, accountReleases int
	resumed := map[string]string{}
	// lost: the agent could not take the session back (the CLI had saved
	// nothing of a turn the park cancelled before its first request).
	lost := map[string]bool{}
	for _, e := range entries {
		if e.Kind != audit.KindFleet {
			continue
		}
		var ev struct {
			Event, Task, Detail string
			Resumable           bool `json:"resumable"`
		}
		if err := json.Unmarshal(e.Data, &ev); err != nil {
			t.Fatal(err)
		}
		switch {
		case ev.Event == "parked" && ev.Task == "":
			accountParks++
		case ev.Event == "resumed" && ev.Task == "":
			accountReleases++
		case ev.Event == "resumed":
			resumed[ev.Task] = ev.Detail
		case ev.Event == "retry" && strings.Contains(ev.Detail, "could not be resumed"):
			lost[ev.Task] = true
		}
	}
	if accountParks == 0 || accountReleases == 0 || len(resumed) == 0 {
		t.Fatalf("account parked %d, released %d times, tasks resumed %v; want the account parked and released, its task resumed", accountParks, accountReleases, resumed)
	}
	// Every prompt of a task went to one session, and its own prompt once;
	// or, where the session was lost, a second session was told the task
	// and what was done.
	sessions, own, last := map[string]map[string]bool{}, map[string]int{}, map[string]string{}
	for _, e := range entries {
		if e.Kind != audit.KindPrompt || e.Task == "" {
			continue
		}
		if sessions[e.Task] == nil {
			sessions[e.Task] = map[string]bool{}
		}
		sessions[e.Task][e.Session] = true
		if strings.Contains(string(e.Data), "Task "+e.Task+": say hello.") {
			own[e.Task]++
		}
		last[e.Task] = string(e.Data)
	}
	for task, how := range resumed {
		switch {
		case lost[task]:
			// Its first prompt may not have gone out before the park.
			if len(sessions[task]) > 2 || !strings.Contains(last[task], "A usage limit stopped an earlier session") {
				t.Errorf("%s (resumed %s, its session lost): sessions %v, last told %s", task, how, sessions[task], last[task])
			}
		case len(sessions[task]) != 1 || own[task] != 1:
			t.Errorf("%s (resumed %s): sessions %v, its prompt sent %d times", task, how, sessions[task], own[task])
		}
	}
	w.checkNoLeftovers()
	t.Logf("resumed: %v", resumed)
}
