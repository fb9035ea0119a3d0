package fleet_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fleetFixture writes a plan and its scripts (name → content) into a new
// directory and returns the plan's path.
func fleetFixture(t *testing.T, files map[string]string) string {
	t.Helper()
	pd := t.TempDir()
	for name, content := range files {
		write(t, filepath.Join(pd, name), content)
	}
	return filepath.Join(pd, "plan.yaml")
}

func decodeSummary(t *testing.T, out string) summary {
	t.Helper()
	var s summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return s
}

// Every commit a fleet makes is named from its task's prompt (its first
// line, as a commit subject) and carries the run and the task in trailers.
func TestFleetCommitNamedFromPrompt(t *testing.T) {
	repo := gitRepo(t)
	plan := fleetFixture(t, map[string]string{
		"a.yaml":    "steps:\n  - write: {path: a.txt, content: \"a\\n\"}\n  - text: done\n",
		"plan.yaml": "policy: {approve: all}\ntasks:\n  - id: a\n    script: a.yaml\n    prompt: |\n\n      Add a greeting file   for the README.\n      It says hello.\n", // policy approve: all: the task writes files, which the default approve-reads denies.
	})
	o, e, code := runTai(t, repo, "fleet", "run", "--run-id", "named", "-o", "json", plan)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, o, e)
	}
	s := decodeSummary(t, o)
	if subj := git(t, repo, "log", "-1", "--format=%s", s.Target); subj != "Add a greeting file for the README" {
		t.Fatalf("commit subject %q, want the prompt's first line", subj)
	}
	trailers := git(t, repo, "log", "-1", "--format=%(trailers)", s.Target)
	if !strings.Contains(trailers, "Tai-Fleet-Run: named") || !strings.Contains(trailers, "Tai-Fleet-Task: a") {
		t.Fatalf("trailers:\n%s", trailers)
	}
}

// A task that fails before it changes anything leaves its worktree (kept
// for a resume) with no commit of its own: tai worktree list calls it
// untouched, not merged.
func TestWorktreeListUntouched(t *testing.T) {
	repo := gitRepo(t)
	plan := fleetFixture(t, map[string]string{
		"c.yaml":    "steps:\n  - crash: {code: 3}\n",
		"plan.yaml": "policy: {approve: all}\ntasks:\n  - {id: c, script: c.yaml, prompt: go}\n", // policy approve: all lets the task run unattended; the untouched worktree is the subject.
	})
	if o, e, code := runTai(t, repo, "fleet", "run", "--run-id", "untouched", plan); code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, o, e)
	}
	o, e, code := runTai(t, repo, "worktree", "list")
	if code != 0 {
		t.Fatalf("worktree list: exit %d\n%s", code, e)
	}
	var row string
	for l := range strings.Lines(o) {
		if strings.Contains(l, "tai/untouched/c") {
			row = l
		}
	}
	if !strings.HasPrefix(row, "untouched ") {
		t.Fatalf("the worktree with no commit of its own is not untouched:\n%s", o)
	}
}

