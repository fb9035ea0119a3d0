package fleet_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/e2e/internal/auditlog"
)

// A task parks at its account's limit after it wrote a.txt, and its agent
// loses the session (it exits and forgets it, as claude-agent-acp does a
// session the CLI never saved): at the reset the fleet cannot resume it,
// says so, and a new session is told the task and what was done so far
// (the worktree's diff, with the new a.txt git does not track yet), not
// only "continue". The task then
// finishes and merges. Default sandbox, user-like HOME; the reset is past.
func TestFleetParkedTaskWhoseSessionIsGoneTakesOverWithTheDiff(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	reset := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	write(t, filepath.Join(pd, "gone.yaml"), fmt.Sprintf(`steps:
  - write: {path: a.txt, content: "a-before-the-limit\n"}
  - limit: {resets_at: %q, times: 1, exit: true, forget: true}
  - write: {path: b.txt, content: "b\n"}
  - text: done
`, reset))
	plan := filepath.Join(pd, "plan.yaml")
	// policy approve: all: the task writes files, which the default
	// approve-reads denies.
	write(t, plan, "name: gone\npolicy: {approve: all}\ntasks:\n  - {id: gone, script: gone.yaml, prompt: \"task gone\"}\n")
	out, errOut, code := runCmd(t, taiAccount(t, repo, "fleet", "run", "--run-id", "gone1", "-C", repo, "--output", "json", plan))
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var s summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if s.Counts["merged"] != 1 {
		t.Fatalf("counts %v\n%s", s.Counts, errOut)
	}
	entries := auditlog.Read(t, s.Audit)
	var retried bool
	for _, ev := range fleetEvents(t, entries) {
		if ev.Event == "retry" && strings.Contains(ev.Detail, "could not be resumed") {
			retried = true
		}
	}
	if !retried {
		t.Error("no event says the session could not be resumed")
	}
	var last audit.Entry
	sessions := map[string]bool{}
	for _, e := range entries {
		if e.Kind == audit.KindPrompt && e.Task == "gone" {
			last = e
			sessions[e.Session] = true
		}
	}
	if len(sessions) < 2 {
		t.Errorf("the task's prompts went to sessions %v, want a new one after the lost one", sessions)
	}
	p := string(last.Data)
	if !strings.Contains(p, "task gone") || !strings.Contains(p, "A usage limit stopped an earlier session") || !strings.Contains(p, "a.txt") {
		t.Errorf("the new session was told %s; want the task and the diff so far", p)
	}
	files := git(t, repo, "ls-tree", "--name-only", s.Target)
	for _, f := range []string{"a.txt", "b.txt"} {
		if !strings.Contains(files, f) {
			t.Errorf("%s missing on the target:\n%s", f, files)
		}
	}
}
