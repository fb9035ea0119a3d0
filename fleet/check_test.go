package fleet

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
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
	go func() { done <- p.CheckFunc()(ctx, dir) }()
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
	if (&Plan{}).CheckFunc() != nil {
		t.Fatal("a plan without a check has a check func")
	}
	dir := t.TempDir()
	if err := (&Plan{Check: "test -d ."}).CheckFunc()(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	err := (&Plan{Check: "echo broken; exit 3"}).CheckFunc()(context.Background(), dir)
	if err == nil || !strings.Contains(err.Error(), "broken") || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("want the check's output and status, got %v", err)
	}
}
