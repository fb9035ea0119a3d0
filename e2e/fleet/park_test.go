package fleet_test

import (
	"bufio"
	"encoding/json"
	"fmt"

	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/e2e/internal/auditlog"
)

// parkEvent is a fleet event of the audit log.
type parkEvent struct {
	Event    string    `json:"event"`
	Task     string    `json:"task"`
	Detail   string    `json:"detail"`
	Account  string    `json:"account"`
	ResetsAt time.Time `json:"resets_at"`
	Session  string    `json:"session"`
}

func fleetEvents(t *testing.T, entries []audit.Entry) []parkEvent {
	t.Helper()
	var evs []parkEvent
	for _, e := range entries {
		if e.Kind != audit.KindFleet {
			continue
		}
		var ev parkEvent
		if err := json.Unmarshal(e.Data, &ev); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// limitScript works, then hits its account's limit (once per session, as
// the built-in agent's limit step does; its count is kept with the
// session), then finishes: writes its file.
func limitScript(id string, resets time.Time) string {
	return fmt.Sprintf("steps:\n  - text: \"working on %s\"\n  - limit: {resets_at: %q, times: 1}\n  - write: {path: %s.txt, content: \"%s\\n\"}\n  - text: done\n",
		id, resets.UTC().Format(time.RFC3339), id, id)
}

// parkPlan is a plan of six tasks of one account: t1 and t2 finish, then
// t3..t6 (after them) each hit the account's usage limit; with after34,
// only t3 and t4 do, and t5 and t6 come after them.
func parkPlan(t *testing.T, pd string, resets time.Time, head string, after34 bool) string {
	t.Helper()
	var plan strings.Builder
	// policy approve: all: the tasks write files, which the default approve-reads denies.
	plan.WriteString("name: park\npolicy: {approve: all}\n" + head + "tasks:\n")
	for i := 1; i <= 6; i++ {
		id := fmt.Sprintf("t%d", i)
		if i <= 2 || (after34 && i >= 5) {
			write(t, filepath.Join(pd, id+".yaml"), fmt.Sprintf("steps:\n  - write: {path: %s.txt, content: \"%s\\n\"}\n  - text: done\n", id, id))
			deps := ""
			if i >= 5 {
				deps = ", depends_on: [t3, t4]"
			}
			fmt.Fprintf(&plan, "  - {id: %s, script: %s.yaml, prompt: \"task %s\"%s}\n", id, id, id, deps)
			continue
		}
		write(t, filepath.Join(pd, id+".yaml"), limitScript(id, resets))
		fmt.Fprintf(&plan, "  - {id: %s, script: %s.yaml, prompt: \"task %s\", depends_on: [t1, t2]}\n", id, id, id)
	}
	p := filepath.Join(pd, "plan.yaml")
	write(t, p, plan.String())
	return p
}

// taiAccount is tai as a user runs it (user-like HOME, default sandbox),
// with the built-in agent's stand-in for an API key: one account.
func taiAccount(t *testing.T, dir string, args ...string) *exec.Cmd {
	t.Helper()
	cmd, _ := taiUser(t, dir, args...)
	cmd.Env = append(cmd.Env, "TAI_BUILTIN_ACCOUNT=sk-test-park-account")
	return cmd
}

func runCmd(t *testing.T, cmd *exec.Cmd) (string, string, int) {
	t.Helper()
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatal(err)
		}
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

// A fleet of six tasks on one account hits the account's usage limit
// after two: the account parks (every running task of it parked, none
// launched while it is), and at the reset every parked task resumes its
// own session, one at a time, and merges. Nothing runs twice: each
// task's prompt went to one session, once. Default sandbox, user-like
// HOME; the reset is past, so the test waits on no clock.
func TestFleetParksPerAccountAndResumes(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	// concurrency 2: t5 and t6 are ready while t3 and t4 park, and must
	// not launch. max_resumes 4: each of t3..t6 may park the account once
	// (the default allows 3). stagger 1ms: the default 10s between
	// resumes would make the test wait half a minute.
	plan := parkPlan(t, pd, time.Now().Add(-time.Minute), "concurrency: 2\nquota: {max_resumes: 4, stagger: 1ms}\n", false)
	out, errOut, code := runCmd(t, taiAccount(t, repo, "fleet", "run", "--run-id", "park6", "-C", repo, "--output", "json", plan))
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var s summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if s.Counts["merged"] != 6 {
		t.Fatalf("counts %v\n%s", s.Counts, errOut)
	}
	entries := auditlog.Read(t, s.Audit)
	evs := fleetEvents(t, entries)
	parkedTask, resumedTask := map[string]int{}, map[string]int{}
	accountParks, open := 0, false
	for _, ev := range evs {
		switch {
		case ev.Event == "parked" && ev.Task == "":
			accountParks++
			open = true
			if !strings.HasPrefix(ev.Account, "builtin:sha256:") {
				t.Errorf("account %q", ev.Account)
			}
		case ev.Event == "resumed" && ev.Task == "":
			open = false
		case ev.Event == "parked":
			parkedTask[ev.Task]++
		case ev.Event == "resumed":
			resumedTask[ev.Task]++
		case ev.Event == "started" && open:
			t.Errorf("task %s launched while its account was parked", ev.Task)
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
	// Nothing ran twice: each task's own prompt was sent once, and every
	// prompt of a task (the resumes' too) went to one session.
	sessions, prompts := map[string]map[string]bool{}, map[string]int{}
	for _, e := range entries {
		if e.Kind != audit.KindPrompt || e.Task == "" {
			continue
		}
		if sessions[e.Task] == nil {
			sessions[e.Task] = map[string]bool{}
		}
		sessions[e.Task][e.Session] = true
		if strings.Contains(string(e.Data), "task "+e.Task) {
			prompts[e.Task]++
		}
	}
	for i := 1; i <= 6; i++ {
		id := fmt.Sprintf("t%d", i)
		if len(sessions[id]) != 1 || prompts[id] != 1 {
			t.Errorf("%s: sessions %v, its prompt sent %d times", id, sessions[id], prompts[id])
		}
	}
	files := git(t, repo, "ls-tree", "--name-only", s.Target)
	for i := 1; i <= 6; i++ {
		if f := fmt.Sprintf("t%d.txt", i); !strings.Contains(files, f) {
			t.Errorf("%s missing on the target:\n%s", f, files)
		}
	}
}

// A reset further away than the plan's quota: wait leaves ends the
// fleet parked at once: exit 75, status parked, the tasks parked with the
// reason, the account's park (and its reset time) kept in the run's
// state; no task of the account launched after it parked. Default
// sandbox, user-like HOME.
func TestFleetQuotaBudgetEndsParked(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	resets := time.Now().Add(3 * time.Hour).UTC().Truncate(time.Second)
	// quota wait 1h: the budget this test runs out of (the reset is 3h away).
	plan := parkPlan(t, pd, resets, "concurrency: 2\nquota: {wait: 1h}\n", false)
	out, errOut, code := runCmd(t, taiAccount(t, repo, "fleet", "run", "--run-id", "parkbudget", "-C", repo, "--output", "json", plan))
	if code != 75 {
		t.Fatalf("exit %d, want 75\n%s\n%s", code, out, errOut)
	}
	var s summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if s.Status != "parked" || s.ExitCode != 75 || s.Counts["merged"] != 2 || s.Counts["parked"] != 4 {
		t.Fatalf("summary %+v", s)
	}
	st := readState(t, "parkbudget")
	if len(st.Parks) != 1 {
		t.Fatalf("parks %+v", st.Parks)
	}
	for _, p := range st.Parks {
		if !p.ResetsAt.Equal(resets) || !strings.Contains(p.Ended, "past what its quota: wait of 1h0m0s leaves") {
			t.Errorf("park %+v", p)
		}
	}
	for _, id := range []string{"t3", "t4", "t5", "t6"} {
		ts := st.Tasks[id]
		if ts.Status != "parked" || !strings.Contains(ts.Reason, "past what its quota: wait") {
			t.Errorf("%s: %s %q", id, ts.Status, ts.Reason)
		}
	}
	parked := false
	for _, ev := range fleetEvents(t, auditlog.Read(t, s.Audit)) {
		parked = parked || (ev.Event == "parked" && ev.Task == "")
		if ev.Event == "started" && parked {
			t.Errorf("%s launched while its account was parked", ev.Task)
		}
	}
}

type runState struct {
	Parks map[string]struct {
		ResetsAt time.Time `json:"resets_at"`
		Ended    string    `json:"ended"`
		ByHand   bool      `json:"by_hand"`
	} `json:"parks"`
	Tasks map[string]struct {
		Status string `json:"status"`
		Reason string `json:"reason"`
		Park   *struct {
			Session string `json:"session"`
		} `json:"park"`
	} `json:"tasks"`
}

func readState(t *testing.T, run string) runState {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(stateDir, "tai", "fleet", run, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st runState
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// startFleet starts tai fleet in its own process group, its progress
// lines (text output) on a scanner.
func startFleet(t *testing.T, cmd *exec.Cmd) *bufio.Scanner {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A file, not a pipe: agents that outlive a kill hold their stderr.
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stderr.Close() })
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return bufio.NewScanner(stdout)
}

// until reads progress lines until one contains all of want; it fails
// the test when the output ends first.
func until(t *testing.T, sc *bufio.Scanner, want ...string) string {
	t.Helper()
	var seen []string
	for sc.Scan() {
		l := sc.Text()
		seen = append(seen, l)
		all := true
		for _, w := range want {
			all = all && strings.Contains(l, w)
		}
		if all {
			return l
		}
	}
	t.Fatalf("no line with %q in the progress:\n%s", want, strings.Join(seen, "\n"))
	return ""
}

// A coordinator killed (-9) while its account is parked: tai fleet resume
// brings the park back with the same reset time (its timer, not a new
// one), nothing launched; tai fleet resume of the run that is running
// releases it by hand, and every task resumes its own session and
// merges. tai fleet pause parks a running run by hand. Both go through
// the run's live feed, recorded in its audit log. Default sandbox,
// user-like HOME; the reset is hours away, so only the hands end the
// park (no clock is waited on).
func TestFleetParkSurvivesKill9AndResumesByHand(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	resets := time.Now().Add(3 * time.Hour).UTC().Truncate(time.Second)
	// stagger 1ms: the default 10s between resumes would make the test
	// wait. Only t3 and t4 hit the limit: a task that first runs after
	// the release by hand would hit the limit (3h away) and park again.
	plan := parkPlan(t, pd, resets, "quota: {stagger: 1ms}\n", true)
	sc := startFleet(t, taiAccount(t, repo, "fleet", "run", "--run-id", "park9", "-C", repo, plan))
	// Killed once both are parked (each in its worktree, or not launched),
	// in either order.
	for seen := map[string]bool{}; !seen["t3"] || !seen["t4"]; {
		l := until(t, sc, "parked")
		if f := strings.Fields(l); len(f) >= 3 && f[2] == "parked" {
			seen[f[1]] = true
			// tai top and the frames show a parked task's reset.
			if f[1] != "fleet" && !strings.Contains(l, "until "+resets.Format(time.RFC3339)) {
				t.Errorf("a task's parked event without its reset: %s", l)
			}
		}
	}
	first := readState(t, "park9")
	if len(first.Parks) != 1 {
		t.Fatalf("parks %+v", first.Parks)
	}
	// tai top shows the account parked, with the countdown to its reset
	// and its tasks. The feed learns of a task's park just after the
	// progress line: polled until it has, or the deadline.
	for acct := range first.Parks {
		re := regexp.MustCompile(`parked: ` + regexp.QuoteMeta(acct) + ` reset in (2h59m\d+s|3h0m0s) \(t[34], t[34]\)`)
		for deadline, tries := time.Now().Add(time.Minute), 1; ; tries++ {
			top, errOut, _ := runCmd(t, taiAccount(t, repo, "top", "--once", "--width", "250"))
			if re.MatchString(top) {
				t.Logf("tai top, try %d:\n%s", tries, top)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("tai top does not show %s's countdown:\n%s\n%s", acct, top, errOut)
			}
		}
	}
	_ = syscall.Kill(-parkPid(t, "park9"), syscall.SIGKILL)

	resume := taiAccount(t, repo, "fleet", "resume", "park9")
	rsc := startFleet(t, resume)
	l := until(t, rsc, "fleet", "parked", "its timer kept")
	if !strings.Contains(l, "until "+resets.Format(time.RFC3339)) {
		t.Fatalf("the park came back with another timer: %s", l)
	}
	// Paused by hand on top: the run is live, the pause is accepted.
	if out, errOut, code := runCmd(t, taiAccount(t, repo, "fleet", "pause", "park9")); code != 0 {
		t.Fatalf("pause: exit %d\n%s\n%s", code, out, errOut)
	}
	until(t, rsc, "fleet", "parked", "by hand")
	release := func() {
		if out, errOut, code := runCmd(t, taiAccount(t, repo, "fleet", "resume", "park9")); code != 0 || !strings.Contains(out, "resume now") {
			t.Fatalf("resume by hand: exit %d\n%s\n%s", code, out, errOut)
		}
	}
	release()
	// A task whose turn the park cancelled before it met the limit meets
	// it on its resume (its session's first time), and parks the account
	// again: released by hand again. Each session meets it once.
	var rest strings.Builder
	parks := 0
	for rsc.Scan() {
		l := rsc.Text()
		rest.WriteString(l + "\n")
		if f := strings.Fields(l); len(f) >= 3 && f[1] == "fleet" && f[2] == "parked" {
			if parks++; parks > 2 {
				t.Fatalf("parked %d times after the release:\n%s", parks, rest.String())
			}
			release()
		}
	}
	if err := resume.Wait(); err != nil {
		t.Fatalf("the resumed run: %v\n%s", err, rest.String())
	}
	st := readState(t, "park9")
	if len(st.Parks) != 0 {
		t.Errorf("parks left: %+v", st.Parks)
	}
	for i := 1; i <= 6; i++ {
		if ts := st.Tasks[fmt.Sprintf("t%d", i)]; ts.Status != "merged" {
			t.Errorf("t%d: %s %s\n%s", i, ts.Status, ts.Reason, rest.String())
		}
	}
	// The parked tasks resumed their own sessions: one session per task.
	entries := auditlog.Read(t, filepath.Join(stateDir, "tai", "fleet", "park9", "audit.jsonl"))
	// The pause and the releases went through the run's live feed, each
	// recorded with who asked: the CLI, at its terminal.
	hands := map[string]int{}
	for _, e := range entries {
		if e.Kind == audit.KindFeedHand {
			var h struct{ Action, Via string }
			if err := json.Unmarshal(e.Data, &h); err != nil || h.Via != "terminal" {
				t.Errorf("a hand %s (%v), want via terminal", e.Data, err)
			}
			hands[h.Action]++
		}
	}
	if hands["pause"] != 1 || hands["release"] < 1 {
		t.Errorf("the audit log records hands %v, want one pause and a release", hands)
	}
	sessions := map[string]map[string]bool{}
	for _, e := range entries {
		if e.Kind == audit.KindPrompt && e.Task != "" {
			if sessions[e.Task] == nil {
				sessions[e.Task] = map[string]bool{}
			}
			sessions[e.Task][e.Session] = true
		}
	}
	for _, id := range []string{"t3", "t4"} {
		if len(sessions[id]) != 1 {
			var dbg strings.Builder
			for _, e := range entries {
				if e.Task == id && (e.Kind == audit.KindPrompt || e.Kind == "session.start" || e.Kind == "run.end") {
					d := string(e.Data)
					if len(d) > 200 {
						d = d[:200]
					}
					fmt.Fprintf(&dbg, "%s %s %s\n", e.Kind, e.Session, d)
				}
			}
			t.Errorf("%s ran in sessions %v\n%s\n%s", id, sessions[id], dbg.String(), rest.String())
		}
	}
}

// parkPid is the pid the run's state names.
func parkPid(t *testing.T, run string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(stateDir, "tai", "fleet", run, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		PID int `json:"pid"`
	}
	if err := json.Unmarshal(b, &st); err != nil || st.PID == 0 {
		t.Fatalf("pid: %v %s", err, b)
	}
	return st.PID
}
