package fleet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/audit"
)

// merge: false keeps each finished task on its branch and scores it by
// the check; a check still running at check_timeout (on the injected
// clock) is killed and scores as failed, timed out. Then Pick merges one
// through the merge queue.
func TestNoMergeScoresAndPick(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	fixture(t, pd, map[string]string{
		"a.yaml":    "steps:\n  - write: {path: a.txt, content: \"a\\n\"}\n",
		"b.yaml":    "steps:\n  - write: {path: hang, content: \"b\\n\"}\n",
		"plan.yaml": "policy: {approve: all}\nmerge: false\ncheck: \"if test -f hang; then exec sleep 600; fi\"\ncheck_timeout: 10m\nconcurrency: 1\ntasks:\n  - {id: a, script: a.yaml, prompt: go}\n  - {id: b, script: b.yaml, prompt: go}\n",
	})
	clk := quartz.NewMock(t)
	trap := clk.Trap().AfterFunc("fleet", "check")
	defer trap.Close()
	var dir string
	done := make(chan runOut, 1)
	var once sync.Once
	aScored := make(chan struct{})
	go func() {
		done <- runPlan(t, repo, pd, func(o *Options) {
			o.Clock = clk
			once.Do(func() { dir = o.Dir })
			prog := o.Progress
			o.Progress = func(e Event) {
				prog(e)
				if e.Kind == EventScored && e.Task == "a" {
					close(aScored)
				}
			}
		})
	}()
	ctx := context.Background()
	// a's check ends by itself; b's is stopped by the clock alone.
	trap.MustWait(ctx).MustRelease(ctx)
	trap.MustWait(ctx).MustRelease(ctx)
	<-aScored
	clk.Advance(10 * time.Minute).MustWait(ctx)
	out := <-done
	if out.st.ExitCode != 0 {
		t.Fatalf("exit %d: %+v", out.st.ExitCode, out.st.Tasks)
	}
	a, b := out.st.Tasks["a"], out.st.Tasks["b"]
	if a.Status != StatusDone || a.Check == nil || !a.Check.Passed {
		t.Errorf("a: %s %+v", a.Status, a.Check)
	}
	if b.Status != StatusDone || b.Check == nil || b.Check.Passed || !b.Check.TimedOut {
		t.Errorf("b: %s %+v", b.Status, b.Check)
	}
	if tip := run(t, repo, "git", "rev-parse", out.st.Target); tip != out.st.Base {
		t.Fatalf("merge: false merged: target at %s, base %s", tip, out.st.Base)
	}

	log, err := audit.Open(filepath.Join(dir, "audit.jsonl"), audit.Options{Run: "r", TruncatePartial: true})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	if _, err := Pick(ctx, Options{RunID: "r", Dir: dir, Audit: log}, "nope"); err == nil {
		t.Error("picked a task the run does not have")
	}
	st, err := Pick(ctx, Options{RunID: "r", Dir: dir, Audit: log}, "a")
	if err != nil {
		t.Fatal(err)
	}
	if st.Tasks["a"].Status != StatusMerged || run(t, repo, "git", "show", st.Target+":a.txt") != "a" {
		t.Fatalf("a: %s", st.Tasks["a"].Status)
	}
	if _, err := os.Stat(filepath.Join(repo, ".tai", "worktrees", "r", "b")); err != nil {
		t.Errorf("b's worktree is gone: %v", err)
	}
}

// A plan task with compare: runs once per candidate, ID-NAME, scored and
// kept, while the plan's other tasks merge as usual; one candidate is
// then picked, and only one.
func TestPlanCompareTask(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	fixture(t, pd, map[string]string{
		"o.yaml": "steps:\n  - write: {path: other.txt, content: \"o\\n\"}\n",
		"a.yaml": "steps:\n  - write: {path: fix.txt, content: \"a\\n\"}\n",
		"b.yaml": "steps:\n  - write: {path: bad.txt, content: \"b\\n\"}\n",
		// policy: the scripts write files headless.
		"plan.yaml": "policy: {approve: all}\ncheck: \"test ! -f bad.txt\"\ntasks:\n  - {id: other, script: o.yaml, prompt: go}\n" +
			"  - id: fix\n    prompt: fix it\n    compare: [{id: a, script: a.yaml}, {id: b, script: b.yaml}]\n",
	})
	var dir string
	out := runPlan(t, repo, pd, func(o *Options) { dir = o.Dir })
	if out.st.ExitCode != 0 {
		t.Fatalf("exit %d: %+v", out.st.ExitCode, out.st.Tasks)
	}
	a, b := out.st.Tasks["fix-a"], out.st.Tasks["fix-b"]
	if out.st.Tasks["other"].Status != StatusMerged || a.Status != StatusDone || b.Status != StatusDone ||
		a.Check == nil || !a.Check.Passed || b.Check == nil || b.Check.Passed {
		t.Fatalf("other %s, fix-a %s %+v, fix-b %s %+v", out.st.Tasks["other"].Status, a.Status, a.Check, b.Status, b.Check)
	}
	log, err := audit.Open(filepath.Join(dir, "audit.jsonl"), audit.Options{Run: "r", TruncatePartial: true})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	ctx := context.Background()
	if _, err := Pick(ctx, Options{RunID: "r", Dir: dir, Audit: log}, "other"); err == nil {
		t.Error("picked a task that is no candidate")
	}
	if _, err := Pick(ctx, Options{RunID: "r", Dir: dir, Audit: log}, "fix-a"); err != nil {
		t.Fatal(err)
	}
	if _, err := Pick(ctx, Options{RunID: "r", Dir: dir, Audit: log}, "fix-b"); err == nil {
		t.Error("a second candidate of one compare was picked")
	}
	for _, f := range []string{"other.txt", "fix.txt"} {
		run(t, repo, "git", "cat-file", "-e", out.st.Target+":"+f)
	}
}

// Nothing may depend on a compared task: which result it has is known
// only once one is picked.
func TestPlanCompareErrors(t *testing.T) {
	for _, tc := range []struct{ plan, want string }{
		{"tasks:\n  - {id: fix, prompt: go, compare: [claude, codex]}\n  - {id: next, prompt: go, depends_on: [fix]}\n", "nothing can depend on it"},
		{"tasks:\n  - {id: fix, prompt: go, compare: [claude]}\n", "two agents or more"},
		{"tasks:\n  - {id: fix, prompt: go, agent: claude, compare: [claude, codex]}\n", "names the agents"},
		{"tasks:\n  - {id: fix, prompt: go, compare: [nosuch, codex]}\n", `unknown agent "nosuch"`},
	} {
		_, err := ParsePlan([]byte(tc.plan), "plan.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.plan, err, tc.want)
		}
	}
}