// A full disk as the first merge is recorded: the fleet stops, its state
// says the task is not merged, and gc then removes the merged branch;
// resume finds the merge in the target's history (the commit's trailers)
// and records it, without running the task again.
func TestResumeAfterLostMergeRecord(t *testing.T) {
	repo := gitRepo(t)
	plan := fleetFixture(t, map[string]string{
		"a.yaml":    "steps:\n  - write: {path: a.txt, content: \"a\\n\"}\n  - text: done\n",
		"b.yaml":    "steps:\n  - write: {path: b.txt, content: \"b\\n\"}\n  - text: done\n",
		"plan.yaml": "policy: {approve: all}\nconcurrency: 1\ntasks:\n  - {id: a, script: a.yaml, prompt: add a}\n  - {id: b, script: b.yaml, prompt: add b, depends_on: [a]}\n", // policy approve: all: the task writes files, which the default approve-reads denies.
	})
	cmd := tai(repo, "fleet", "run", "--run-id", "full", plan)
	// The test hook (tai_testhooks builds only) fails every state write
	// from the one that records the first merge on.
	cmd.Env = append(cmd.Env, "TAI_TEST_FLEET_DISK_FULL=merged")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "state could not be saved") {
		t.Fatalf("%v, want the failed state write\n%s", err, out)
	}
	if files := git(t, repo, "ls-tree", "--name-only", "tai-fleet/full"); !strings.Contains(files, "a.txt") {
		t.Fatalf("a was not merged before the disk filled:\n%s", files)
	}
	// The state on disk does not know a merged: make it say a was running
	// when the run stopped, as a kill between the merge and its record
	// would leave it too.
	statePath := filepath.Join(stateDir, "tai", "fleet", "full", "state.json")
	b, err := os.ReadFile(statePath)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	a := st["tasks"].(map[string]any)["a"].(map[string]any)
	if a["status"] == "merged" {
		t.Fatalf("the state recorded a's merge despite the full disk:\n%s", b)
	}
	a["status"] = "running"
	b, _ = json.Marshal(st)
	write(t, statePath, string(b))
	// Freeing space, the user lets tai worktree gc remove what is merged:
	// a's worktree and branch go, its commit in the target is all that
	// says a merged.
	if o, e, code := runTai(t, repo, "worktree", "gc"); code != 0 || !strings.Contains(o, "removed ") {
		t.Fatalf("worktree gc: exit %d\n%s\n%s", code, o, e)
	}

	o, e, code := runTai(t, repo, "fleet", "resume", "full", "-o", "json")
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", code, o, e)
	}
	s := decodeSummary(t, o)
	for _, ts := range s.Tasks {
		if ts.Status != "merged" || ts.Attempts != 1 {
			t.Errorf("task %s: %s after %d attempt(s), want merged after 1", ts.ID, ts.Status, ts.Attempts)
		}
	}
	if n := taskCommits(t, repo, s.Target, "a"); n != 1 {
		t.Fatalf("a's work is on the target %d times", n)
	}
}

// taskCommits counts the commits on branch that carry task's trailer.
func taskCommits(t *testing.T, repo, branch, task string) int {
	t.Helper()
	n := 0
	for _, l := range strings.Fields(git(t, repo, "log", "--format=%(trailers:key=Tai-Fleet-Task,valueonly)", branch)) {
		if l == task {
			n++
		}
	}
	return n
}

