package fleetboth_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/e2e/internal/auditlog"
	"github.com/tai-dev/tai/fleet"
)

func init() { scenarios = append(scenarios, parkScenario()) }

// parkScenario: six tasks of one account; t1 and t2 finish, then t3..t6
// each hit the account's usage limit. The account parks (over NATS: from
// a worker's parked result, in the coordinator's one engine), no task of
// it is launched (offered) while it is parked, and at the reset every
// parked task resumes its own session (over NATS: on whichever worker
// takes it, from the parked attempt's pushed work) and merges. Nothing
// runs twice. The reset is past, so nothing waits on a clock.
func parkScenario() scenario {
	resets := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	files := map[string]string{}
	var plan strings.Builder
	// concurrency 2: t5 and t6 are ready while t3 and t4 park, and must not
	// launch. quota: each of t3..t6 may park the account once (the default
	// allows 3 resumes); the default 10s stagger would make the test wait.
	// policy approve: all: the tasks write files and run commands, which
	// the default approve-reads denies.
	plan.WriteString("name: park\nconcurrency: 2\nquota: {max_resumes: 4, stagger: 1ms}\npolicy: {approve: all}\ntasks:\n")
	for i := 1; i <= 6; i++ {
		id := fmt.Sprintf("t%d", i)
		if i <= 2 {
			files[id+".yaml"] = writeScript(id+".txt", id+"\n")
			fmt.Fprintf(&plan, "  - {id: %s, script: %s.yaml, prompt: \"task %s\"}\n", id, id, id)
			continue
		}
		// The limit clears after one hit per session (the built-in
		// agent's count is kept with the session): a resumed session
		// goes on; its work after the limit counts its runs in SHARED.
		files[id+".yaml"] = fmt.Sprintf("steps:\n  - text: \"working on %[1]s\"\n  - limit: {resets_at: %[2]q, times: 1}\n"+
			"  - run: {command: sh, args: [-c, 'echo x >> SHARED/%[1]s']}\n  - write: {path: %[1]s.txt, content: \"%[1]s\\n\"}\n  - text: done\n", id, resets)
		fmt.Fprintf(&plan, "  - {id: %s, script: %s.yaml, prompt: \"task %s\", depends_on: [t1, t2]}\n", id, id, id)
	}
	files["plan.yaml"] = plan.String()
	return scenario{
		name:   "park",
		files:  files,
		shared: true,
		// The built-in agent's stand-in for an API key: the six tasks are
		// one account (agent + credential hash).
		env: []string{"TAI_BUILTIN_ACCOUNT=sk-test-park-account"},
		run: testParkResume,
	}
}

// parkEvent is a fleet event of the audit log.
type parkEvent struct {
	Event   string `json:"event"`
	Task    string `json:"task"`
	Detail  string `json:"detail"`
	Account string `json:"account"`
}

func testParkResume(t *testing.T, w *world) {
	s, o := w.fleetRun("park6")
	if o.Code != 0 || s.Counts[fleet.StatusMerged] != 6 {
		t.Fatalf("exit %d, counts %v\nstderr:\n%s", o.Code, s.Counts, o.Stderr)
	}
	parkedTask, resumedTask := map[string]int{}, map[string]int{}
	accountParks, open := 0, false
	for _, e := range auditlog.Read(t, s.Audit) {
		if e.Kind != audit.KindFleet {
			continue
		}
		var ev parkEvent
		if err := json.Unmarshal(e.Data, &ev); err != nil {
			t.Fatal(err)
		}
		switch {
		case ev.Event == "parked" && ev.Task == "":
			accountParks++
			open = true
			if !strings.HasPrefix(ev.Account, "builtin:sha256:") {
				t.Errorf("account %q", ev.Account)
			}
		case ev.Event == "resumed" && ev.Task == "":
			open = false
		case ev.Event == "parked" && strings.HasPrefix(ev.Detail, "parked with its account"):
			parkedTask[ev.Task]++
		case ev.Event == "resumed":
			resumedTask[ev.Task]++
			if !strings.Contains(ev.Detail, "in its own session") {
				t.Errorf("%s resumed: %s", ev.Task, ev.Detail)
			}
		case (ev.Event == "started" || ev.Event == "offered") && open:
			t.Errorf("task %s launched while its account was parked: %s %s", ev.Task, ev.Event, ev.Detail)
		}
	}
	if accountParks == 0 {
		t.Fatal("the account never parked")
	}
	for i := 1; i <= 6; i++ {
		id := fmt.Sprintf("t%d", i)
		if want := i > 2; (parkedTask[id] > 0) != want || (resumedTask[id] > 0) != want {
			t.Errorf("%s parked %d, resumed %d times", id, parkedTask[id], resumedTask[id])
		}
	}
	// Nothing ran twice: each parked task's work after its limit ran once.
	for i := 3; i <= 6; i++ {
		id := fmt.Sprintf("t%d", i)
		if b, err := os.ReadFile(filepath.Join(w.shared, id)); err != nil || string(b) != "x\n" {
			t.Errorf("%s's work after its limit ran %q times (%v)", id, b, err)
		}
	}
	files := strings.Join(w.onTarget(s), " ")
	for i := 1; i <= 6; i++ {
		if f := fmt.Sprintf("t%d.txt", i); !strings.Contains(files, f) {
			t.Errorf("%s missing on the target: %s", f, files)
		}
	}
}
