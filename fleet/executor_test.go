package fleet

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/tai-dev/tai/worktree"
)

// fakeExecutor runs each task by committing a file on the task's branch
// itself, as a remote worker's pushed commit arrives, and ends it as
// outcome says (default done).
type fakeExecutor struct {
	repo    string
	outcome map[string]TaskStatus
	mu      sync.Mutex
	ran     []string
	prompts map[string]string
	ended   map[string]TaskStatus // MergeEnded's
}

func (x *fakeExecutor) Run(ctx context.Context, r *TaskRun) Usage {
	id := r.Task.ID
	p, err := r.Prompt(ctx, r.Task)
	x.mu.Lock()
	x.ran = append(x.ran, id)
	x.prompts[id] = p
	x.mu.Unlock()
	if err != nil {
		r.SetTask(id, func(ts *TaskState) { ts.Status, ts.Reason = StatusFailed, err.Error() })
		return Usage{}
	}
	status := x.outcome[id]
	if status == "" {
		status = StatusDone
	}
	r.SetTask(id, func(ts *TaskState) { ts.Status, ts.Message, ts.Attempts = status, "made "+id, 1 })
	return Usage{Turns: 1, Tokens: 10}
}

// PrepareMerge puts the task's work on its branch: a commit on the
// target, made in a scratch index as a worker's push would bring it.
func (x *fakeExecutor) PrepareMerge(ctx context.Context, r *TaskRun) (bool, error) {
	st := r.Snapshot()
	tgt := gitOut(x.repo, "rev-parse", "refs/heads/"+st.Target)
	blob := gitIn(x.repo, r.Task.ID+"\n", "hash-object", "-w", "--stdin")
	base := gitOut(x.repo, "rev-parse", tgt+"^{tree}")
	idx := x.repo + "/.git/fake-index-" + r.Task.ID
	env := []string{"GIT_INDEX_FILE=" + idx}
	gitEnv(x.repo, env, "read-tree", base)
	gitEnv(x.repo, env, "update-index", "--add", "--cacheinfo", "100644,"+blob+","+r.Task.ID+".txt")
	newTree := gitEnv(x.repo, env, "write-tree")
	head := gitOut(x.repo, "commit-tree", newTree, "-p", tgt, "-m", "task "+r.Task.ID)
	branch := worktree.Branch(r.RunID(), r.Task.ID)
	gitOut(x.repo, "update-ref", "refs/heads/"+branch, head)
	d := &worktree.DiffStat{Files: []worktree.FileStat{{Path: r.Task.ID + ".txt", Added: 1}}, Insertions: 1}
	r.SetTask(r.Task.ID, func(ts *TaskState) { ts.Branch, ts.Base, ts.Head, ts.Diff = branch, tgt, head, d })
	return false, nil
}

func (x *fakeExecutor) Merged(ts TaskState) (string, map[string]any) {
	return "attempt " + fmt.Sprint(ts.Attempts), map[string]any{"attempt": ts.Attempts}
}

func (x *fakeExecutor) MergeEnded(ctx context.Context, ts TaskState) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.ended[ts.ID] = ts.Status
}

func gitOut(dir string, args ...string) string { return gitEnv(dir, nil, args...) }

func gitEnv(dir string, env []string, args ...string) string {
	return gitRun(dir, env, "", args...)
}

func gitIn(dir, stdin string, args ...string) string { return gitRun(dir, nil, stdin, args...) }

// gitRun runs git for the fake executor (a failure shows as an empty
// output, and the test's checks fail on it).
func gitRun(dir string, env []string, stdin string, args ...string) string {
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env, cmd.Stdin = dir, append(os.Environ(), env...), strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// The fleet runs its tasks through an Executor: it schedules the DAG,
// hands each ready task over with its budget reserved, renders dependents'
// prompts from what the executor recorded, skips the dependents of a task
// the executor ended failed, and merges the executor's done tasks through
// its own merge queue, telling the executor how each merge ended; a done
// task whose change is outside its owns is failed there, not merged.
func TestFleetRunsThroughAnExecutor(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	fixture(t, pd, map[string]string{"plan.yaml": `name: ex
tasks:
  - {id: a, prompt: "do a"}
  - {id: b, prompt: "after {{ .Tasks.a.Message }}", depends_on: [a]}
  - {id: c, prompt: "do c"}
  - {id: d, prompt: "after c", depends_on: [c]}
  - {id: e, prompt: "do e", owns: ["docs/**"]}
`})
	x := &fakeExecutor{repo: repo, outcome: map[string]TaskStatus{"c": StatusFailed}, prompts: map[string]string{}, ended: map[string]TaskStatus{}}
	out := runPlan(t, repo, pd, func(o *Options) { o.Executor = x })
	want := map[string]TaskStatus{"a": StatusMerged, "b": StatusMerged, "c": StatusFailed, "d": StatusSkipped, "e": StatusFailed}
	for id, s := range want {
		if got := out.st.Tasks[id].Status; got != s {
			t.Errorf("%s: %s, want %s", id, got, s)
		}
	}
	if out.st.ExitCode != 1 || out.st.Status != RunFailed {
		t.Errorf("run: %s exit %d", out.st.Status, out.st.ExitCode)
	}
	if strings.Contains(strings.Join(x.ran, ","), "d") {
		t.Errorf("d ran after its dependency failed: %v", x.ran)
	}
	if x.prompts["b"] != "after made a" {
		t.Errorf("b's prompt %q", x.prompts["b"])
	}
	if e := out.st.Tasks["e"]; !strings.HasPrefix(e.Reason, "changed files outside its owns: e.txt (kept on branch tai/r/e") {
		t.Errorf("e: %q", e.Reason)
	}
	if x.ended["a"] != StatusMerged || x.ended["b"] != StatusMerged || x.ended["e"] != StatusFailed {
		t.Errorf("merges ended: %v", x.ended)
	}
	if log := run(t, repo, "git", "log", "--format=%s", "tai-fleet/r"); log != "task b\ntask a\ninit" {
		t.Errorf("target:\n%s", log)
	}
	var merged []string
	for _, e := range out.events {
		if e.Kind == EventMerged {
			merged = append(merged, e.Task+": "+e.Detail[:len("attempt 1 -> tai-fleet/r")])
		}
	}
	if strings.Join(merged, ", ") != "a: attempt 1 -> tai-fleet/r, b: attempt 1 -> tai-fleet/r" {
		t.Errorf("merged events %v", merged)
	}
	if out.st.Usage.Tokens != 40 {
		t.Errorf("usage %+v, want the four runs' 40 tokens", out.st.Usage)
	}
}
