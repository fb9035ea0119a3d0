//go:build linux

package terminal

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/tai-dev/tai/host/files"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testTimeout bounds every blocking call so a bug fails instead of hanging.
const testTimeout = 30 * time.Second

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func newTestManager(t *testing.T, opts Options) (*Manager, string) {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if opts.Roots == nil {
		opts.Roots = []string{ws}
	}
	m := NewManager(opts)
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return m, ws
}

func intp(i int) *int { return &i }

func run(t *testing.T, m *Manager, req CreateRequest) (Output, ExitStatus) {
	t.Helper()
	ctx := testCtx(t)
	id, err := m.Create(ctx, req)
	if err != nil {
		t.Fatalf("Create(%+v): %v", req, err)
	}
	st, err := m.WaitForExit(ctx, id)
	if err != nil {
		t.Fatalf("WaitForExit: %v", err)
	}
	out, err := m.Output(ctx, id)
	if err != nil {
		t.Fatalf("Output: %v", err)
	}
	if err := m.Release(ctx, id); err != nil {
		t.Fatalf("Release: %v", err)
	}
	return out, st
}

func sameExit(a, b ExitStatus) bool {
	if (a.ExitCode == nil) != (b.ExitCode == nil) || a.Signal != b.Signal {
		return false
	}
	return a.ExitCode == nil || *a.ExitCode == *b.ExitCode
}

func fmtExit(e ExitStatus) string {
	if e.ExitCode != nil {
		return fmt.Sprintf("{code %d, signal %q}", *e.ExitCode, e.Signal)
	}
	return fmt.Sprintf("{code nil, signal %q}", e.Signal)
}

func TestCommands(t *testing.T) {
	m, ws := newTestManager(t, Options{
		BaseEnv: []string{"PATH=" + os.Getenv("PATH"), "BASE=base", "OVER=base"},
	})
	must(t, os.Mkdir(filepath.Join(ws, "sub"), 0o755))
	tests := []struct {
		name string
		req  CreateRequest
		out  string
		exit ExitStatus
	}{
		{"echo", CreateRequest{Command: "echo", Args: []string{"hello", "world"}}, "hello world\n", ExitStatus{ExitCode: intp(0)}},
		{"exit 3", CreateRequest{Command: "sh", Args: []string{"-c", "exit 3"}}, "", ExitStatus{ExitCode: intp(3)}},
		{"shell form", CreateRequest{Command: "echo a && echo b"}, "a\nb\n", ExitStatus{ExitCode: intp(0)}},
		{"shell form exit code", CreateRequest{Command: "false || exit 7"}, "", ExitStatus{ExitCode: intp(7)}},
		{"args are not shell-parsed", CreateRequest{Command: "echo", Args: []string{"$HOME", "a && b"}}, "$HOME a && b\n", ExitStatus{ExitCode: intp(0)}},
		{"stderr merged", CreateRequest{Command: "echo out; echo err >&2"}, "out\nerr\n", ExitStatus{ExitCode: intp(0)}},
		{"self signal", CreateRequest{Command: "kill -TERM $$"}, "", ExitStatus{Signal: "SIGTERM"}},
		{
			"env base, override, added",
			CreateRequest{Command: "echo $BASE $OVER $NEW ${HOME-unset}", Env: []EnvVar{{"OVER", "req"}, {"NEW", "n w"}}},
			"base req n w unset\n", ExitStatus{ExitCode: intp(0)},
		},
		{"default cwd", CreateRequest{Command: "pwd"}, ws + "\n", ExitStatus{ExitCode: intp(0)}},
		{"cwd inside", CreateRequest{Command: "pwd", Cwd: filepath.Join(ws, "sub")}, ws + "/sub\n", ExitStatus{ExitCode: intp(0)}},
		{"relative path command", CreateRequest{Command: "./sub/../sub/x.sh", Cwd: ws}, "", ExitStatus{ExitCode: intp(0)}},
	}
	must(t, os.WriteFile(filepath.Join(ws, "sub", "x.sh"), []byte("#!/bin/sh\nexit 0\n"), 0o755))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, st := run(t, m, tt.req)
			if out.Output != tt.out {
				t.Errorf("output = %q, want %q", out.Output, tt.out)
			}
			if !sameExit(st, tt.exit) {
				t.Errorf("exit = %s, want %s", fmtExit(st), fmtExit(tt.exit))
			}
			if out.Exit == nil || !sameExit(*out.Exit, st) {
				t.Errorf("Output.Exit = %v, want %s", out.Exit, fmtExit(st))
			}
			if out.Truncated {
				t.Error("truncated")
			}
		})
	}
}

