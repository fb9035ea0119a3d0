package agentproc

import (
	"errors"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coder/quartz"
)

// Tail keeps the last Max bytes written to it: an agent's stderr, shown
// when it dies.
type Tail struct {
	Max int          // bytes kept
	Fwd func([]byte) // live copy, e.g. to tai's log; may be nil

	mu  sync.Mutex
	buf []byte
}

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.Max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	fwd := t.Fwd
	t.mu.Unlock()
	if fwd != nil {
		fwd(p)
	}
	return len(p), nil
}

func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// SignalGroup signals the process group cmd leads: npm wrappers and
// shells otherwise leave the real agent orphaned.
func SignalGroup(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.Process == nil {
		return
	}
	if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		_ = cmd.Process.Signal(sig)
	}
}

// ExitInfo describes how a finished process ended: its exit code, or -1
// and the signal's name.
func ExitInfo(state *exec.ExitError, err error) (code int, signal string) {
	if err == nil {
		return 0, ""
	}
	if state == nil {
		return -1, ""
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, SignalName(ws.Signal())
	}
	return state.ExitCode(), ""
}

// SignalName is a signal's conventional name (SIGKILL).
func SignalName(s syscall.Signal) string {
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

// LastLines returns the last n lines of s, for error messages.
func LastLines(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Stop ends a process that tai started with Group: closeInput (the
// graceful request, may be nil), then SIGTERM and SIGKILL to its group,
// each after grace, on clock; then whatever it left in its group, and the
// processes of tree (its descendants, taken while it was alive) that
// escaped into groups of their own. exited must close when the process
// has been waited for.
func Stop(clock quartz.Clock, cmd *exec.Cmd, exited <-chan struct{}, grace time.Duration, signalAtOnce bool, closeInput func(), tree []Proc) {
	if closeInput != nil {
		closeInput()
	}
	if signalAtOnce {
		SignalGroup(cmd, syscall.SIGTERM)
	}
	wait := func() bool {
		t := clock.NewTimer(grace, "agentproc", "stop")
		defer t.Stop()
		select {
		case <-exited:
			return true
		case <-t.C:
			return false
		}
	}
	if !wait() {
		SignalGroup(cmd, syscall.SIGTERM)
		if !wait() {
			SignalGroup(cmd, syscall.SIGKILL)
			<-exited
		}
	}
	SignalGroup(cmd, syscall.SIGKILL)
	KillEscaped(tree, cmd.Process.Pid)
}
