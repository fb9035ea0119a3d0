package fleetboth_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/e2e/internal/auditlog"
	"github.com/tai-dev/tai/e2e/internal/build"
	"github.com/tai-dev/tai/e2e/internal/userenv"
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
	parkedTask, resumedTask, launched := map[string]int{}, map[string]int{}, map[string]bool{}
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
		case ev.Event == "started" || ev.Event == "offered":
			// A task's first launch (local: started; NATS: offered; a
			// parked task's offer again is its resume).
			if open && !launched[ev.Task] {
				t.Errorf("task %s launched while its account was parked: %s %s", ev.Task, ev.Event, ev.Detail)
			}
			launched[ev.Task] = true
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
	// Nothing ran twice: each task's own prompt was sent once (the
	// resumes sent the continue prompt to its session), in the run's
	// audit log or, over NATS, its workers' (one per attempt).
	logs, err := filepath.Glob(filepath.Join(w.u.Home, ".local", "share", "tai", "worker", "*", "state", "audit", "park6", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	prompts := map[string]int{}
	for _, l := range append(logs, s.Audit) {
		for _, e := range auditlog.Read(t, l) {
			if e.Kind == audit.KindPrompt && e.Task != "" && strings.Contains(string(e.Data), "task "+e.Task) {
				prompts[e.Task]++
			}
		}
	}
	for i := 1; i <= 6; i++ {
		if id := fmt.Sprintf("t%d", i); prompts[id] != 1 {
			t.Errorf("%s's prompt was sent %d times (audit logs %v)", id, prompts[id], logs)
		}
	}
	files := strings.Join(w.onTarget(s), " ")
	for i := 1; i <= 6; i++ {
		if f := fmt.Sprintf("t%d.txt", i); !strings.Contains(files, f) {
			t.Errorf("%s missing on the target: %s", f, files)
		}
	}
}

// Over NATS, the park is fleet-wide across workers and outlives one: two
// workers run t3 and t4, which hit their account's limit (3h away): the
// account parks, nothing of it is offered while it is, and a worker and
// the coordinator are killed while parked; tai fleet resume --nats brings
// the park back with its timer. tai fleet resume RUN then releases the running fleet by
// hand (through its live feed): every parked task is offered again and
// resumes its own session on the worker left, from its parked attempt's
// work, and all merge; nothing runs twice. Default sandbox, no --dir,
// user-like HOME; only the hand ends the park (no clock is waited on).
func TestNATSParkOutlivesAWorkerAndTheCoordinator(t *testing.T) {
	u := userenv.New(t, taiBin, natsServer)
	u.Env = append(u.Env, "TAI_BUILTIN_ACCOUNT=sk-test-park-account") // one account for the six tasks
	shared := filepath.Join(u.Home, "shared")
	if err := os.Mkdir(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	url, _ := u.Hub()
	w1 := u.Worker(url, "w1", sandboxWrite(shared)...)
	u.Worker(url, "w2", sandboxWrite(shared)...)
	resets := time.Now().Add(3 * time.Hour).UTC().Format(time.RFC3339)
	files := map[string]string{}
	var plan strings.Builder
	// stagger 1ms: the default 10s between resumes would make the test
	// wait. policy approve: all: the tasks write files and run commands,
	// which the default approve-reads denies. Only t3 and t4 hit the
	// limit; t5 and t6 come after them (a task first run after the release
	// would meet the limit, 3h away, and park again).
	plan.WriteString("name: parkn\nquota: {stagger: 1ms}\npolicy: {approve: all}\ntasks:\n")
	for i := 1; i <= 6; i++ {
		id := fmt.Sprintf("t%d", i)
		switch {
		case i == 3 || i == 4:
			files[id+".yaml"] = fmt.Sprintf("steps:\n  - text: \"working on %[1]s\"\n  - limit: {resets_at: %[2]q, times: 1}\n"+
				"  - run: {command: sh, args: [-c, 'echo x >> %[3]s/%[1]s']}\n  - write: {path: %[1]s.txt, content: \"%[1]s\\n\"}\n  - text: done\n", id, resets, shared)
			fmt.Fprintf(&plan, "  - {id: %s, script: %s.yaml, prompt: \"task %s\", depends_on: [t1, t2]}\n", id, id, id)
		default:
			files[id+".yaml"] = writeScript(id+".txt", id+"\n")
			deps := ""
			if i >= 5 {
				deps = ", depends_on: [t3, t4]"
			}
			fmt.Fprintf(&plan, "  - {id: %s, script: %s.yaml, prompt: \"task %s\"%s}\n", id, id, id, deps)
		}
	}
	files["plan.yaml"] = plan.String()
	repo := u.Repo("proj", files)
	run := u.Command(repo, "tai", "fleet", "run", "--run-id", "parkn", "--nats", url, "plan.yaml")
	d := userenv.Start(t, run)
	line := func() []string {
		t.Helper()
		s, err := d.Stdout.ReadString('\n')
		if err != nil {
			return nil
		}
		return strings.Fields(s)
	}
	// Both parked (each at its limit, or stopped by the account's park).
	for seen := map[string]bool{}; !seen["t3"] || !seen["t4"]; {
		f := line()
		if f == nil {
			t.Fatalf("the run ended before t3 and t4 parked; stderr:\n%s", d.Stderr.String())
		}
		if len(f) >= 5 && f[2] == "parked" && f[3] == "parked" && f[4] == "with" {
			seen[f[1]] = true
		}
	}
	// A worker dies while its task is parked, and so does the coordinator
	// (kill -9): tai fleet resume --nats brings the park back with its
	// reset time (its timer, not a new one), nothing offered.
	_ = syscall.Kill(-w1.Cmd.Process.Pid, syscall.SIGKILL)
	_ = w1.Stop()
	_ = syscall.Kill(-d.Cmd.Process.Pid, syscall.SIGKILL)
	_ = d.Stop()
	d = userenv.Start(t, u.Command(repo, "tai", "fleet", "resume", "parkn", "--nats", url))
	for f := line(); ; f = line() {
		if f == nil {
			t.Fatalf("the resumed run ended before its park came back; stderr:\n%s", d.Stderr.String())
		}
		if l := strings.Join(f, " "); len(f) >= 3 && f[1] == "fleet" && f[2] == "parked" {
			if !strings.Contains(l, "its timer kept") || !strings.Contains(l, "until "+resets) {
				t.Fatalf("the park came back with another timer: %s", l)
			}
			break
		}
	}
	release := func() {
		o := build.Run(t, taiBin, repo, u.Env, "fleet", "resume", "parkn")
		if o.Code != 0 || !strings.Contains(o.Stdout, "resume now") {
			t.Fatalf("resume by hand: exit %d\n%s\n%s", o.Code, o.Stdout, o.Stderr)
		}
	}
	release()
	// A task whose turn the park stopped before it met the limit meets it
	// on its resume (its session's first time) and parks the account
	// again: released by hand again. Each session meets it once.
	parks := 0
	for f := line(); f != nil; f = line() {
		if len(f) >= 3 && f[1] == "fleet" && f[2] == "parked" {
			if parks++; parks > 2 {
				t.Fatalf("parked %d times after the release; stderr:\n%s", parks, d.Stderr.String())
			}
			release()
		}
	}
	if err := d.Stop(); err != nil {
		t.Fatalf("the run: %v\n%s", err, d.Stderr.String())
	}
	st := fleetState(t, u, "parkn")
	for i := 1; i <= 6; i++ {
		if ts := st.Tasks[fmt.Sprintf("t%d", i)]; ts == nil || ts.Status != fleet.StatusMerged {
			t.Errorf("t%d: %+v", i, ts)
		}
	}
	open := false
	resumed := map[string]int{}
	for _, e := range auditlog.Read(t, u.State("fleet", "parkn", "audit.jsonl")) {
		if e.Kind != audit.KindFleet {
			continue
		}
		var ev parkEvent
		if err := json.Unmarshal(e.Data, &ev); err != nil {
			t.Fatal(err)
		}
		switch {
		case ev.Event == "parked" && ev.Task == "":
			open = true
		case ev.Event == "resumed" && ev.Task == "":
			open = false
		case ev.Event == "resumed":
			resumed[ev.Task]++
			if !strings.Contains(ev.Detail, "in its own session") {
				t.Errorf("%s resumed: %s", ev.Task, ev.Detail)
			}
		case ev.Event == "offered" && open:
			t.Errorf("%s offered while its account was parked: %s", ev.Task, ev.Detail)
		}
	}
	for _, id := range []string{"t3", "t4"} {
		if resumed[id] == 0 {
			t.Errorf("%s never resumed", id)
		}
		if b, err := os.ReadFile(filepath.Join(shared, id)); err != nil || string(b) != "x\n" {
			t.Errorf("%s's work after its limit ran %q times (%v)", id, b, err)
		}
	}
}

// fleetState is the run's state.json on the user's machine.
func fleetState(t *testing.T, u *userenv.User, run string) fleet.State {
	t.Helper()
	b, err := os.ReadFile(u.State("fleet", run, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st fleet.State
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st
}
