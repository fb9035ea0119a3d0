package realagents

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A fleet over NATS with a real agent: `tai hub`, and a `tai worker` that
// has claude installed runs the claude task (against tai model serve) in
// a worktree of its own clone; its work comes back as git and is merged.
func TestRealAgentRemoteWorker(t *testing.T) {
	need(t)
	var a agent
	for _, x := range agents {
		if x.name == "claude" {
			a = x
		}
	}
	exe, version := a.installed(t)
	t.Logf("claude %s: %s", version, exe)
	const run = "realremote"
	// The worker keeps its clone and worktrees under .tai/rw (git ignores
	// .tai); the model's {{CWD}} is the first attempt's worktree.
	wdir := filepath.Join(".tai", "rw")
	w := newWorldAt(t, a, exe, "approve", modelScript(t, "write.json"), filepath.Join(wdir, "state", "worktrees", run, "hello", "1"))
	plan := filepath.Join(w.dir, "plan.yaml")
	// policy approve: all: the tasks write and run commands, which the default approve-reads denies.
	writeFile(t, plan, fmt.Sprintf(`name: real-remote
policy: {approve: all}
tasks:
  - id: hello
    agent: claude
    agent_cmd: %q
    prompt: Create hello.txt containing hello.
`, a.command(t, exe)))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := func(args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, taiBin, args...)
		cmd.Dir, cmd.Env = w.repo, w.env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return cmd
	}
	hub := start("hub", "--listen", "127.0.0.1:0", "--store", filepath.Join(w.dir, "hub"), "--nats-server", natsServer)
	out, err := hub.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := hub.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-hub.Process.Pid, syscall.SIGTERM); _ = hub.Wait() }()
	url, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("tai hub: %v", err)
	}
	url = strings.TrimSpace(url)
	// --dir: the worker's clones inside the test's own directory, removed
	// with it (the default is TestHubIsClosedByDefault's).
	worker := start("worker", "--nats", url, "--name", "rw", "--dir", filepath.Join(w.repo, wdir), "--agents", "claude")
	var werr strings.Builder
	worker.Stderr = &werr
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = syscall.Kill(-worker.Process.Pid, syscall.SIGTERM)
		_ = worker.Wait()
		if t.Failed() {
			t.Logf("worker stderr:\n%s", werr.String())
		}
	}()
	coord := start("fleet", "run", "--nats", url, "--run-id", run, "-C", w.repo, "-o", "json", plan)
	sum, err := coord.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("tai fleet run --nats: %v\n%s\n%s", err, sum, stderr)
	}
	var s struct {
		Target string `json:"target"`
		Tasks  []struct {
			ID, Status string
		} `json:"tasks"`
	}
	if err := json.Unmarshal(sum, &s); err != nil {
		t.Fatalf("summary: %v\n%s", err, sum)
	}
	if len(s.Tasks) != 1 || s.Tasks[0].Status != "merged" {
		t.Fatalf("tasks: %+v", s.Tasks)
	}
	got, err := exec.Command("git", "-C", w.repo, "show", s.Target+":hello.txt").Output()
	if err != nil || string(got) != "hello\n" {
		t.Errorf("hello.txt on %s = %q (%v)", s.Target, got, err)
	}
	// The task's audit log stays on the worker, and verifies.
	log := filepath.Join(w.repo, wdir, "state", "audit", run, "hello-1.jsonl")
	if o, err := exec.Command(taiBin, "audit", "verify", log).CombinedOutput(); err != nil {
		t.Errorf("audit verify %s: %v\n%s", log, err, o)
	}
}
