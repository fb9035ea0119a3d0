package realagents

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/e2e/internal/build"
	"github.com/tai-dev/tai/e2e/internal/modelsrv"
)

// candidate is one agent of a compare and the model script it is given.
type candidate struct {
	agent  string
	script string // a path
}

// newCompareWorld is a world for `tai compare`: one HOME and repository,
// and one model server per candidate (its own script, and {{CWD}} the
// candidate's worktree of run, or the repository when run is ""), each
// agent's settings pointing at its own server. It returns the world and
// its environment with tai and every agent's executable first on PATH,
// as for a user who installed them.
func newCompareWorld(t *testing.T, run string, cands []candidate) (*world, []string) {
	t.Helper()
	var w *world
	links := map[string]string{"tai": taiBin}
	for _, c := range cands {
		var a agent
		for _, x := range agents {
			if x.name == c.agent {
				a = x
			}
		}
		exe, version := a.installed(t)
		t.Logf("%s %s: %s", a.name, version, exe)
		links[filepath.Base(exe)] = exe
		cwd := ""
		if run != "" {
			cwd = filepath.Join(".tai", "worktrees", run, c.agent)
		}
		if w == nil {
			w = newWorldAt(t, a, exe, "compare", c.script, cwd)
			continue
		}
		if cwd != "" {
			cwd = filepath.Join(w.repo, cwd)
		}
		srv := modelsrv.Start(t, taiBin, c.script, cwd, filepath.Join(t.TempDir(), c.agent+".model.jsonl"))
		w.moreModels = append(w.moreModels, srv.Pid)
		w.env = append(w.env, a.configure(t, w.paths, srv.URL, "compare")...)
	}
	bin := filepath.Join(w.dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	return w, withPath(w.env, bin)
}

// compareJSON is the part of `tai compare -o json` the tests check.
type compareJSON struct {
	Run        string `json:"run"`
	Status     string `json:"status"`
	ExitCode   int    `json:"exit_code"`
	Target     string `json:"target"`
	Candidates []struct {
		Agent   string `json:"agent"`
		Command string `json:"command"`
		Status  string `json:"status"`
		Check   *struct {
			Passed bool `json:"passed"`
		} `json:"check"`
		Files      int    `json:"files"`
		Insertions int    `json:"insertions"`
		Deletions  int    `json:"deletions"`
		Tokens     int64  `json:"tokens"`
		ElapsedMS  int64  `json:"elapsed_ms"`
		Denials    int    `json:"denials"`
		Branch     string `json:"branch"`
	} `json:"candidates"`
	Best   string `json:"best"`
	Why    string `json:"why"`
	Picked string `json:"picked"`
	Audit  string `json:"audit"`
	Error  string `json:"error"`
}

// Two real agents on one task, each on the model server with a different
// script: qwen writes the right answer, codex a wrong one. tai scores both
// (the check run confined in each worktree, git's diffstat, the usage the
// agents reported), --pick best merges qwen's through the merge queue, and
// tai compare history shows the win.
func TestRealAgentCompare(t *testing.T) {
	need(t)
	const run = "realcompare"
	// --run-id: the model's {{CWD}} is each candidate's worktree, whose
	// path has the run in it (qwen's write_file takes absolute paths).
	w, env := newCompareWorld(t, run, []candidate{
		{"qwen", suiteScript(t, "answer-42.json")},
		{"codex", suiteScript(t, "answer-41.json")},
	})
	// --approve all: the candidates write files, with nobody at a
	// terminal to answer their asks.
	o := runLong(t, w.repo, env, taiBin, "compare", "--agents", "qwen,codex", "--approve", "all", "--run-id", run,
		"--check", "grep -qx 42 answer.txt", "--pick", "best", "-o", "json", "Write six times seven in answer.txt.")
	w.lastStderr = o.Stderr
	var r compareJSON
	if err := json.Unmarshal([]byte(o.Stdout), &r); err != nil {
		t.Fatalf("stdout is not one JSON document (%v), exit %d:\n%s\nstderr:\n%s", err, o.Code, o.Stdout, tail(o.Stderr, 4000))
	}
	if o.Code != 0 || r.ExitCode != 0 || r.Status != "done" || r.Error != "" {
		t.Fatalf("exit %d, JSON %+v\nstderr:\n%s", o.Code, r, tail(o.Stderr, 4000))
	}
	if len(r.Candidates) != 2 {
		t.Fatalf("candidates: %+v", r.Candidates)
	}
	for i, want := range []struct {
		agent  string
		passed bool
		status string
	}{{"qwen", true, "merged"}, {"codex", false, "done"}} {
		c := r.Candidates[i]
		if c.Agent != want.agent || c.Status != want.status || c.Check == nil || c.Check.Passed != want.passed {
			t.Errorf("candidate %d: %+v (check %+v), want %s %s passed=%v", i, c, c.Check, want.agent, want.status, want.passed)
		}
		// Measured by tai: the diffstat of the branch, the wall clock, the
		// audit log (tai's refusal of the self-approving mode each starts
		// in is no denial of the agent's).
		if c.Files != 1 || c.Insertions != 1 || c.Deletions != 0 || c.ElapsedMS <= 0 || c.Denials != 0 {
			t.Errorf("%s's scores: %+v", c.Agent, c)
		}
		// The usage the agent reported over ACP: codex-acp sends
		// usage_update; qwen-code 0.24 sends none (0 tokens).
		if c.Agent == "codex" && c.Tokens <= 0 {
			t.Errorf("codex's tokens: %d", c.Tokens)
		}
		if c.Branch != "tai/"+run+"/"+c.Agent {
			t.Errorf("%s's branch: %q", c.Agent, c.Branch)
		}
	}
	if r.Best != "qwen" || r.Picked != "qwen" {
		t.Errorf("best %q, picked %q (%s); want qwen", r.Best, r.Picked, r.Why)
	}
	show := func(ref string) string {
		b, err := exec.Command("git", "-C", w.repo, "show", ref).Output()
		if err != nil {
			t.Fatalf("git show %s: %v", ref, err)
		}
		return string(b)
	}
	if got := show(r.Target + ":answer.txt"); got != "42\n" {
		t.Errorf("answer.txt on %s = %q, want qwen's", r.Target, got)
	}
	// The loser's work is kept on its branch.
	if got := show("tai/" + run + "/codex:answer.txt"); got != "41\n" {
		t.Errorf("codex's answer.txt = %q", got)
	}
	if st, _ := exec.Command("git", "-C", w.repo, "status", "--porcelain").Output(); strings.TrimSpace(string(st)) != "" {
		t.Errorf("the user's checkout changed: %s", st)
	}
	w.audit = r.Audit
	if t.Failed() {
		b, _ := os.ReadFile(r.Audit)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, `"permission.decision"`) && !strings.Contains(l, `"decision":"allow"`) {
				t.Logf("refused: %s", l)
			}
		}
	}
	if o, err := exec.Command(taiBin, "audit", "verify", r.Audit).CombinedOutput(); err != nil {
		t.Errorf("audit verify: %v\n%s", err, o)
	}
	h := build.Run(t, taiBin, w.repo, env, "compare", "history", "-o", "json")
	var wins []struct {
		Run, Agent, Command string
		CheckPassed         *bool `json:"check_passed"`
		Candidates          int
	}
	if err := json.Unmarshal([]byte(h.Stdout), &wins); err != nil || len(wins) != 1 || wins[0].Run != run || wins[0].Agent != "qwen" ||
		wins[0].CheckPassed == nil || !*wins[0].CheckPassed || wins[0].Candidates != 2 {
		t.Errorf("compare history -o json (%v): %s", err, h.Stdout)
	}
	w.checkNoLeftovers()
}

