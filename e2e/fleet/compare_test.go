package fleet_test

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tai-dev/tai/e2e/internal/auditlog"
)

// compareResult is the part of tai compare -o json's document the tests
// read.
type compareResult struct {
	Run        string `json:"run"`
	Status     string `json:"status"`
	ExitCode   int    `json:"exit_code"`
	Base       string `json:"base"`
	Target     string `json:"target"`
	Best       string `json:"best"`
	Why        string `json:"why"`
	Picked     string `json:"picked"`
	Audit      string `json:"audit"`
	Error      string `json:"error"`
	Candidates []struct {
		Agent  string `json:"agent"`
		Status string `json:"status"`
		Check  *struct {
			Passed   bool   `json:"passed"`
			TimedOut bool   `json:"timed_out"`
			Output   string `json:"output"`
		} `json:"check"`
		Files      int    `json:"files"`
		Insertions int    `json:"insertions"`
		OwnsHeld   *bool  `json:"owns_held"`
		Tokens     int64  `json:"tokens"`
		Denials    int    `json:"denials"`
		Branch     string `json:"branch"`
	} `json:"candidates"`
}

// scripts writes built-in agent scripts, one per candidate, each writing
// its files, and returns the --script flags naming them.
func scripts(t *testing.T, dir string, files map[string]string) []string {
	t.Helper()
	var args []string
	for _, name := range []string{"a", "b", "c"} {
		body, ok := files[name]
		if !ok {
			continue
		}
		p := filepath.Join(dir, name+".yaml")
		write(t, p, body)
		args = append(args, "--script", name+"="+p)
	}
	return args
}

func writes(path, content string) string {
	b, _ := json.Marshal(content)
	return "steps:\n  - text: \"on it\"\n  - write: {path: " + path + ", content: " + string(b) + "}\n  - usage: {used: 40, size: 1000}\n"
}

func compare(t *testing.T, repo string, args ...string) (compareResult, string, int) {
	t.Helper()
	out, errOut, code := runTai(t, repo, append([]string{"compare", "-o", "json"}, args...)...)
	var r compareResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("exit %d: %v\n%s\n%s", code, err, out, errOut)
	}
	return r, errOut, code
}

func candidate(t *testing.T, r compareResult, name string) int {
	t.Helper()
	for i, c := range r.Candidates {
		if c.Agent == name {
			return i
		}
	}
	t.Fatalf("no candidate %s in %+v", name, r)
	return -1
}

