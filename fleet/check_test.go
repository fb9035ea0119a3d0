package fleet

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/tai-dev/tai/agentspec"
	"github.com/tai-dev/tai/sandbox"
)

// A check whose run ends (the coordinator stops, or its merge is given
// up) is stopped whole: not only its shell but what the shell started,
// which would otherwise hold the output pipe and keep Wait waiting.
func TestCheckStoppedWhole(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	p := &Plan{Check: "sleep 600 & echo $! > " + fifo + "; wait"}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.CheckFunc(nil, nil)(ctx, dir) }()
	b, err := os.ReadFile(fifo) // blocks until the check has started its child
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a stopped check passed")
	}
	// Wait returned with the pipe closed: the child has closed its files
	// on its way out (it may not be a zombie yet). Were it alive, Wait
	// would have given up on the pipe (WaitDelay) with its files open.
	if fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd"); err == nil && len(fds) > 0 {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the check's child %d is still running, with %d files open", pid, len(fds))
	}
}

func TestCheckFunc(t *testing.T) {
	if (&Plan{}).CheckFunc(nil, nil) != nil {
		t.Fatal("a plan without a check has a check func")
	}
	dir := t.TempDir()
	if err := (&Plan{Check: "test -d ."}).CheckFunc(nil, nil)(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	err := (&Plan{Check: "echo broken; exit 3"}).CheckFunc(nil, nil)(context.Background(), dir)
	if err == nil || !strings.Contains(err.Error(), "broken") || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("want the check's output and status, got %v", err)
	}
}

// The check runs what the agents wrote: confined as a task's agent is, it
// writes in its worktree but not outside; check_sandbox: off lets it.
// Either way, how it runs is told before it starts.
func TestCheckConfined(t *testing.T) {
	if sandbox.ABI() == 0 {
		t.Skip("the kernel has no Landlock")
	}
	for _, c := range []struct {
		name, checkSandbox string
		written, enabled   bool
	}{
		{"confined", "", false, true},
		{"check_sandbox off", CheckSandboxOff, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, outside := t.TempDir(), t.TempDir()
			marker := filepath.Join(outside, "marker")
			p := &Plan{Check: "echo in > inside && echo out > " + marker, CheckSandbox: c.checkSandbox}
			var got *sandbox.Status
			err := p.CheckFunc(&agentspec.Sandbox{}, func(d string, st sandbox.Status) {
				if d != dir {
					t.Errorf("told of %s, want %s", d, dir)
				}
				got = &st
			})(context.Background(), dir)
			if _, serr := os.Stat(marker); (serr == nil) != c.written {
				t.Fatalf("marker written: %v, want %v (check: %v)", serr == nil, c.written, err)
			}
			if (err == nil) != c.written {
				t.Fatalf("check error %v", err)
			}
			if _, serr := os.Stat(filepath.Join(dir, "inside")); serr != nil {
				t.Fatalf("the check could not write in its worktree: %v", serr)
			}
			if got == nil || got.Enabled != c.enabled {
				t.Fatalf("status %+v, want enabled %v", got, c.enabled)
			}
			if !c.enabled && got.Reason != "check_sandbox: off" {
				t.Fatalf("reason %q", got.Reason)
			}
		})
	}
}