// The README's compare of three real agents, as written, in a Go project
// whose test depends on map order: claude and codex fix it (codex with
// the smaller diff), qwen's fix fails go test. Each agent has its own
// model server; the scripts edit with relative paths (a shell command, a
// codex patch), since the run's worktrees are named by its id, which tai
// picks.
func TestREADMECompareRealAgents(t *testing.T) {
	need(t)
	w, env := newCompareWorld(t, "", []candidate{
		{"claude", suiteScript(t, "flaky-fix-store.json")},
		{"codex", suiteScript(t, "flaky-fix-test.json")},
		{"qwen", suiteScript(t, "flaky-fix-wrong.json")},
	})
	for name, body := range map[string]string{
		"go.mod":        "module example.com/store\n\ngo 1.24\n",
		"store.go":      storeGo,
		"store_test.go": storeTestGo,
	} {
		writeFile(t, filepath.Join(w.repo, name), body)
	}
	for _, args := range [][]string{{"add", "."}, {"commit", "-q", "-m", "store"}} {
		if out, err := exec.Command("git", append([]string{"-C", w.repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	// GOTOOLCHAIN=local: go test must not fetch a toolchain (no network).
	env = append(env, "GOTOOLCHAIN=local")
	// The confined processes' build cache (tai's, ~/.cache/tai/sandbox)
	// has the standard library built, as after an earlier compare with a
	// Go check: three checks building it at once from nothing take
	// minutes on a busy machine.
	warm := exec.Command("go", "test", "-count=1", "-run", "^$", "./...")
	warm.Dir, warm.Env = w.repo, append(env, "GOCACHE="+filepath.Join(w.home, ".cache", "tai", "sandbox", "go-build"))
	if out, err := warm.CombinedOutput(); err != nil {
		t.Fatalf("go test (warming the build cache): %v\n%s", err, out)
	}
	// --approve all (in the README line): the agents edit and run
	// commands, with nobody at a terminal to answer their asks.
	o := runLong(t, w.repo, env, "/bin/sh", "-c",
		readme(`tai compare --agents claude,codex,qwen --approve all --check "go test ./..." "fix the flaky test in store_test.go"`))
	w.lastStderr = o.Stderr
	t.Logf("the table:\n%s", o.Stdout)
	if o.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", o.Code, o.Stdout, tail(o.Stderr, 6000))
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^AGENT +CHECK +FILES +\+/- +TOKENS +COST +TIME +DENIALS +STATUS$`),
		regexp.MustCompile(`(?m)^claude +pass +1 +\+4 -1 +[1-9][0-9]* .* 0 +done$`),
		regexp.MustCompile(`(?m)^codex +pass +1 +\+3 -1 +[1-9][0-9]* .* 0 +done$`),
		// qwen-code 0.24 reports no usage over ACP: its tokens are 0.
		regexp.MustCompile(`(?m)^qwen +FAIL +1 +\+5 -1 +0 .* 0 +done$`),
		regexp.MustCompile(`(?m)^best: codex passed the check with the smallest diff \(\+/- 4 in 1 file\(s\)\)$`),
		regexp.MustCompile(`(?m)^keep it: tai compare pick compare-\S+ codex$`),
	} {
		if !want.MatchString(o.Stdout) {
			t.Errorf("want %s in:\n%s", want, o.Stdout)
		}
	}
	if st, _ := exec.Command("git", "-C", w.repo, "status", "--porcelain").Output(); strings.TrimSpace(string(st)) != "" {
		t.Errorf("the user's checkout changed: %s", st)
	}
	logs, _ := filepath.Glob(filepath.Join(w.home, ".local", "state", "tai", "fleet", "compare-*", "audit.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("want the compare's audit log, found %v", logs)
	}
	w.audit = logs[0]
	if o, err := exec.Command(taiBin, "audit", "verify", w.audit).CombinedOutput(); err != nil {
		t.Errorf("audit verify: %v\n%s", err, o)
	}
	w.checkNoLeftovers()
}

// runLong runs a command to its end, as build.Run does, with a longer
// guard against a hang: real agents and their checks, several at once on
// a busy shared machine, can take more than its five minutes. Nothing
// asserts on time.
func runLong(t *testing.T, dir string, env []string, bin string, args ...string) build.Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, env
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s: %v", filepath.Base(bin), err)
	}
	return build.Outcome{Stdout: out.String(), Stderr: errb.String(), Code: code}
}

// storeGo and storeTestGo are the README compare's project: TestKeys
// wants the keys sorted, and Keys returns them in map order.
const (
	storeGo = `// Package store keeps named counters.
package store

// Keys returns the counters' names.
func Keys(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
`
	storeTestGo = `package store

import (
	"slices"
	"testing"
)

func TestKeys(t *testing.T) {
	want := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p"}
	m := map[string]int{}
	for i, k := range want {
		m[k] = i
	}
	if got := Keys(m); !slices.Equal(got, want) {
		t.Fatalf("Keys = %v, want %v", got, want)
	}
}
`
)