// Three built-in-agent scripts, one prompt, a check that one of them
// fails: each is scored by tai (the confined check, the diffstat, the
// usage), the best (passing, smallest diff) is merged into the run's
// target by --pick best, the others stay on their branches, the user's
// branch is untouched, JUnit has one case per candidate.
func TestCompareScoresAndPicksBest(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	args := scripts(t, pd, map[string]string{
		"a": writes("answer.txt", "ok\n"),
		"b": writes("answer.txt", "ok\nand more\nand more\n"),
		"c": writes("answer.txt", "wrong\n"),
	})
	junit := filepath.Join(pd, "compare.xml")
	// --approve all: the candidates write files with nobody at a terminal
	// to answer their asks.
	args = append(args, "--approve", "all", "--check", "grep -q ok answer.txt", "--pick", "best", "--junit", junit, "--run-id", "cmp1", "write the answer")
	r, errOut, code := compare(t, repo, args...)
	if code != 0 || r.Best != "a" || r.Picked != "a" {
		t.Fatalf("exit %d, best %q picked %q (%s)\n%+v\n%s", code, r.Best, r.Picked, r.Why, r, errOut)
	}
	want := map[string]struct {
		passed bool
		ins    int
	}{"a": {true, 1}, "b": {true, 3}, "c": {false, 1}}
	for name, w := range want {
		c := r.Candidates[candidate(t, r, name)]
		if c.Check == nil || c.Check.Passed != w.passed || c.Insertions != w.ins || c.Files != 1 || c.Tokens != 40 {
			t.Errorf("%s: %+v, want check passed %v, +%d in 1 file, 40 tokens", name, c, w.passed, w.ins)
		}
	}
	if got := git(t, repo, "show", r.Target+":answer.txt"); got != "ok" {
		t.Errorf("target has %q, want a's answer", got)
	}
	if got := git(t, repo, "rev-parse", "main"); got != r.Base {
		t.Errorf("main moved to %s", got)
	}
	for _, name := range []string{"b", "c"} {
		if got := git(t, repo, "show", r.Candidates[candidate(t, r, name)].Branch+":answer.txt"); got == "" {
			t.Errorf("%s's branch lost its work", name)
		}
	}
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var suite struct {
		Failures int `xml:"failures,attr"`
		Cases    []struct {
			Name string `xml:"name,attr"`
		} `xml:"testcase"`
	}
	if err := xml.Unmarshal(b, &suite); err != nil || len(suite.Cases) != 3 || suite.Failures != 1 {
		t.Errorf("junit: %v, %d cases, %d failures (want 3, 1: c's check)\n%s", err, len(suite.Cases), suite.Failures, b)
	}
	entries := auditlog.Read(t, r.Audit)
	picked := false
	for _, e := range entries {
		var d struct{ Event, Task string }
		if e.Kind == "fleet" && json.Unmarshal(e.Data, &d) == nil && d.Event == "picked" && d.Task == "a" {
			picked = true
		}
	}
	if !picked {
		t.Errorf("no picked event for a in the audit log")
	}

	// The history reads the pick back from the audit log.
	out, errOut, code := runTai(t, repo, "compare", "history", "-o", "json")
	var wins []struct {
		Repo, Run, Agent string
		CheckPassed      *bool `json:"check_passed"`
		Tokens           int64
		Candidates       int
	}
	if err := json.Unmarshal([]byte(out), &wins); err != nil || code != 0 || len(wins) != 1 {
		t.Fatalf("history: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	if w := wins[0]; w.Run != "cmp1" || w.Agent != "a" || w.CheckPassed == nil || !*w.CheckPassed || w.Tokens != 40 || w.Candidates != 3 || w.Repo == "" {
		t.Errorf("history: %+v", w)
	}
}

// Two candidates with the same check result and the same diff size: a
// tie; --pick best merges nothing, says so and exits 1, and the table
// shows both.
func TestCompareTiePicksNone(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	args := scripts(t, pd, map[string]string{"a": writes("x.txt", "one\n"), "b": writes("y.txt", "two\n")})
	// --approve all: the candidates write files headless.
	args = append([]string{"compare", "--approve", "all", "--check", "true", "--pick", "best", "--run-id", "tie"}, append(args, "write a file")...)
	out, errOut, code := runTai(t, repo, args...)
	if code != 1 || !strings.Contains(errOut, "tie: a, b") || !strings.Contains(out, "best: none (tie") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, row := range []string{"a ", "b "} {
		if !strings.Contains(out, "\n"+row) {
			t.Errorf("no row for %s in\n%s", row, out)
		}
	}
	if got, base := git(t, repo, "rev-parse", "tai-fleet/tie"), git(t, repo, "rev-parse", "main"); got != base {
		t.Errorf("a tie merged something: target at %s, base %s", got, base)
	}
}

// A candidate whose agent crashes is failed, unscored and never picked;
// the other one is.
func TestCompareAgentFails(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	args := scripts(t, pd, map[string]string{"a": writes("x.txt", "one\n"), "b": "steps:\n  - crash: {code: 3}\n"})
	// --approve all: the candidates write files headless.
	r, _, code := compare(t, repo, append(args, "--approve", "all", "--check", "true", "--pick", "best", "do it")...)
	b := r.Candidates[candidate(t, r, "b")]
	if code != 1 || b.Status != "failed" || b.Check != nil || r.Picked != "a" {
		t.Fatalf("exit %d, b %+v, picked %q\n%+v", code, b, r.Picked, r)
	}
}

// A candidate that writes outside --owns is marked and never picked,
// though its diff is the smaller; its work stays on its branch.
func TestCompareOutsideOwns(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	args := scripts(t, pd, map[string]string{"a": writes("src/x.txt", "one\ntwo\n"), "b": writes("other.txt", "one\n")})
	// --approve all: the candidates write files headless.
	r, _, code := compare(t, repo, append(args, "--approve", "all", "--owns", "src/**", "--pick", "best", "do it")...)
	b := r.Candidates[candidate(t, r, "b")]
	if b.OwnsHeld == nil || *b.OwnsHeld || b.Status != "failed" || r.Picked != "a" || code != 1 {
		t.Fatalf("exit %d, b %+v, picked %q\n%+v", code, b, r.Picked, r)
	}
	if got := git(t, repo, "show", b.Branch+":other.txt"); got != "one" {
		t.Errorf("b's work: %q", got)
	}
}

// A check that hangs is killed at --check-timeout, whole tree: the
// candidate scores as failed (timed out), and no process of it is left.
func TestCompareCheckHangs(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	args := scripts(t, pd, map[string]string{"a": writes("x.txt", "one\n"), "b": writes("hang", "yes\n")})
	// --approve all: the candidates write files headless. --check-timeout
	// 2s: the check of b never ends; any short limit shows the kill.
	r, errOut, code := compare(t, repo, append(args, "--approve", "all", "--check", "if test -f hang; then sleep 424242; fi", "--check-timeout", "2s", "do it")...)
	b := r.Candidates[candidate(t, r, "b")]
	if code != 0 || b.Check == nil || b.Check.Passed || !b.Check.TimedOut || r.Best != "a" {
		t.Fatalf("exit %d, b %+v, best %q\n%+v\n%s", code, b.Check, r.Best, r, errOut)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if c, err := os.ReadFile(p); err == nil && strings.Contains(string(c), "424242") {
			t.Errorf("the check's sleep is still running: %s %q", p, c)
		}
	}
}

// The compare killed by SIGKILL while one candidate still works: tai
// compare pick merges the finished one from the saved state.
func TestComparePickAfterCrash(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	args := scripts(t, pd, map[string]string{"a": writes("x.txt", "one\n"), "b": "steps:\n  - text: \"working\"\n  - hang: true\n"})
	// --approve all: the candidates write files headless.
	cmd := tai(repo, append([]string{"compare", "--approve", "all", "--run-id", "crash"}, append(args, "do it")...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 3 && f[1] == "a" && f[2] == "finished" {
			break
		}
	}
	_ = cmd.Process.Kill()
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	_ = cmd.Wait()

	out, errOut, code := runTai(t, repo, "compare", "pick", "crash", "b")
	if code != 2 || !strings.Contains(errOut, "not done") {
		t.Errorf("picking the unfinished b: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runTai(t, repo, "compare", "pick", "crash", "a")
	if code != 0 || !strings.Contains(out, "picked a") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if got := git(t, repo, "show", "tai-fleet/crash:x.txt"); got != "one" {
		t.Errorf("target has %q", got)
	}
}

// Bad input is refused with a clear message and exit 2, before anything
// runs: no run directory is left behind.
func TestCompareBadInput(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	a := filepath.Join(pd, "a.yaml")
	write(t, a, writes("x.txt", "x\n"))
	for _, tc := range []struct {
		name string
		dir  string
		args []string
		want string
	}{
		{"one candidate", repo, []string{"compare", "--script", a, "go"}, "two candidates or more"},
		{"two of one name", repo, []string{"compare", "--script", "x=" + a, "--script", "x=" + a, "go"}, "two candidates are named x"},
		{"no prompt", repo, []string{"compare", "--script", a, "--script", a}, "needs a prompt"},
		{"unknown preset", repo, []string{"compare", "--agents", "nosuch,builtin", "go"}, `unknown agent "nosuch"`},
		{"missing script", repo, []string{"compare", "--script", a, "--script", filepath.Join(pd, "nope.yaml"), "go"}, "nope.yaml"},
		{"not a repository", pd, []string{"compare", "--script", a, "--script", "b=" + a, "go"}, "not in a git repository"},
		{"--pick other", repo, []string{"compare", "--script", a, "--script", "b=" + a, "--pick", "first", "go"}, "--pick takes best"},
		{"pick of no run", repo, []string{"compare", "pick", "nope", "a"}, "there is no run nope"},
		{"pick without agent", repo, []string{"compare", "pick", "nope"}, "RUN AGENT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runTai(t, tc.dir, tc.args...)
			if code != 2 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, want 2 and %q\n%s\n%s", code, tc.want, out, errOut)
			}
		})
	}
	if ents, _ := os.ReadDir(filepath.Join(stateDir, "tai", "fleet")); len(ents) != 0 {
		t.Errorf("refused compares left run directories: %v", ents)
	}
}

// The plan form: a task with compare: runs once per candidate in tai
// fleet run, next to the plan's other tasks, scored and kept; tai compare
// pick merges the chosen one.
func TestPlanCompareThenPick(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	write(t, filepath.Join(pd, "a.yaml"), writes("fix.txt", "a\n"))
	write(t, filepath.Join(pd, "b.yaml"), writes("fix.txt", "b\nand more\n"))
	// policy: the scripts write files headless.
	write(t, filepath.Join(pd, "plan.yaml"), "policy: {approve: all}\ncheck: \"test -f fix.txt\"\ntasks:\n"+
		"  - id: fix\n    prompt: fix it\n    compare: [{id: a, script: a.yaml}, {id: b, script: b.yaml}]\n")
	out, errOut, code := runTai(t, repo, "fleet", "run", "--run-id", "pc", "-o", "json", filepath.Join(pd, "plan.yaml"))
	var s summary
	if err := json.Unmarshal([]byte(out), &s); err != nil || code != 0 || len(s.Tasks) != 2 {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	for _, ts := range s.Tasks {
		if ts.Status != "done" || (ts.ID != "fix-a" && ts.ID != "fix-b") {
			t.Errorf("task %s: %s", ts.ID, ts.Status)
		}
	}
	if got, base := git(t, repo, "rev-parse", s.Target), git(t, repo, "rev-parse", "main"); got != base {
		t.Fatalf("a compare's candidate was merged by the fleet")
	}
	out, errOut, code = runTai(t, repo, "compare", "pick", "pc", "fix-b")
	if code != 0 || git(t, repo, "show", s.Target+":fix.txt") != "b\nand more" {
		t.Fatalf("pick: exit %d\n%s%s", code, out, errOut)
	}
}

// Candidates from commands, as in tai run: NAME=CMD names one, the other
// is named by its place.
func TestCompareAgentCmd(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	write(t, filepath.Join(pd, "a.yaml"), writes("x.txt", "one\n"))
	write(t, filepath.Join(pd, "b.yaml"), writes("y.txt", "one\ntwo\n"))
	// --approve all: the candidates write files headless.
	r, errOut, code := compare(t, repo, "--approve", "all",
		"--agent-cmd", "mine="+taiBin+" agent builtin --script "+filepath.Join(pd, "a.yaml"),
		"--agent-cmd", taiBin+" agent builtin --script "+filepath.Join(pd, "b.yaml"), "do it")
	if code != 0 || len(r.Candidates) != 2 || r.Best != "mine" {
		t.Fatalf("exit %d: %+v\n%s", code, r, errOut)
	}
	if c := r.Candidates[candidate(t, r, "cmd2")]; c.Status != "done" || c.Insertions != 2 {
		t.Errorf("cmd2: %+v", c)
	}
}

// Denials are scored from the run's audit log: under the default policy
// (approve-reads, no terminal) a candidate's write is refused and counted
// against it, and the one that only reads has none.
func TestCompareCountsDenials(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	args := scripts(t, pd, map[string]string{"a": writes("x.txt", "one\n"), "b": "steps:\n  - read: README\n  - text: \"read\"\n"})
	r, _, _ := compare(t, repo, append(args, "do it")...)
	if a, b := r.Candidates[candidate(t, r, "a")], r.Candidates[candidate(t, r, "b")]; a.Denials != 1 || b.Denials != 0 {
		t.Fatalf("denials: a %d (want 1), b %d (want 0)\n%+v", a.Denials, b.Denials, r)
	}
}
