package term

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/creack/pty"

	"github.com/tai-dev/tai/internal/agentproc"
	"github.com/tai-dev/tai/sandbox"
)

// Options start a TUI in a pseudo-terminal.
type Options struct {
	Argv []string
	Env  []string // nil: os.Environ(); TERM is always set to Term
	Dir  string
	Cols int // default DefaultCols
	Rows int // default DefaultRows
	Term string
	// Output, if set, receives every chunk the application wrote, after the
	// screen has applied it: the driver's change signal and the recorder.
	Output func(p []byte)
	// Sandbox starts the application through tai's launcher, which then
	// leads the session with the PTY as its controlling terminal, the
	// application in its foreground group; nil starts it directly.
	Sandbox *sandbox.Sandbox
}

// Process is a TUI running in a PTY, its output feeding a Screen.
type Process struct {
	Screen *Screen
	cmd    *exec.Cmd
	launch *sandbox.Proc // nil without the launcher
	ptmx   *os.File
	wmu    sync.Mutex // guards writes, resizes and the close of ptmx
	closed bool
	done   chan struct{} // closed when the process has exited and output is drained
	outEOF chan struct{}
	state  *os.ProcessState
	err    error
	// inflight: a chunk was read and is not yet on the Screen and passed
	// to Output (see OutputPending).
	inflight atomic.Bool
}

// Start runs the application in a new PTY, in its own session and
// process group (Setsid makes the PTY its controlling terminal and the
// child the group leader), so that the whole tree can be signalled.
func Start(o Options) (*Process, error) {
	if len(o.Argv) == 0 {
		return nil, errors.New("pty: no command")
	}
	if o.Cols <= 0 {
		o.Cols = DefaultCols
	}
	if o.Rows <= 0 {
		o.Rows = DefaultRows
	}
	if o.Term == "" {
		o.Term = DefaultTERM
	}
	env := o.Env
	if env == nil {
		env = os.Environ()
	}
	env = setEnv(env, "TERM", o.Term)
	env = setEnv(env, "COLUMNS", "")
	env = setEnv(env, "LINES", "")
	cmd := exec.Command(o.Argv[0], o.Argv[1:]...)
	cmd.Dir, cmd.Env = o.Dir, env
	// Pdeathsig: a TUI never sees stdin EOF, so if tai is killed -9 the
	// agent must not live on.
	cmd.SysProcAttr = agentproc.Session()
	var ptmx *os.File
	launch, err := o.Sandbox.Start(cmd, func() (err error) {
		ptmx, err = pty.StartWithAttrs(cmd, &pty.Winsize{Cols: uint16(o.Cols), Rows: uint16(o.Rows)}, cmd.SysProcAttr)
		return err
	})
	if err != nil {
		if ptmx != nil {
			ptmx.Close()
		}
		return nil, fmt.Errorf("starting %s in a pty: %w", o.Argv[0], err)
	}
	p := &Process{cmd: cmd, launch: launch, ptmx: ptmx, done: make(chan struct{}), outEOF: make(chan struct{})}
	p.Screen = NewScreen(o.Cols, o.Rows, writerFunc(p.Write))
	go p.read(o.Output)
	go p.wait()
	return p, nil
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func setEnv(env []string, k, v string) []string {
	out := env[:0:0]
	for _, e := range env {
		if len(e) > len(k) && e[:len(k)+1] == k+"=" {
			continue
		}
		out = append(out, e)
	}
	if v != "" {
		out = append(out, k+"="+v)
	}
	return out
}

func (p *Process) read(out func([]byte)) {
	defer close(p.outEOF)
	buf := make([]byte, 64<<10)
	for {
		n, err := p.ptmx.Read(buf)
		if n > 0 {
			p.inflight.Store(true)
			_, _ = p.Screen.Write(buf[:n])
			if out != nil {
				out(buf[:n])
			}
			p.inflight.Store(false)
		}
		if err != nil {
			return // EIO once the last process holding the slave is gone
		}
	}
}

func (p *Process) wait() {
	p.err = p.cmd.Wait()
	p.launch.Release()
	p.state = p.cmd.ProcessState
	// The output is drained when the slave side closes; a grandchild that
	// keeps the PTY open must not hold the driver, so the group is killed
	// first (the leader is gone, its group is orphaned anyway).
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.outEOF
	p.wmu.Lock()
	p.closed = true
	_ = p.ptmx.Close()
	p.wmu.Unlock()
	close(p.done)
}

// Write sends keystrokes (or a paste) to the application.
func (p *Process) Write(b []byte) (int, error) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	n, err := p.ptmx.Write(b)
	if err != nil {
		return n, fmt.Errorf("writing to the pty: %w", err)
	}
	return n, nil
}

// Resize changes the size of the PTY (the application gets SIGWINCH) and
// of the emulated screen.
func (p *Process) Resize(cols, rows int) error {
	// Under wmu: the PTY may be closing (the app exited), and Setsize
	// takes its raw fd.
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if p.closed {
		return fmt.Errorf("resizing the pty: %w", os.ErrClosed)
	}
	p.Screen.Resize(cols, rows)
	if err := pty.Setsize(p.ptmx, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}); err != nil {
		return fmt.Errorf("resizing the pty: %w", err)
	}
	return nil
}

// Pid is the application's pid (under the launcher, the launcher's), also
// its process group id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the application has exited and its output is read.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitState is how the application ended; valid after Done.
func (p *Process) ExitState() (*os.ProcessState, error) { return p.state, p.err }

// Kill kills the application and everything it started: through the
// launcher where there is one (so nothing it holds is orphaned), then
// SIGKILL to the group, at once if the launcher has not exited by
// backstop.
func (p *Process) Kill(backstop <-chan time.Time) {
	if p.launch != nil {
		p.launch.Kill()
		select {
		case <-p.done:
			return
		case <-backstop:
		}
	}
	agentproc.SignalGroup(p.cmd, syscall.SIGKILL)
}

// Signal signals the application's whole process group.
func (p *Process) Signal(sig syscall.Signal) {
	agentproc.SignalGroup(p.cmd, sig)
}

var _ io.Writer = (*Process)(nil)
