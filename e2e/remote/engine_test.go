package remote_test

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/e2e/internal/auditlog"
)

// A fleet over NATS runs on fleet's one engine, as a local fleet does: at
// most the plan's concurrency of tasks are out at once (the coordinator
// offered every task at once before), and a task whose budget can never
// fit in the fleet's is refused with the budget record a local fleet's
// audit log has (the coordinator logged only "refused"). Real tai, its
// default sandbox, a user-like HOME, no --dir.
func TestFleetOverNATSRunsOnFleetsEngine(t *testing.T) {
	e, _ := userEnv(t)
	// --listen: a free port (4222 may be taken on the test machine).
	url := firstLine(e, e.cmd(taiBin, "hub", "--listen", "127.0.0.1:0"))
	write := func(f string) string {
		return "steps:\n  - write: {path: " + f + ", content: \"x\\n\"}\n  - text: done\n"
	}
	repo := planRepo(t, map[string]string{
		"a.yaml": write("a.txt"), "b.yaml": write("b.txt"), "c.yaml": write("c.txt"),
		// policy approve: all: the tasks write files, which the default approve-reads denies.
		"plan.yaml": `name: engine
concurrency: 1
budget: {turns: 100}
policy: {approve: all}
tasks:
  - {id: a, script: a.yaml, prompt: go, budget: {turns: 10}}
  - {id: b, script: b.yaml, prompt: go, budget: {turns: 10}}
  - {id: c, script: c.yaml, prompt: go, budget: {turns: 10}}
  - {id: big, script: a.yaml, prompt: go, budget: {turns: 500}}
`})
	w := e.cmd(taiBin, "worker", "--nats", url, "--name", "w")
	w.Stderr = &prefixWriter{t: t, p: "w"}
	e.start(w)
	out, err := e.cmd(taiBin, "fleet", "run", "--nats", url, "--run-id", "eng", "-C", repo, filepath.Join(repo, "plan.yaml")).CombinedOutput()
	var ee *exec.ExitError
	if err == nil || !errors.As(err, &ee) || ee.ExitCode() != 6 {
		t.Fatalf("tai fleet run: %v, want exit 6 (a task refused its budget)\n%s", err, out)
	}
	for _, f := range []string{"a.txt", "b.txt", "c.txt"} {
		if got, _ := exec.Command("git", "-C", repo, "show", "tai-fleet/eng:"+f).CombinedOutput(); strings.TrimSpace(string(got)) != "x" {
			t.Fatalf("%s on the target: %q\n%s", f, got, out)
		}
	}
	var out1, refusedBudget []string
	offered := 0
	for _, en := range auditlog.Read(t, filepath.Join(e.state, "tai", "fleet", "eng", "audit.jsonl")) {
		var d struct{ Event, Task, Level string }
		if json.Unmarshal(en.Data, &d) != nil {
			continue
		}
		switch {
		case en.Kind == audit.KindFleet && d.Event == "offered":
			offered++
			out1 = append(out1, d.Task)
			if offered-accepted(out1) > 1 {
				t.Errorf("task %s offered while another was out, over the plan's concurrency of 1: %v", d.Task, out1)
			}
		case en.Kind == audit.KindFleet && d.Event == "accepted":
			out1 = append(out1, "accepted "+d.Task)
		case en.Kind == audit.KindBudget && d.Level == "refused":
			refusedBudget = append(refusedBudget, d.Task)
		}
	}
	if offered != 3 {
		t.Errorf("%d offers, want a, b and c's: %v", offered, out1)
	}
	if strings.Join(refusedBudget, ",") != "big" {
		t.Errorf("budget refusals in the audit log: %v, want big's", refusedBudget)
	}
}

// accepted counts the acceptances in a list of offers and acceptances.
func accepted(events []string) int {
	n := 0
	for _, ev := range events {
		if strings.HasPrefix(ev, "accepted ") {
			n++
		}
	}
	return n
}
