package acp

import (
	"errors"
	"os/exec"
	"sync"
	"syscall"
)

// tail keeps the last max bytes written to it: the agent's stderr, shown
// when it dies.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
	fwd func([]byte) // live copy, e.g. to tai's log; may be nil
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	fwd := t.fwd
	t.mu.Unlock()
	if fwd != nil {
		fwd(p)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// signalGroup signals the agent's whole process group: npm wrappers and
// shells otherwise leave the real agent orphaned.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.Process == nil {
		return
	}
	if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		_ = cmd.Process.Signal(sig)
	}
}

// exitInfo describes how a finished process ended.
func exitInfo(state *exec.ExitError, err error) (code int, signal string) {
	if err == nil {
		return 0, ""
	}
	if state == nil {
		return -1, ""
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, signalName(ws.Signal())
	}
	return state.ExitCode(), ""
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGPIPE:
		return "SIGPIPE"
	}
	return "signal " + s.String()
}
