package fleet

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/builtin"
	"github.com/tai-dev/tai/exitcode"
)

// TestMain doubles as the built-in agent: the fleet launches
// `<this test binary> agent builtin --script F`.
func TestMain(m *testing.M) {
	if len(os.Args) >= 3 && os.Args[1] == "agent" && os.Args[2] == "builtin" {
		os.Exit(serveBuiltin(os.Args[3:]))
	}
	// The built-in agents the tests start keep their sessions here, as
	// `tai agent builtin` does in the state directory: resumable.
	state, err := os.MkdirTemp("", "tai-fleet-builtin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("TAI_TEST_BUILTIN_STATE", state)
	defer os.RemoveAll(state)
	goleak.VerifyTestMain(m)
}

func serveBuiltin(args []string) int {
	opts := builtin.Options{StateDir: os.Getenv("TAI_TEST_BUILTIN_STATE")}
	if len(args) == 2 && args[0] == "--script" {
		s, err := builtin.LoadScript(args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		opts.Script = s
	}
	if err := builtin.Serve(context.Background(), os.Stdin, os.Stdout, opts); err != nil {
		return 1
	}
	return 0
}

func gitRepo(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, a := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "T"}} {
		run(t, dir, "git", a...)
	}
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "git", "add", "-A")
	run(t, dir, "git", "commit", "-q", "-m", "init")
	return dir
}

