package acpserver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// tsClient is the TypeScript SDK 1.9.0's example client
// (scripts/install-peers.sh). It starts its agent as `npx tsx agent.ts`;
// an npx of the test's, first on PATH, starts tai instead.
func tsClient(t *testing.T) string {
	t.Helper()
	p := os.Getenv("TAI_TS_CLIENT")
	if p == "" {
		if a := os.Getenv("TAI_TS_AGENT"); a != "" {
			p = filepath.Join(filepath.Dir(a), "client.js")
		}
	}
	if p == "" {
		home, _ := os.UserHomeDir()
		p = filepath.Join(home, ".cache", "tai-peers", "acp-ts-1.9.0", "node_modules", "@agentclientprotocol", "sdk", "dist", "examples", "client.js")
	}
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the TS SDK example client is missing (%v): run scripts/install-peers.sh", err)
		}
		t.Skipf("the TS SDK example client is missing (%v): run scripts/install-peers.sh", err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	return p
}

// TestTSExampleClient: the TS SDK's example client drives `tai acp` in
// front of the built-in agent, answering its two permission prompts on
// stdin (allow, then reject). The client offers fs, so the approved write
// reaches the client's (mock) fs, the denied one nothing; neither touches
// the disk.
func TestTSExampleClient(t *testing.T) {
	client := tsClient(t)
	dir := t.TempDir()
	script := scriptFor(t, `steps:
  - text: "hello from the wrapped agent"
  - write: {path: approved.txt, content: "approved by the client\n"}
  - write: {path: denied.txt, content: "denied by the client\n"}
  - text: "all done"
`)
	bin := t.TempDir()
	pidFile := filepath.Join(bin, "tai.pid")
	shim := fmt.Sprintf("#!/bin/sh\necho $$ > %s\nexec %s acp --agent-cmd '%s agent builtin --script %s'\n", pidFile, taiBin, taiBin, script)
	if err := os.WriteFile(filepath.Join(bin, "npx"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", client)
	cmd.Dir = dir
	cmd.Env = append(env(dir), "PATH="+bin+":"+os.Getenv("PATH"))
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	var errMu sync.Mutex
	cmd.Stderr = writerFunc(func(b []byte) (int, error) {
		errMu.Lock()
		defer errMu.Unlock()
		return stderr.Write(b)
	})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var stdout strings.Builder
	answers := []string{"1", "3"} // Allow (allow_once), Reject (reject_once)
	r := bufio.NewReader(out)
	for {
		chunk, err := r.ReadString(' ')
		stdout.WriteString(chunk)
		if strings.HasSuffix(stdout.String(), "Choose an option: ") {
			if len(answers) == 0 {
				t.Fatalf("asked more than twice:\n%s", stdout.String())
			}
			fmt.Fprintln(in, answers[0])
			answers = answers[1:]
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the client: %v\n%s", err, stdout.String())
	}
	got := stdout.String()
	if len(answers) > 0 {
		t.Errorf("the client asked %d times, want 2:\n%s", 2-len(answers), got)
	}
	errMu.Lock()
	clientErr := stderr.String()
	errMu.Unlock()
	for _, want := range []string{"Connected to agent", "hello from the wrapped agent", "Permission requested: Write approved.txt",
		"Permission requested: Write denied.txt", "all done", "Agent completed with: end_turn"} {
		if !strings.Contains(got, want) {
			t.Errorf("the client's output lacks %q:\n%s\nstderr:\n%s", want, got, clientErr)
		}
	}
	if !strings.Contains(clientErr, `"content": "approved by the client\n"`) || strings.Contains(clientErr, "denied by the client") {
		t.Errorf("the client's fs should have been asked to write approved.txt only:\n%s", clientErr)
	}
	mustNotExist(t, filepath.Join(dir, "approved.txt")) // the mock fs kept it
	mustNotExist(t, filepath.Join(dir, "denied.txt"))

	// The client killed its agent (tai) on the way out: tai and the agent
	// it ran are gone.
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	waitGone(t, pid)
	noneLeft(t, script)
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// waitGone waits for a process that is not the test's child to exit.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			if i := strings.LastIndexByte(string(stat), ')'); i > 0 && strings.HasPrefix(string(stat[i+1:]), " Z") {
				return // exited; its parent (gone) left reaping to init
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("tai (pid %d) did not exit after its client killed it", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
