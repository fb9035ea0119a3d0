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

// Stopping is how Stop ends a process that tai started with Group.
type Stopping struct {
	Clock  quartz.Clock
	Cmd    *exec.Cmd
	Exited <-chan struct{} // closed once Cmd has been waited for
	// Grace is each wait: after CloseInput, after SIGTERM.
	Grace time.Duration
	// SignalAtOnce sends SIGTERM with CloseInput, for agents that ignore
	// stdin EOF.
	SignalAtOnce bool
	// Now skips the waits: the caller's own grace (--cancel-grace) is
	// over, and the kill is due.
	Now        bool
	CloseInput func() // the graceful request; may be nil
	// Tree is the process's descendants, taken while it was alive: those
	// that escaped into groups of their own are killed at the end.
	Tree []Proc
	// Kill, when the process is tai's launcher, has it kill the whole tree
	// it holds and exit: that, not a SIGKILL of the launcher, is the kill,
	// so that nothing it holds is orphaned.
	Kill func()
}

// Stop ends the process: CloseInput, then SIGTERM to its group, then the
// kill, each after Grace (at once with Now); then whatever it left in its
// group, and the escaped processes of Tree.
func Stop(s Stopping) {
	if s.CloseInput != nil {
		s.CloseInput()
	}
	if s.SignalAtOnce && !s.Now {
		SignalGroup(s.Cmd, syscall.SIGTERM)
	}
	wait := func() bool {
		if s.Now {
			select {
			case <-s.Exited:
				return true
			default:
				return false
			}
		}
		t := s.Clock.NewTimer(s.Grace, "agentproc", "stop")
		defer t.Stop()
		select {
		case <-s.Exited:
			return true
		case <-t.C:
			return false
		}
	}
	if !wait() {
		if !s.Now {
			SignalGroup(s.Cmd, syscall.SIGTERM)
		}
		if !wait() {
			Kill(s.Clock, s.Cmd, s.Exited, s.Grace, s.Kill)
		}
	}
	SignalGroup(s.Cmd, syscall.SIGKILL)
	KillEscaped(s.Tree, s.Cmd.Process.Pid)
}

// Kill kills a process and what it holds: through kill (the launcher's
// control pipe) where given, with SIGKILL to the group only if the
// launcher has not exited within grace; else SIGKILL to the group. It
// returns once the process has been waited for.
func Kill(clock quartz.Clock, cmd *exec.Cmd, exited <-chan struct{}, grace time.Duration, kill func()) {
	if kill != nil {
		kill()
		t := clock.NewTimer(grace, "agentproc", "launcher")
		defer t.Stop()
		select {
		case <-exited:
			return
		case <-t.C:
		}
	}
	SignalGroup(cmd, syscall.SIGKILL)
	<-exited
}