func run(t testing.TB, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// fixture writes files (plan and scripts) into dir.
func fixture(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func writeScript(file, content string) string {
	return fmt.Sprintf("steps:\n  - text: \"writing %s\"\n  - write: {path: %s, content: %q}\n", file, file, content)
}

// awaitWorktree is a script's first step: wait until the task other has
// its worktree (a sibling of this task's).
func awaitWorktree(other string) string {
	return fmt.Sprintf("steps:\n  - run: {command: sh, args: [-c, 'until [ -d ../%s ]; do sleep 0.01; done'], ask: false}\n", other)
}

type runOut struct {
	st     *State
	events []Event
	audit  string
}

func runPlan(t testing.TB, repo, planDir string, mutate func(o *Options)) runOut {
	t.Helper()
	p, err := LoadPlan(filepath.Join(planDir, "plan.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log, err := audit.Open(filepath.Join(dir, "audit.jsonl"), audit.Options{Run: "r"})
	if err != nil {
		t.Fatal(err)
	}
	var out runOut
	o := Options{Plan: p, RunID: "r", Dir: dir, Repo: repo, Audit: log, Exe: os.Args[0],
		Progress: func(e Event) { out.events = append(out.events, e) }}
	if mutate != nil {
		mutate(&o)
	}
	st, err := Run(context.Background(), o)
	if cerr := log.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	out.st = st
	b, _ := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
	out.audit = string(b)
	if rep, err := audit.Verify(bytes.NewReader(b)); err != nil || !rep.OK || !rep.Ended {
		t.Fatalf("audit log does not verify: %+v %v", rep, err)
	}
	return out
}

func TestFleetDAGMergesInOrder(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	fixture(t, pd, map[string]string{
		"a.yaml": writeScript("a.txt", "a\n"), "b.yaml": writeScript("b.txt", "b\n"), "c.yaml": writeScript("c.txt", "c\n"),
		"plan.yaml": `name: dag
policy: {approve: all}
tasks:
  - {id: a, script: a.yaml, prompt: "do a"}
  - id: b
    script: b.yaml
    depends_on: [a]
    prompt: "after {{ .Tasks.a.Message }} on {{ .Tasks.a.Branch }}: {{ .Tasks.a.Diff }}"
  - {id: c, script: c.yaml, prompt: "do c", depends_on: [a, b]}
`})
	out := runPlan(t, repo, pd, nil)
	if out.st.ExitCode != 0 {
		t.Fatalf("exit %d: %+v", out.st.ExitCode, out.st.Tasks)
	}
	for _, id := range []string{"a", "b", "c"} {
		if s := out.st.Tasks[id].Status; s != StatusMerged {
			t.Fatalf("%s: %s", id, s)
		}
	}
	// Routed result: b's prompt carried a's message, branch and diff.
	if !strings.Contains(out.audit, `after writing a.txt on tai/r/a: 1 file(s) changed, +1 -0: a.txt`) {
		t.Fatal("b's prompt did not get a's result")
	}
	// Merged in dependency order onto the target, the user's checkout untouched.
	log := run(t, repo, "git", "log", "--format=%s %(trailers:key=Tai-Fleet-Task,valueonly,separator=)", "tai-fleet/r")
	if log != "do c c\nafter writing a.txt on tai/r/a: 1 file(s) changed, +1 -0: a.txt b\ndo a a\ninit" {
		t.Fatalf("log:\n%s", log)
	}
	if st := run(t, repo, "git", "status", "--porcelain"); st != "" || run(t, repo, "git", "rev-parse", "--abbrev-ref", "HEAD") != "main" {
		t.Fatalf("checkout touched: %q", st)
	}
	var got []string
	for _, e := range out.events {
		if e.Kind == "merged" {
			got = append(got, e.Task)
		}
	}
	if strings.Join(got, ",") != "a,b,c" {
		t.Fatalf("merge order %v", got)
	}
	// After a successful run the merged worktrees and branches are gone:
	// no directory, no branch, no record with a stale owner pid.
	if out := run(t, repo, "git", "worktree", "list", "--porcelain"); strings.Count(out, "worktree ") != 1 {
		t.Fatalf("worktrees left:\n%s", out)
	}
	if br := run(t, repo, "git", "branch", "--list", "tai/r/*"); br != "" {
		t.Fatalf("branches left: %s", br)
	}
	if recs, _ := filepath.Glob(filepath.Join(repo, ".git", "tai", "worktrees", "r", "*.json")); len(recs) != 0 {
		t.Fatalf("records left: %v", recs)
	}
	var j bytes.Buffer
	if err := JUnit(&j, *out.st); err != nil {
		t.Fatal(err)
	}
	var suite struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(j.Bytes(), &suite); err != nil || suite.Tests != 3 || suite.Failures != 0 {
		t.Fatalf("junit: %v %+v", err, suite)
	}
}

func TestFleetOutcomes(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string
		wantExit exitcode.Code
		want     map[string]TaskStatus // task → status
		check    func(t *testing.T, repo string, out runOut)
	}{
		{
			name: "merge conflict is reported with its files",
			// Both start from the run's base: each waits for the other's
			// worktree before it writes. (A task that starts after another
			// has merged starts from the merge, and does not conflict.)
			files: map[string]string{
				"x.yaml":    awaitWorktree("y") + writeScript("same.txt", "from x\n")[len("steps:\n"):],
				"y.yaml":    awaitWorktree("x") + writeScript("same.txt", "from y\n")[len("steps:\n"):],
				"plan.yaml": "policy: {approve: all}\nconcurrency: 2\ntasks:\n  - {id: x, script: x.yaml, prompt: x}\n  - {id: y, script: y.yaml, prompt: y}\n",
			},
			wantExit: exitcode.MergeConflict,
			check: func(t *testing.T, repo string, out runOut) {
				// Whichever finished second conflicts.
				first, second := "x", "y"
				if out.st.Tasks["x"].Status == StatusConflict {
					first, second = "y", "x"
				}
				if out.st.Tasks[first].Status != StatusMerged || out.st.Tasks[second].Status != StatusConflict {
					t.Fatalf("statuses %s %s", out.st.Tasks[first].Status, out.st.Tasks[second].Status)
				}
				if f := out.st.Tasks[second].ConflictFiles; len(f) != 1 || f[0] != "same.txt" {
					t.Fatalf("files %v", f)
				}
				// The conflicting work is kept on its branch.
				if run(t, repo, "git", "show", "tai/r/"+second+":same.txt") != "from "+second {
					t.Fatal("branch lost")
				}
			},
		},
		{
			name: "a task that changes files outside its owns is not merged, its work kept",
			files: map[string]string{
				"in.yaml": writeScript("docs/guide.md", "guide\n"), "out.yaml": writeScript("src/main.go", "package main\n"),
				"plan.yaml": "policy: {approve: all}\ntasks:\n  - {id: in, script: in.yaml, prompt: x, owns: [docs/]}\n  - {id: out, script: out.yaml, prompt: y, owns: [\"docs/**\", \"*.md\"]}\n",
			},
			wantExit: exitcode.AgentError,
			want:     map[string]TaskStatus{"in": StatusMerged, "out": StatusFailed},
			check: func(t *testing.T, repo string, out runOut) {
				if r := out.st.Tasks["out"].Reason; !strings.Contains(r, "changed files outside its owns: src/main.go") {
					t.Fatalf("reason %q", r)
				}
				if run(t, repo, "git", "show", "tai/r/out:src/main.go") != "package main" {
					t.Fatal("the work outside owns was lost")
				}
			},
		},
		{
			name: "a reservation the fleet cannot give is refused",
			files: map[string]string{
				"s.yaml":    writeScript("s.txt", "s\n"),
				"plan.yaml": "policy: {approve: all}\nbudget: {tokens: 1000}\ntasks:\n  - {id: small, script: s.yaml, prompt: s, budget: {tokens: 400}}\n  - {id: big, script: s.yaml, prompt: s, budget: {tokens: 5000}}\n",
			},
			wantExit: exitcode.BudgetExceeded,
			want:     map[string]TaskStatus{"small": StatusMerged, "big": StatusRefused},
			check: func(t *testing.T, repo string, out runOut) {
				if r := out.st.Tasks["big"].Reason; !strings.Contains(r, "needs 5000 tokens; the fleet has 1000 of 1000 left") {
					t.Fatalf("reason %q", r)
				}
				if !strings.Contains(out.audit, `"kind":"budget"`) {
					t.Fatal("no budget audit entry")
				}
			},
		},
		{
			name: "the hard limit stops the turn and keeps the partial work",
			files: map[string]string{
				// Writes, then reports a cost over the limit, then would work
				// for an hour: the budget stop cancels it.
				"spend.yaml": "steps:\n  - write: {path: partial.txt, content: \"half\\n\"}\n  - usage: {used: 10, size: 100, cost: 2}\n  - delay: 3600\n  - write: {path: never.txt, content: x}\n",
				"plan.yaml":  "policy: {approve: all}\nbudget: {cost: 10, soft: 0.1}\ntasks:\n  - {id: spend, script: spend.yaml, prompt: go, budget: {cost: 1}}\n  - {id: after, script: spend.yaml, prompt: go, depends_on: [spend]}\n",
			},
			wantExit: exitcode.BudgetExceeded,
			want:     map[string]TaskStatus{"spend": StatusBudget, "after": StatusSkipped},
			check: func(t *testing.T, repo string, out runOut) {
				wt := out.st.Tasks["spend"].Worktree
				if b, err := os.ReadFile(filepath.Join(wt, "partial.txt")); err != nil || string(b) != "half\n" {
					t.Fatalf("partial work lost: %v", err)
				}
				if _, err := os.Stat(filepath.Join(wt, "never.txt")); err == nil {
					t.Fatal("the turn was not stopped")
				}
				var soft bool
				for _, e := range out.events {
					soft = soft || (e.Kind == "budget" && strings.Contains(e.Detail, "soft limit"))
				}
				if !soft {
					t.Fatal("no soft-threshold event")
				}
			},
		},
		{
			name: "an agent's question goes to the answerer, and its answer back as the next prompt",
			files: map[string]string{
				"answerer.yaml": "steps:\n  - text: \"Use blue.\"\n",
				"plan.yaml": `policy: {approve: all}
answerer: {script: answerer.yaml, prompt: "You know the design."}
tasks:
  - id: paint
    agent_cmd: "sh -c 'if [ -e asked ]; then exec \"$0\" agent builtin --script done.yaml; else exec \"$0\" agent builtin --script ask.yaml; fi' EXE"
    prompt: paint it
`,
				"ask.yaml":  "steps:\n  - write: {path: asked, content: \"1\\n\"}\n  - text: \"Which colour should I use?\"\n",
				"done.yaml": "steps:\n  - write: {path: colour.txt, content: \"blue\\n\"}\n  - text: \"Painted it blue.\"\n",
			},
			wantExit: 0,
			want:     map[string]TaskStatus{"paint": StatusMerged},
			check: func(t *testing.T, repo string, out runOut) {
				ts := out.st.Tasks["paint"]
				if len(ts.Questions) != 1 || ts.Questions[0].Answer != "Use blue." || ts.Questions[0].DecidedBy != "answerer" {
					t.Fatalf("questions %+v", ts.Questions)
				}
				if !strings.Contains(out.audit, `"decided_by":"answerer"`) || !strings.Contains(out.audit, `Answer (from the answerer):\nUse blue.`) {
					t.Fatal("answer not audited or not routed")
				}
				if ts.Usage.Turns != 3 { // ask, answerer, continue
					t.Fatalf("turns %d", ts.Usage.Turns)
				}
				// The agent's session went on: it got the answer alone.
				if strings.Contains(out.audit, `You asked:`) {
					t.Fatal("the follow-up started a new session with the whole task, though the agent could resume")
				}
			},
		},
		{
			name: "an agent's form elicitation goes to the answerer, whose JSON answer fills it in",
			files: map[string]string{
				"answerer.yaml": "steps:\n  - text: \"Here: {\\\"colour\\\": \\\"blue\\\", \\\"coats\\\": 2}\"\n",
				"plan.yaml":     "policy: {approve: all}\nanswerer: {script: answerer.yaml}\ntasks:\n  - {id: form, script: form.yaml, prompt: go}\n",
				"form.yaml": `steps:
  - elicit_form:
      message: "Which colour?"
      schema:
        properties:
          colour: {type: string, enum: [red, blue]}
          coats: {type: integer, minimum: 1}
        required: [colour]
  - write: {path: done.txt, content: "done\n"}
`,
			},
			wantExit: 0,
			want:     map[string]TaskStatus{"form": StatusMerged},
			check: func(t *testing.T, repo string, out runOut) {
				if !strings.Contains(out.audit, `"kind":"elicitation.answer"`) || !strings.Contains(out.audit, `"content":{"coats":2,"colour":"blue"},"decided_by":"answerer"`) {
					t.Fatalf("the answerer's answer is not audited:\n%s", out.audit)
				}
				if !strings.Contains(out.audit, `Elicitation accepted: coats=2, colour=\"blue\"`) && !strings.Contains(out.st.Tasks["form"].Message, `colour="blue"`) {
					t.Fatal("the agent did not get the answer")
				}
			},
		},
		{
			name: "an answer whose session cannot be resumed goes into a new one with the whole task",
			files: map[string]string{
				"answerer.yaml": "steps:\n  - text: \"Use blue.\"\n",
				"plan.yaml": `policy: {approve: all}
answerer: {script: answerer.yaml}
tasks:
  - id: paint
    agent_cmd: "sh -c 'if [ -e asked ]; then TAI_TEST_BUILTIN_STATE=\"$TAI_TEST_BUILTIN_STATE/elsewhere\" exec \"$0\" agent builtin --script done.yaml; else exec \"$0\" agent builtin --script ask.yaml; fi' EXE"
    prompt: paint it
`,
				"ask.yaml":  "steps:\n  - write: {path: asked, content: \"1\\n\"}\n  - text: \"Which colour should I use?\"\n",
				"done.yaml": "steps:\n  - write: {path: colour.txt, content: \"blue\\n\"}\n  - text: \"Painted it blue.\"\n",
			},
			wantExit: 0,
			want:     map[string]TaskStatus{"paint": StatusMerged},
			check: func(t *testing.T, repo string, out runOut) {
				var retried bool
				for _, e := range out.events {
					retried = retried || e.Kind == "retry" && strings.Contains(e.Detail, "could not be resumed")
				}
				if !retried || !strings.Contains(out.audit, `You asked:\nWhich colour should I use?`) {
					t.Fatal("no fallback to a new session with the whole task")
				}
			},
		},
		{
			name: "headless, a question nobody can answer blocks the task with a reason",
			files: map[string]string{
				"answerer.yaml": "steps:\n  - text: \"CANNOT_ANSWER\"\n",
				"ask.yaml":      "steps:\n  - text: \"Should I delete the database?\"\n",
				"plan.yaml":     "policy: {approve: all}\nanswerer: {script: answerer.yaml}\ntasks:\n  - {id: q, script: ask.yaml, prompt: go}\n",
			},
			wantExit: exitcode.AgentError,
			want:     map[string]TaskStatus{"q": StatusBlocked},
			check: func(t *testing.T, repo string, out runOut) {
				if r := out.st.Tasks["q"].Reason; !strings.Contains(r, `asked "Should I delete the database?"`) || !strings.Contains(r, "no terminal to ask a human") {
					t.Fatalf("reason %q", r)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo, pd := gitRepo(t), t.TempDir()
			files := map[string]string{}
			for k, v := range tt.files {
				v = strings.ReplaceAll(v, "EXE", os.Args[0])
				v = strings.ReplaceAll(v, "done.yaml", filepath.Join(pd, "done.yaml"))
				v = strings.ReplaceAll(v, "--script ask.yaml", "--script "+filepath.Join(pd, "ask.yaml"))
				files[k] = v
			}
			fixture(t, pd, files)
			out := runPlan(t, repo, pd, nil)
			if exitcode.Code(out.st.ExitCode) != tt.wantExit {
				t.Errorf("exit %d, want %d", out.st.ExitCode, tt.wantExit)
			}
			for id, s := range tt.want {
				if got := out.st.Tasks[id]; got.Status != s {
					t.Errorf("%s: %s (%s), want %s", id, got.Status, got.Reason, s)
				}
			}
			if !t.Failed() && tt.check != nil {
				tt.check(t, repo, out)
			}
		})
	}
}

func TestPlanValidation(t *testing.T) {
	tests := []struct {
		name, plan string
		want       []string
	}{
		{"unknown key with its line and a suggestion", "tasks:\n  - id: a\n    promt: x\n", []string{`plan.yaml:3: task 1 "a": unknown key "promt" (did you mean "prompt"?)`}},
		{"cycle", "tasks:\n  - {id: a, prompt: x, depends_on: [b]}\n  - {id: b, prompt: x, depends_on: [a]}\n", []string{"plan.yaml:2: dependency cycle: a -> b -> a"}},
		{"missing dependency", "tasks:\n  - {id: a, prompt: x}\n  - {id: b, prompt: x, depends_on: [aa]}\n", []string{`plan.yaml:3: task "b": depends_on "aa": no such task (did you mean "a"?)`}},
		{"template uses a non-dependency", "tasks:\n  - {id: a, prompt: x}\n  - {id: b, prompt: \"{{ .Tasks.a.Message }}\"}\n", []string{`plan.yaml:3: task "b": prompt uses the result of "a", which is not in its depends_on`}},
		{"shared worktree needs ordering", "tasks:\n  - {id: a, prompt: x}\n  - {id: b, prompt: x, worktree: \"shared:a\"}\n", []string{`needs "a" in its depends_on`}},
		{"duplicate id", "tasks:\n  - {id: a, prompt: x}\n  - {id: a, prompt: y}\n", []string{`plan.yaml:3: task id "a" is used twice (first at line 2)`}},
		{"bad template", "tasks:\n  - {id: a, prompt: \"{{ .Tasks\"}\n", []string{"prompt template"}},
		{"no prompt", "tasks:\n  - {id: a}\n", []string{"exactly one of prompt and prompt_file"}},
		{"owns outside the workspace", "tasks:\n  - {id: a, prompt: x, owns: [\"../other/**\"]}\n", []string{`plan.yaml:2: task "a": owns: path pattern "../other/**" leaves the workspace`}},
		{"bad duration", "budget: {wall_time: soon}\ntasks:\n  - {id: a, prompt: x}\n", []string{`duration "soon"`}},
		{"unknown agent, at its task's line", "tasks:\n  - {id: a, prompt: x}\n  - {id: b, prompt: x, agent: claud}\n", []string{`plan.yaml:3: task "b": unknown agent "claud"`}},
		{"unknown default agent", "defaults: {agent: nope}\ntasks:\n  - {id: a, prompt: x}\n", []string{`plan.yaml:1: defaults: unknown agent "nope"`}},
		{"unknown driver, at its task's line", "tasks:\n  - {id: a, prompt: x}\n  - {id: b, prompt: x, driver: telepathy}\n", []string{`plan.yaml:3: task "b": unknown driver "telepathy" (drivers: acp, stream-json, pty, a2a)`}},
		{"unknown default driver", "defaults: {driver: xyz}\ntasks:\n  - {id: a, prompt: x}\n", []string{`plan.yaml:1: defaults: unknown driver "xyz"`}},
		{"missing script file", "tasks:\n  - {id: a, prompt: x}\n  - {id: b, prompt: x, script: missing.yaml}\n", []string{`plan.yaml:3: task "b": script: `, "missing.yaml"}},
		{"bad task policy, at its policy's line", "tasks:\n  - id: a\n    prompt: x\n    policy: {approve: sometimes}\n", []string{`plan.yaml:4: task "a": policy: `, "sometimes"}},
		{"bad task policy rule", "tasks:\n  - id: a\n    prompt: x\n    policy:\n      allow: [\"explode:*\"]\n", []string{`plan.yaml:4: task "a": policy: `}},
		{"bad plan policy", "policy: {non_interactive: maybe}\ntasks:\n  - {id: a, prompt: x}\n", []string{`plan.yaml:1: policy: `, "maybe"}},
		{"bad check_sandbox", "check: make test\ncheck_sandbox: no\ntasks:\n  - {id: a, prompt: x}\n", []string{`plan.yaml:2: check_sandbox "no": the only value is off`}},
		{"check_sandbox off", "check: make test\ncheck_sandbox: off\ntasks:\n  - {id: a, prompt: x}\n", nil},
		{"badly indented key in a task, at its line", "name: p\ntasks:\n  - id: a\n    prompt: x\n   agent: builtin\n", []string{`plan.yaml:5: did not find expected '-' indicator (in the block that starts at line 3)`}},
		{"badly indented key in a task's policy, at its line", "tasks:\n  - id: a\n    prompt: x\n    policy:\n      allow:\n        - read\n       deny: [x]\n", []string{`plan.yaml:7: did not find expected key (in the block that starts at line 5)`}},
		{"unclosed flow list, at its line", "tasks:\n  - id: a\n    prompt: [x\n", []string{`plan.yaml:3: did not find expected ',' or ']'`}},
		{"valid", "budget: {wall_time: 5m}\ntasks:\n  - {id: a, prompt: x}\n  - {id: b, prompt: \"{{ .Tasks.a.Diff }}\", depends_on: [a], worktree: \"shared:a\"}\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePlan([]byte(tt.plan), "plan.yaml")
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error:\n%v\nwant it to contain:\n%s", err, w)
				}
			}
		})
	}
}

// The example in Plan's doc comment is a valid plan.
func TestPlanDocExampleParses(t *testing.T) {
	src, err := os.ReadFile("plan.go")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(src), "// Plan is a fleet plan file (YAML):\n")
	if !ok {
		t.Fatal("no doc comment")
	}
	var yml strings.Builder
	for _, l := range strings.Split(rest, "\n") {
		body, ok := strings.CutPrefix(l, "//\t")
		if !ok {
			if l == "//" && yml.Len() > 0 {
				break
			}
			continue
		}
		yml.WriteString(body + "\n")
	}
	if yml.Len() == 0 {
		t.Fatal("no example found")
	}
	if _, err := ParsePlan([]byte(yml.String()), filepath.Join(t.TempDir(), "plan.yaml")); err != nil {
		t.Fatalf("the doc comment's plan does not parse:\n%v\n%s", err, yml.String())
	}
}

