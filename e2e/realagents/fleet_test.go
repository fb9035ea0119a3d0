package realagents

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A fleet with a real agent: claude-agent-acp writes hello.txt in its own
// worktree, a built-in task that depends on it gets its result through the
// plan's template, and both are merged into the target branch without
// touching the user's checkout.
func TestRealAgentFleet(t *testing.T) {
	need(t)
	var a agent
	for _, x := range agents {
		if x.name == "claude" {
			a = x
		}
	}
	exe, version := a.installed(t)
	t.Logf("claude %s: %s", version, exe)
	const run = "realfleet"
	w := newWorldAt(t, a, exe, "approve", modelScript(t, "write.json"), filepath.Join(".tai", "worktrees", run, "hello"))
	plan := filepath.Join(w.dir, "plan.yaml")
	script := filepath.Join(w.dir, "after.yaml")
	writeFile(t, script, "steps:\n  - write: {path: after.txt, content: \"after\\n\", ask: false}\n  - text: done\n")
	// policy approve: all: the tasks write and run commands, which the default approve-reads denies.
	writeFile(t, plan, fmt.Sprintf(`name: real
policy: {approve: all}
tasks:
  - id: hello
    agent: claude
    agent_cmd: %q
    prompt: Create hello.txt containing hello.
  - id: after
    script: %s
    depends_on: [hello]
    prompt: "The claude task said: {{ .Tasks.hello.Message }}"
`, a.command(t, exe), script))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, taiBin, "fleet", "run", "--run-id", run, "-C", w.repo, "-o", "json", plan)
	cmd.Dir = w.repo
	cmd.Env = w.env
	out, err := cmd.Output()
	var stderr string
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = string(ee.Stderr)
	}
	if err != nil {
		t.Fatalf("tai fleet run: %v\n%s\n%s", err, out, stderr)
	}
	var sum struct {
		Target string `json:"target"`
		Tasks  []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(out, &sum); err != nil {
		t.Fatalf("summary: %v\n%s", err, out)
	}
	for _, task := range sum.Tasks {
		if task.Status != "merged" {
			t.Errorf("task %s: %s", task.ID, task.Status)
		}
	}
	show := func(file string) string {
		b, err := exec.Command("git", "-C", w.repo, "show", sum.Target+":"+file).Output()
		if err != nil {
			t.Fatalf("git show %s:%s: %v", sum.Target, file, err)
		}
		return string(b)
	}
	if got := show("hello.txt"); got != "hello\n" {
		t.Errorf("hello.txt on %s = %q", sum.Target, got)
	}
	if got := show("after.txt"); got != "after\n" {
		t.Errorf("after.txt on %s = %q", sum.Target, got)
	}
	if st, _ := exec.Command("git", "-C", w.repo, "status", "--porcelain").Output(); strings.TrimSpace(string(st)) != "" {
		t.Errorf("the user's checkout changed: %s", st)
	}
	// The fleet's audit log records every agent it started.
	w.audit = filepath.Join(w.home, ".local", "state", "tai", "fleet", run, "audit.jsonl")
	if o, err := exec.Command(taiBin, "audit", "verify", w.audit).CombinedOutput(); err != nil {
		t.Errorf("audit verify: %v\n%s", err, o)
	}
	w.checkNoLeftovers()
}