func TestCreateErrors(t *testing.T) {
	m, ws := newTestManager(t, Options{})
	outside, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	must(t, os.Symlink(outside, filepath.Join(ws, "escape")))
	must(t, os.WriteFile(filepath.Join(ws, "file"), nil, 0o644))
	ctx := testCtx(t)
	tests := []struct {
		name  string
		req   CreateRequest
		check func(error) bool
	}{
		{"cwd outside", CreateRequest{Command: "true", Cwd: outside}, isOutside},
		{"cwd prefix sibling", CreateRequest{Command: "true", Cwd: ws + "2"}, isOutside},
		{"cwd dotdot", CreateRequest{Command: "true", Cwd: ws + "/.."}, isOutside},
		{"cwd via symlink", CreateRequest{Command: "true", Cwd: ws + "/escape"}, isOutside},
		{"cwd relative", CreateRequest{Command: "true", Cwd: "sub"}, func(err error) bool { return errors.Is(err, files.ErrNotAbsolute) }},
		{"cwd missing", CreateRequest{Command: "true", Cwd: ws + "/missing"}, func(err error) bool { return errors.Is(err, fs.ErrNotExist) }},
		{"cwd is a file", CreateRequest{Command: "true", Cwd: ws + "/file"}, anyErr},
		{"empty command", CreateRequest{}, anyErr},
		{"not found", CreateRequest{Command: "tai-no-such-command-xyz"}, anyErr},
		{"bad env", CreateRequest{Command: "true", Env: []EnvVar{{"A=B", "x"}}}, anyErr},
		{"negative limit", CreateRequest{Command: "true", OutputByteLimit: -1}, anyErr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := m.Create(ctx, tt.req)
			if err == nil {
				m.Release(ctx, id)
				t.Fatal("Create succeeded")
			}
			if !tt.check(err) {
				t.Fatalf("unexpected error: %v", err)
			}
		})
	}
	if _, err := NewManager(Options{}).Create(ctx, CreateRequest{Command: "true"}); err == nil {
		t.Error("Create without roots succeeded")
	}
}

func isOutside(err error) bool {
	var oe *files.OutsideError
	return errors.As(err, &oe)
}

func anyErr(err error) bool { return err != nil }

func TestKillKeepsTerminal(t *testing.T) {
	m, _ := newTestManager(t, Options{})
	ctx := testCtx(t)
	id, err := m.Create(ctx, CreateRequest{Command: "sleep", Args: []string{"1000"}})
	must(t, err)
	if out, err := m.Output(ctx, id); err != nil || out.Exit != nil {
		t.Fatalf("Output while running = %+v, %v", out, err)
	}
	must(t, m.Kill(ctx, id))
	st, err := m.WaitForExit(ctx, id)
	must(t, err)
	want := ExitStatus{Signal: "SIGKILL"}
	if !sameExit(st, want) {
		t.Fatalf("exit = %s, want %s", fmtExit(st), fmtExit(want))
	}
	// Still valid after kill: output and status readable, kill idempotent.
	out, err := m.Output(ctx, id)
	must(t, err)
	if out.Exit == nil || !sameExit(*out.Exit, want) {
		t.Errorf("Output.Exit = %v", out.Exit)
	}
	must(t, m.Kill(ctx, id))
	if _, err := m.WaitForExit(ctx, id); err != nil {
		t.Error(err)
	}
	// Release frees the id.
	must(t, m.Release(ctx, id))
	for name, call := range map[string]func() error{
		"Output":      func() error { _, err := m.Output(ctx, id); return err },
		"WaitForExit": func() error { _, err := m.WaitForExit(ctx, id); return err },
		"Kill":        func() error { return m.Kill(ctx, id) },
		"Release":     func() error { return m.Release(ctx, id) },
	} {
		if err := call(); !errors.Is(err, ErrUnknownTerminal) {
			t.Errorf("%s after Release = %v, want ErrUnknownTerminal", name, err)
		}
	}
}