// The fleet commands' arguments: a run works in the current directory's
// repository wherever its plan is; resume takes -C; a run that does not
// exist, or is refused before it starts, leaves no directory; a missing
// argument is named.
func TestFleetArgs(t *testing.T) {
	repo := gitRepo(t)
	plans := t.TempDir()
	plan := filepath.Join(plans, "x.yaml")
	write(t, filepath.Join(plans, "a.yaml"), "steps:\n  - write: {path: a.txt, content: \"a\\n\"}\n  - text: done\n")
	// policy approve: all: the task writes files, which the default approve-reads denies.
	write(t, plan, "policy: {approve: all}\ntasks:\n  - {id: a, script: a.yaml, prompt: add a}\n")
	fleetDir := filepath.Join(stateDir, "tai", "fleet")
	runs := func() []string {
		es, _ := os.ReadDir(fleetDir)
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		return names
	}

	// The plan's directory is no repository: the cwd's is used.
	o, e, code := runTai(t, repo, "fleet", "run", "--run-id", "cwd", "-o", "json", plan)
	if code != 0 {
		t.Fatalf("run from the repository: exit %d\n%s\n%s", code, o, e)
	}
	if files := git(t, repo, "ls-tree", "--name-only", decodeSummary(t, o).Target); !strings.Contains(files, "a.txt") {
		t.Fatalf("a.txt not merged in the cwd's repository:\n%s", files)
	}
	// Resume with -C from elsewhere.
	if o, e, code := runTai(t, plans, "fleet", "resume", "-C", repo, "cwd", "-o", "json"); code != 0 || decodeSummary(t, o).Status != "done" {
		t.Fatalf("resume -C: exit %d\n%s\n%s", code, o, e)
	}
	// -C naming another repository than the run's is refused.
	other := t.TempDir()
	git(t, other, "init", "-q")
	if _, e, code := runTai(t, plans, "fleet", "resume", "-C", other, "cwd"); code != 2 || !strings.Contains(e, "belongs to the repository") {
		t.Fatalf("resume -C another repository: exit %d\n%s", code, e)
	}

	before := runs()
	for _, c := range []struct {
		name string
		dir  string
		args []string
		want string
	}{
		{"resume of no run", repo, []string{"fleet", "resume", "nosuch"}, "there is no fleet run nosuch"},
		{"run outside a repository", plans, []string{"fleet", "run", "--run-id", "refused", plan}, "is not in a git repository"},
		{"run without a plan", repo, []string{"fleet", "run"}, "fleet run needs a plan file"},
		{"resume without a run", repo, []string{"fleet", "resume"}, "fleet resume needs the run to resume"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, e, code := runTai(t, c.dir, c.args...)
			if code != 2 || !strings.Contains(e, c.want) || strings.Contains(e, "accepts 1 arg") {
				t.Fatalf("exit %d, want 2 saying %q:\n%s", code, c.want, e)
			}
		})
	}
	if after := runs(); strings.Join(after, " ") != strings.Join(before, " ") {
		t.Fatalf("refused runs left directories: %v, was %v", after, before)
	}
}

// 4 tasks at -j 4 share 4000 tokens (1000 each). Each reports 300, 600,
// 900, and is cancelled there (its next update would pass its share); it
// ignores the cancel and reports 1200. Past its share it is killed at
// once, though the cancel grace is an hour: the fleet overshoots by at
// most one update per running task, and each task's reason says where its
// limit comes from.
func TestBudgetKillsAgentsThatIgnoreTheCancel(t *testing.T) {
	repo := gitRepo(t)
	files := map[string]string{}
	// policy approve: all lets the tasks run unattended; the budget is the subject.
	plan := "policy: {approve: all}\nconcurrency: 4\nbudget: {tokens: 4000}\ntasks:\n"
	for i := range 4 {
		files[fmt.Sprintf("t%d.yaml", i)] = fmt.Sprintf("steps:\n  - write: {path: t%d.txt, content: \"x\\n\"}\n"+
			"  - usage: {used: 300, size: 100000}\n  - usage: {used: 600, size: 100000}\n  - usage: {used: 900, size: 100000}\n"+
			"  - spend_after_cancel: {used: 1200, size: 100000}\n", i)
		plan += fmt.Sprintf("  - {id: t%d, script: t%d.yaml, prompt: go}\n", i, i)
	}
	files["plan.yaml"] = plan
	// The grace outlives any test: only the kill at the budget ends these
	// agents. The deadline below turns a hang into a failure; it
	// synchronises nothing.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := tai(repo, "fleet", "run", "--run-id", "spend", "--cancel-grace", "1h", "-o", "json", fleetFixture(t, files))
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	stop := context.AfterFunc(ctx, func() { _ = cmd.Process.Kill() })
	defer stop()
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the fleet waited for the cancel grace instead of killing the agents over budget\n%s", e.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 6 {
		t.Fatalf("%v, want exit 6\n%s\n%s", err, o.String(), e.String())
	}
	var s struct {
		Usage struct{ Tokens int64 } `json:"usage"`
		Tasks []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
			Reason string `json:"reason"`
			Usage  struct{ Tokens int64 }
		} `json:"tasks"`
	}
	if err := json.Unmarshal(o.Bytes(), &s); err != nil {
		t.Fatalf("%v\n%s", err, o.String())
	}
	for _, ts := range s.Tasks {
		if ts.Status != "budget" || ts.Usage.Tokens != 1200 {
			t.Errorf("%s: %s after %d tokens, want stopped at its budget after 1200", ts.ID, ts.Status, ts.Usage.Tokens)
		}
		if !strings.Contains(ts.Reason, "its limit is 1000: its share of the fleet's 4000 tokens over the concurrency (-j 4)") {
			t.Errorf("%s: the reason does not explain the share: %s", ts.ID, ts.Reason)
		}
	}
	// cap.md's bound: the limit plus one update (300) per running task.
	if bound := int64(4000 + 4*300); s.Usage.Tokens > bound {
		t.Errorf("the fleet used %d tokens, over the bound %d", s.Usage.Tokens, bound)
	}
}

