package streamjson

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/internal/agentproc"
	"github.com/tai-dev/tai/sandbox"
)

// process is one agent process: its own process group (so the whole tree
// can be stopped), Pdeathsig (so it does not outlive a killed tai), a tail
// of its stderr, and an exit watcher.
type process struct {
	cmd    *exec.Cmd
	launch *sandbox.Proc // nil without the launcher
	stdin  *os.File      // nil when the prompt was given up front
	outF   *os.File      // its stdout
	stderr *agentproc.Tail
	tree   []agentproc.Proc // its descendants, taken when stopping began

	exited  chan struct{}
	exitErr *driver.AgentExitError
}

// startProcess spawns argv. With keepStdin the caller writes to stdin;
// otherwise stdinData (possibly empty) is written and stdin closed.
func startProcess(sb *sandbox.Sandbox, argv, env []string, cwd string, keepStdin bool, stdinData []byte, stderrTo io.Writer) (*process, error) {
	if len(argv) == 0 {
		return nil, errors.New("stream-json: no agent command")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = cwd
	cmd.Env = env
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.SysProcAttr = agentproc.Group()
	// Our own stdout pipe: exec's StdoutPipe is closed by Wait, which would
	// drop the last lines of an agent that exits right after writing them.
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stream-json: stdout pipe: %w", err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("stream-json: stdin pipe: %w", err)
	}
	p := &process{cmd: cmd, stderr: &agentproc.Tail{Max: 64 << 10}, exited: make(chan struct{})}
	if stderrTo != nil {
		p.stderr.Fwd = func(b []byte) { _, _ = stderrTo.Write(b) }
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, p.stderr
	launch, err := sb.Start(cmd, nil)
	if err != nil {
		for _, f := range []*os.File{outR, outW, inR, inW} {
			f.Close()
		}
		return nil, fmt.Errorf("starting agent %s: %w", argv[0], err)
	}
	p.launch = launch
	outW.Close()
	inR.Close()
	p.outF = outR
	if keepStdin {
		p.stdin = inW
	} else {
		go func() {
			_, _ = inW.Write(stdinData)
			inW.Close()
		}()
	}
	go p.wait()
	return p, nil
}

func (p *process) wait() {
	err := p.cmd.Wait()
	p.launch.Release()
	var ee *exec.ExitError
	errors.As(err, &ee)
	code, sig := agentproc.ExitInfo(ee, err)
	p.exitErr = &driver.AgentExitError{ExitCode: code, Signal: sig, Stderr: agentproc.LastLines(p.stderr.String(), 20)}
	close(p.exited)
}

// pid is the process id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// exitEvent describes the process's end for a process.exited event.
func (p *process) exitEvent(quiet bool) *driver.ProcessExit {
	pe := &driver.ProcessExit{Pid: p.pid(), Signal: p.exitErr.Signal}
	if p.exitErr.Signal == "" {
		c := p.exitErr.ExitCode
		pe.ExitCode = &c
	}
	if !quiet {
		pe.Stderr = p.exitErr.Stderr
	}
	return pe
}

// stop ends the process: stdin closed (the graceful shutdown), then
// SIGTERM and SIGKILL to the process group, each after grace; then what
// it left in its group, and what it started in groups of its own, is
// killed too.
func (p *process) stop(clock quartz.Clock, grace time.Duration, signalAtOnce, now bool) {
	select {
	case <-p.exited:
	default:
		p.tree = agentproc.Descendants(p.pid())
	}
	var closeInput func()
	if p.stdin != nil {
		closeInput = func() { _ = p.stdin.Close() }
	}
	agentproc.Stop(agentproc.Stopping{Clock: clock, Cmd: p.cmd, Exited: p.exited, Grace: grace, SignalAtOnce: signalAtOnce,
		Now: now, CloseInput: closeInput, Tree: p.tree, Kill: p.launch.Killer()})
}