func TestReleaseKillsRunning(t *testing.T) {
	var mu sync.Mutex
	var infos []Info
	m, _ := newTestManager(t, Options{OnExit: func(i Info) {
		mu.Lock()
		defer mu.Unlock()
		infos = append(infos, i)
	}})
	ctx := testCtx(t)
	id, err := m.Create(ctx, CreateRequest{Command: "sleep", Args: []string{"1000"}})
	must(t, err)
	must(t, m.Release(ctx, id)) // waits for the process to be reaped
	mu.Lock()
	defer mu.Unlock()
	if len(infos) != 1 || infos[0].ID != id || infos[0].Command != "sleep" || infos[0].Exit.Signal != "SIGKILL" {
		t.Errorf("OnExit infos = %+v", infos)
	}
}

func TestWaitForExitContext(t *testing.T) {
	m, _ := newTestManager(t, Options{})
	ctx, cancel := context.WithCancel(testCtx(t))
	id, err := m.Create(ctx, CreateRequest{Command: "sleep", Args: []string{"1000"}})
	must(t, err)
	cancel()
	if _, err := m.WaitForExit(ctx, id); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitForExit = %v, want context.Canceled", err)
	}
	// Close (cleanup) kills it.
}

func TestOutputTruncation(t *testing.T) {
	m, _ := newTestManager(t, Options{})
	tests := []struct {
		name  string
		text  string
		limit int64
		want  string
	}{
		{"ascii", "0123456789abcdef", 6, "abcdef"},
		{"2-byte straddle", "xxxxé1234", 5, "1234"},
		{"2-byte kept", "xxxxé1234", 6, "é1234"},
		{"3-byte straddle", "xx€12", 3, "12"},
		{"4-byte straddle", "x𝄞ab", 4, "ab"},
		{"4-byte kept", "x𝄞ab", 6, "𝄞ab"},
		{"not truncated", "héllo", 100, "héllo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _ := run(t, m, CreateRequest{Command: "printf", Args: []string{"%s", tt.text}, OutputByteLimit: tt.limit})
			if out.Output != tt.want {
				t.Errorf("output = %q, want %q", out.Output, tt.want)
			}
			if out.Truncated != (len(tt.text) > int(tt.limit)) {
				t.Errorf("truncated = %v", out.Truncated)
			}
			if !utf8.ValidString(out.Output) {
				t.Errorf("invalid UTF-8: %q", out.Output)
			}
		})
	}
	// Large output through the pipe, in many reads.
	out, _ := run(t, m, CreateRequest{Command: "yes é€𝄞 | head -c 3000000", OutputByteLimit: 1000})
	if !out.Truncated || len(out.Output) > 1000 || len(out.Output) < 997 || !utf8.ValidString(out.Output) {
		t.Errorf("large output: truncated=%v len=%d valid=%v", out.Truncated, len(out.Output), utf8.ValidString(out.Output))
	}
}

// readFifoPids makes a fifo and returns its path and a func that blocks
// until the command writes whitespace-separated pids into it.
func readFifoPids(t *testing.T, dir string) (string, func() []int) {
	fifo := filepath.Join(dir, "pids")
	must(t, unix.Mkfifo(fifo, 0o600))
	return fifo, func() []int {
		b, err := os.ReadFile(fifo) // blocks until the writer opens and closes it
		must(t, err)
		var pids []int
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			must(t, err)
			pids = append(pids, pid)
		}
		return pids
	}
}

// waitGone blocks until every pid has terminated, using pidfds (which work
// for non-children), and checks none is left as our zombie.
func waitGone(t *testing.T, fds []int, pids []int) {
	t.Helper()
	for i, fd := range fds {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, int(testTimeout/time.Millisecond))
		if err != nil || n != 1 {
			t.Fatalf("pid %d still running after Close (poll %d, %v)", pids[i], n, err)
		}
		unix.Close(fd)
	}
	for _, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if errors.Is(err, fs.ErrNotExist) {
			continue // reaped
		}
		must(t, err)
		// Fields after "(comm)": state ppid ...
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		// A killed grandchild is reparented to init (or a subreaper), which
		// reaps it; it must never be a zombie of ours.
		if f[0] == "Z" && f[1] == strconv.Itoa(os.Getpid()) {
			t.Errorf("pid %d is our zombie", pid)
		} else if f[0] != "Z" && f[0] != "X" {
			t.Errorf("pid %d in state %s", pid, f[0])
		}
	}
}