// A merge conflict (exit 7) says the next step: resolve in the task's
// worktree, then resume; done as it says, the resume merges the task
// without running its agent again.
func TestConflictSaysTheNextStep(t *testing.T) {
	repo := gitRepo(t)
	// policy approve: all: the task writes files, which the default approve-reads denies; the conflict is the subject.
	files := map[string]string{"plan.yaml": "policy: {approve: all}\ntasks:\n  - {id: x, script: x.yaml, prompt: x}\n  - {id: y, script: y.yaml, prompt: y}\n"}
	// Each waits for the other's worktree before it writes, so that both
	// start from the run's base whatever the machine's load.
	for id, other := range map[string]string{"x": "y", "y": "x"} {
		files[id+".yaml"] = fmt.Sprintf("steps:\n  - run: {command: sh, args: [-c, 'until [ -d ../%s ]; do sleep 0.01; done'], ask: false}\n  - write: {path: same.txt, content: \"from %s\\n\"}\n", other, id)
	}
	o, e, code := runTai(t, repo, "fleet", "run", "--run-id", "conf", fleetFixture(t, files))
	if code != 7 {
		t.Fatalf("exit %d, want 7\n%s\n%s", code, o, e)
	}
	m := regexp.MustCompile(`(?m)^next: resolve task ([xy])'s conflict in its worktree \(cd (\S+) && git rebase tai-fleet/conf, .*\), then: tai fleet resume conf$`).FindStringSubmatch(o)
	if m == nil {
		t.Fatalf("no next step after the conflict:\n%s\n%s", o, e)
	}
	loser, wt := m[1], m[2]
	// Done as it says.
	cmd := exec.Command("git", "rebase", "tai-fleet/conf")
	cmd.Dir = wt
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("the rebase did not conflict:\n%s", out)
	}
	write(t, filepath.Join(wt, "same.txt"), "from x and y\n")
	git(t, wt, "add", "same.txt")
	git(t, wt, "-c", "core.editor=true", "rebase", "--continue")

	o, e, code = runTai(t, repo, "fleet", "resume", "conf", "-o", "json")
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", code, o, e)
	}
	for _, ts := range decodeSummary(t, o).Tasks {
		if ts.Status != "merged" || ts.Attempts != 1 {
			t.Errorf("task %s: %s after %d attempt(s), want merged after 1", ts.ID, ts.Status, ts.Attempts)
		}
	}
	if got := git(t, repo, "show", "tai-fleet/conf:same.txt"); got != "from x and y" {
		t.Fatalf("same.txt on the target: %q (loser %s)", got, loser)
	}
}