func TestMeter(t *testing.T) {
	var soft []string
	m := NewMeter(Limits{Tokens: 100, Turns: 10}, 2, Usage{}, func(dim string, used, limit float64) {
		soft = append(soft, fmt.Sprintf("%s %g/%g", dim, used, limit))
	})
	ctx := context.Background()
	a, err := m.Reserve(ctx, "a", Limits{Tokens: 60})
	if err != nil || a.Limits.Turns != 5 { // unset dimension: an equal share
		t.Fatalf("%v %+v", err, a.Limits)
	}
	if _, err := m.Reserve(ctx, "huge", Limits{Tokens: 101}); !errors.Is(err, ErrBudget) {
		t.Fatalf("huge: %v", err)
	}
	// b fits only once a gives back what it did not use: it waits.
	got := make(chan error, 1)
	go func() {
		b, err := m.Reserve(ctx, "b", Limits{Tokens: 50})
		if err == nil {
			b.Release(Usage{})
		}
		got <- err
	}()
	if err := a.Update(Usage{Tokens: 85}); !errors.Is(err, ErrBudget) {
		t.Fatalf("a over its own limit: %v", err)
	}
	if len(soft) != 1 || soft[0] != "tokens 85/100" {
		t.Fatalf("soft %v", soft)
	}
	a.Release(Usage{Tokens: 40})
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if u := m.Used(); u.Tokens != 40 {
		t.Fatalf("used %+v", u)
	}
	if _, err := m.Reserve(ctx, "c", Limits{Tokens: 61}); !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), "the fleet has 60 of 100 left") {
		t.Fatalf("c: %v", err)
	}
}