func pidfds(t *testing.T, pids []int) []int {
	t.Helper()
	var fds []int
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			t.Fatalf("pidfd_open(%d): %v", pid, err)
		}
		fds = append(fds, fd)
	}
	return fds
}

func TestCloseKillsProcessGroup(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	m := NewManager(Options{Roots: []string{ws}})
	ctx := testCtx(t)
	fifo, pids := readFifoPids(t, ws)
	// $$ is the main process (the shell); $! its background child.
	id, err := m.Create(ctx, CreateRequest{Command: "sh", Args: []string{"-c", "sleep 1000 & echo $$ $! > " + fifo + "; sleep 1000"}})
	must(t, err)
	got := pids()
	if len(got) != 2 {
		t.Fatalf("pids = %v", got)
	}
	fds := pidfds(t, got)
	must(t, m.Close())
	waitGone(t, fds, got)
	must(t, m.Close()) // idempotent
	if _, err := m.Output(ctx, id); !errors.Is(err, ErrUnknownTerminal) {
		t.Errorf("Output after Close = %v", err)
	}
	if _, err := m.Create(ctx, CreateRequest{Command: "true"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Create after Close = %v", err)
	}
}

func TestBackgroundChildHoldingPipe(t *testing.T) {
	m, ws := newTestManager(t, Options{ExitDrain: 50 * time.Millisecond})
	ctx := testCtx(t)
	fifo, pids := readFifoPids(t, ws)
	// The shell exits at once; its background sleep keeps stdout open.
	id, err := m.Create(ctx, CreateRequest{Command: "sleep 1000 & echo $! > " + fifo + "; echo done"})
	must(t, err)
	got := pids()
	fds := pidfds(t, got)
	st, err := m.WaitForExit(ctx, id) // must not wait for the sleep
	must(t, err)
	if !sameExit(st, ExitStatus{ExitCode: intp(0)}) {
		t.Errorf("exit = %s", fmtExit(st))
	}
	out, err := m.Output(ctx, id)
	must(t, err)
	if out.Output != "done\n" {
		t.Errorf("output = %q", out.Output)
	}
	// The sleep is still alive in the group; Kill reaches it after the
	// main process exited.
	if err := syscall.Kill(got[0], 0); err != nil {
		t.Fatalf("background child already gone: %v", err)
	}
	must(t, m.Kill(ctx, id))
	waitGone(t, fds, got)
	must(t, m.Release(ctx, id))
}

func TestConcurrentUse(t *testing.T) {
	m, _ := newTestManager(t, Options{})
	ctx := testCtx(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			id, err := m.Create(ctx, CreateRequest{Command: fmt.Sprintf("for i in 1 2 3; do echo %d; done", i)})
			if err != nil {
				t.Error(err)
				return
			}
			for range 3 {
				m.Output(ctx, id)
			}
			if _, err := m.WaitForExit(ctx, id); err != nil {
				t.Error(err)
			}
			out, _ := m.Output(ctx, id)
			if want := strings.Repeat(strconv.Itoa(i)+"\n", 3); out.Output != want {
				t.Errorf("output = %q, want %q", out.Output, want)
			}
		})
	}
	wg.Wait()
	// Leave them unreleased: Close (cleanup) must handle it.
}

func TestNeedsShell(t *testing.T) {
	tests := []struct {
		cmd  string
		args []string
		want bool
	}{
		{"ls", nil, false},
		{"/bin/ls", nil, false},
		{"ls -la", nil, true},
		{"echo a && echo b", nil, true},
		{"echo", []string{"a && b"}, false},
		{"a|b", nil, true},
		{"$HOME/bin/x", nil, true},
		{"FOO=1", nil, true},
	}
	for _, tt := range tests {
		if got := needsShell(tt.cmd, tt.args); got != tt.want {
			t.Errorf("needsShell(%q, %q) = %v, want %v", tt.cmd, tt.args, got, tt.want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