// Ctrl-C on a fleet says how to go on: tai fleet resume RUN.
func TestInterruptSaysResume(t *testing.T) {
	repo := gitRepo(t)
	plan := fleetFixture(t, map[string]string{
		"slow.yaml": "steps:\n  - write: {path: s.txt, content: \"s\\n\"}\n  - delay: 3600\n",
		"plan.yaml": "policy: {approve: all}\ntasks:\n  - {id: slow, script: slow.yaml, prompt: go}\n", // policy approve: all: the task writes files, which the default approve-reads denies.
	})
	cmd := tai(repo, "fleet", "run", "--run-id", "intr", plan)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var e bytes.Buffer
	cmd.Stderr = &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Progress lines on a pipe: interrupt once the task has started.
	sc := bufio.NewScanner(stdout)
	var out strings.Builder
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), " started ") {
			_ = cmd.Process.Signal(syscall.SIGINT)
			break
		}
	}
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("%v, want exit 130\n%s\n%s", err, out.String(), e.String())
	}
	if !regexp.MustCompile(`(?m)^next: tai fleet resume intr$`).MatchString(out.String()) {
		t.Fatalf("no resume hint after Ctrl-C:\n%s\n%s", out.String(), e.String())
	}
}

// The plan tai fleet plan saves runs as its hint says, with no terminal
// and the default sandbox: its policy lets the task work.
func TestFleetPlanRunsAsItSays(t *testing.T) {
	repo := gitRepo(t)
	o, e, code := runTai(t, repo, "fleet", "plan", "--out", "plan.yaml", "add a greeting")
	if code != 0 {
		t.Fatalf("plan: exit %d\n%s\n%s", code, o, e)
	}
	m := regexp.MustCompile(`then run: (tai fleet run \S+)`).FindStringSubmatch(o)
	if m == nil {
		t.Fatalf("no command to run:\n%s", o)
	}
	args := strings.Fields(m[1])[1:] // as it says, from where it was said
	o, e, code = runTai(t, repo, append(args, "-o", "json")...)
	if code != 0 {
		b, _ := os.ReadFile(filepath.Join(repo, "plan.yaml"))
		t.Fatalf("%s: exit %d\n%s\n%s\n--- plan:\n%s", m[1], code, o, e, b)
	}
	if s := decodeSummary(t, o); s.Counts["merged"] != 1 {
		t.Fatalf("summary %+v", s)
	}
}

// The summary and tai fleet status fit 80 columns, and at 160 the status
// table shows whole task ids ($COLUMNS, the width of a pipe's reader).
func TestFleetOutputFitsTheWidth(t *testing.T) {
	repo := gitRepo(t)
	id := "lint-the-whole-repository-and-fix-it"
	plan := fleetFixture(t, map[string]string{
		"a.yaml":    "steps:\n  - write: {path: a.txt, content: \"a\\n\"}\n  - text: done\n",
		"plan.yaml": "policy: {approve: all}\ntasks:\n  - {id: " + id + ", script: a.yaml, prompt: add a}\n", // policy approve: all: the task writes files, which the default approve-reads denies.
	})
	run := "fleet-20261207-035523-8a2d3f" // as long as a generated id
	o, e, code := runTai(t, repo, "fleet", "run", "--run-id", run, plan)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, o, e)
	}
	summary := o[strings.Index(o, "fleet "+run+": done"):]
	fits := func(what, out string, width int) {
		t.Helper()
		for l := range strings.Lines(out) {
			if strings.HasPrefix(l, "  state /") {
				continue // a path on a line of its own, whatever its length
			}
			if n := len([]rune(strings.TrimRight(l, "\n"))); n > width {
				t.Errorf("%s: a line of %d columns at %d:\n%s", what, n, width, out)
			}
		}
	}
	fits("summary", summary, 80)
	if strings.Contains(summary, "audit.jsonl") {
		t.Errorf("the summary names paths without -v:\n%s", summary)
	}
	for _, width := range []int{80, 160} {
		cmd := tai(repo, "fleet", "status", run)
		cmd.Env = append(cmd.Env, fmt.Sprintf("COLUMNS=%d", width))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("status: %v", err)
		}
		fits(fmt.Sprintf("status at %d", width), string(out), width)
		if whole := strings.Contains(string(out), id+" "); whole != (width == 160) {
			t.Errorf("status at %d: the whole id shown: %v\n%s", width, whole, out)
		}
	}
}
