// Package terminal is tai's host terminal service: the protocol-agnostic
// implementation behind agent requests such as ACP terminal/create,
// terminal/output, terminal/wait_for_exit, terminal/kill and
// terminal/release.
//
// A Manager starts real processes in the background, each in its own
// process group so that the command and everything it spawned can be killed
// together; with a sandbox (SetSandbox), through tai's launcher, which also
// confines them and kills what they leave behind when they exit. Stdout and stderr are merged into one capped buffer that keeps
// the most recent output. Working directories are confined to the workspace
// roots with the same rules as package files. Close kills and reaps
// everything, so a session never leaves processes behind that it can see.
package terminal

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tai-dev/tai/host/files"
	"github.com/tai-dev/tai/internal/agentproc"
	"github.com/tai-dev/tai/internal/secretenv"
	"github.com/tai-dev/tai/sandbox"
)

// DefaultOutputByteLimit is the output retained per terminal when the
// request does not set one (ACP leaves the default to the client).
const DefaultOutputByteLimit = 1 << 20

// DefaultExitDrain is how long output keeps being collected after the main
// process exits while something else (typically a background child that
// inherited stdout) still holds the pipe open.
const DefaultExitDrain = 250 * time.Millisecond

var (
	// ErrUnknownTerminal is returned for ids that were never issued, were
	// released, or belong to a closed Manager.
	ErrUnknownTerminal = errors.New("unknown terminal")
	// ErrClosed is returned by Create after Close.
	ErrClosed = errors.New("terminal manager closed")
)

// Options configures a Manager.
type Options struct {
	// Roots confine working directories (absolute directories). Required:
	// with no valid roots every Create fails.
	Roots []string
	// DefaultCwd is used when a request has no Cwd; "" means Roots[0].
	DefaultCwd string
	// BaseEnv is every command's starting environment ("NAME=value").
	// nil means os.Environ(); use an empty non-nil slice for none.
	BaseEnv []string
	// Logger receives debug logs; nil discards them.
	Logger *slog.Logger
	// OnExit, if set, is called once per started process after it exits and
	// its output is collected (e.g. for auditing). It runs on the process's
	// reaper goroutine, so it should not block: Close waits for it.
	OnExit func(Info)
	// ExitDrain overrides DefaultExitDrain.
	ExitDrain time.Duration
	// Sandbox starts every command through tai's launcher: confined like
	// the agent, and nothing it starts outlives it. nil: directly.
	Sandbox *sandbox.Sandbox
}

// CreateRequest describes a command to start.
//
// If Args is empty and Command contains whitespace or shell metacharacters
// (e.g. "go test ./... | tail"), Command is run as `/bin/sh -c Command`,
// which is what agents sending a command line expect. Otherwise Command is
// executed directly with Args; a bare name is looked up in the PATH of the
// command's environment, a relative path is taken relative to Cwd.
type CreateRequest struct {
	Command string
	Args    []string
	Env     []EnvVar // added on top of Options.BaseEnv, overriding same names
	Cwd     string   // absolute and inside Options.Roots; "" = DefaultCwd
	// OutputByteLimit caps the retained output; older output is dropped
	// from the front. 0 means DefaultOutputByteLimit.
	OutputByteLimit int64
}

// EnvVar is one environment variable.
type EnvVar struct{ Name, Value string }

// Output is a snapshot of a terminal's output.
type Output struct {
	Output    string
	Truncated bool        // output was dropped from the front
	Exit      *ExitStatus // nil while the command runs
}

// ExitStatus describes how a process ended: ExitCode is set when it exited
// normally, Signal (e.g. "SIGKILL") when a signal terminated it.
type ExitStatus struct {
	ExitCode *int
	Signal   string
}

func (e ExitStatus) clone() ExitStatus {
	if e.ExitCode != nil {
		c := *e.ExitCode
		e.ExitCode = &c
	}
	return e
}

// Info describes a finished process, for Options.OnExit.
type Info struct {
	ID       string
	Command  string
	Args     []string
	Cwd      string
	Exit     ExitStatus
	Duration time.Duration
}

// Manager runs and tracks terminals. It is safe for concurrent use.
type Manager struct {
	roots      *files.Service
	rootsErr   error
	defaultCwd string
	baseEnv    []string
	drain      time.Duration
	onExit     func(Info)
	log        *slog.Logger
	sandbox    *sandbox.Sandbox

	mu     sync.Mutex
	terms  map[string]*term
	closed bool
	wg     sync.WaitGroup // one per started process, done once reaped

	closeOnce sync.Once
}

type term struct {
	id      string
	command string
	args    []string
	cwd     string
	pid     int           // also the process group id (Setpgid)
	launch  *sandbox.Proc // nil without the launcher
	buf     *outputBuffer
	reaped  chan struct{} // closed when the main process has been waited
	done    chan struct{} // closed when exit is set and output collected
	exit    ExitStatus    // written before done is closed
	settled chan struct{} // closed after OnExit returned
}

// NewManager returns a Manager. Invalid Roots are reported by Create.
func NewManager(opts Options) *Manager {
	m := &Manager{
		defaultCwd: opts.DefaultCwd,
		baseEnv:    opts.BaseEnv,
		drain:      opts.ExitDrain,
		onExit:     opts.OnExit,
		log:        opts.Logger,
		sandbox:    opts.Sandbox,
		terms:      make(map[string]*term),
	}
	m.roots, m.rootsErr = files.New(opts.Roots...)
	if m.rootsErr == nil && m.defaultCwd == "" {
		m.defaultCwd = m.roots.Roots()[0]
	}
	if m.baseEnv == nil {
		m.baseEnv = secretenv.Scrub(os.Environ()) // commands run for the agent: none of tai's own secrets
	}
	if m.drain <= 0 {
		m.drain = DefaultExitDrain
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	return m
}

// Create starts req's command in the background and returns its terminal
// id. ctx bounds only the setup; the process outlives it.
func (m *Manager) Create(ctx context.Context, req CreateRequest) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if m.rootsErr != nil {
		return "", fmt.Errorf("terminal: %w", m.rootsErr)
	}
	if req.Command == "" {
		return "", errors.New("terminal: empty command")
	}
	limit := req.OutputByteLimit
	switch {
	case limit < 0:
		return "", fmt.Errorf("terminal: negative output byte limit %d", limit)
	case limit == 0:
		limit = DefaultOutputByteLimit
	}
	cwd := req.Cwd
	if cwd == "" {
		cwd = m.defaultCwd
	}
	cwd, err := m.roots.Resolve(cwd)
	if err != nil {
		return "", fmt.Errorf("terminal: cwd: %w", err)
	}
	if fi, err := os.Stat(cwd); err != nil {
		return "", fmt.Errorf("terminal: cwd: %w", err)
	} else if !fi.IsDir() {
		return "", fmt.Errorf("terminal: cwd %q is not a directory", cwd)
	}
	env, err := buildEnv(m.baseEnv, req.Env)
	if err != nil {
		return "", fmt.Errorf("terminal: %w", err)
	}
	name, args := req.Command, req.Args
	if needsShell(name, args) {
		name, args = "/bin/sh", []string{"-c", req.Command}
	}
	path, err := lookPath(name, env, cwd)
	if err != nil {
		return "", fmt.Errorf("terminal: %w", err)
	}

	pr, pw, err := os.Pipe()
	if err != nil {
		return "", fmt.Errorf("terminal: %w", err)
	}
	cmd := &exec.Cmd{
		Path:   path,
		Args:   append([]string{name}, args...),
		Env:    env,
		Dir:    cwd,
		Stdout: pw, // an *os.File: the child writes to the pipe directly,
		Stderr: pw, // so Wait never waits on copying goroutines.
		// Own process group, so Kill reaches background children too.
		// Pdeathsig: a command must not outlive a tai that was killed -9.
		SysProcAttr: agentproc.Group(),
	}

	// Hold the lock across Start so Close cannot miss a process.
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		pr.Close()
		pw.Close()
		return "", ErrClosed
	}
	start := time.Now()
	launch, err := m.sandbox.Start(cmd, nil)
	pw.Close() // the child has its copy; EOF comes when all holders exit
	if err != nil {
		pr.Close()
		return "", fmt.Errorf("terminal: start %q: %w", req.Command, err)
	}
	t := &term{
		id:      "term_" + rand.Text(),
		command: req.Command,
		args:    slices.Clone(req.Args),
		cwd:     cwd,
		pid:     cmd.Process.Pid,
		launch:  launch,
		buf:     newOutputBuffer(int(min(limit, int64(math.MaxInt)))),
		reaped:  make(chan struct{}),
		done:    make(chan struct{}),
		settled: make(chan struct{}),
	}
	m.terms[t.id] = t
	m.wg.Add(1)
	go m.run(t, cmd, pr, start)
	m.log.Debug("terminal started", "id", t.id, "command", req.Command, "pid", t.pid, "cwd", cwd)
	return t.id, nil
}

// run collects t's output and reaps its process.
func (m *Manager) run(t *term, cmd *exec.Cmd, pr *os.File, start time.Time) {
	defer m.wg.Done()
	defer close(t.settled)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		io.Copy(t.buf, pr) // ends at EOF or at the drain deadline below
	}()

	cmd.Wait() // the exit status is in ProcessState; the error adds nothing
	t.launch.Release()
	dur := time.Since(start)
	close(t.reaped)
	// Background children may hold the pipe open indefinitely; give them
	// a short grace period for output that is already on its way.
	pr.SetReadDeadline(time.Now().Add(m.drain))
	<-readDone
	pr.Close()

	t.exit = exitStatus(cmd.ProcessState)
	close(t.done)
	m.log.Debug("terminal exited", "id", t.id, "pid", t.pid, "exit_code", t.exit.ExitCode, "signal", t.exit.Signal, "duration", dur)
	if m.onExit != nil {
		m.onExit(Info{ID: t.id, Command: t.command, Args: t.args, Cwd: t.cwd, Exit: t.exit.clone(), Duration: dur})
	}
}

func exitStatus(ps *os.ProcessState) ExitStatus {
	if ps == nil {
		return ExitStatus{}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		name := unix.SignalName(ws.Signal())
		if name == "" {
			name = fmt.Sprintf("SIG%d", int(ws.Signal()))
		}
		return ExitStatus{Signal: name}
	}
	code := ps.ExitCode()
	return ExitStatus{ExitCode: &code}
}

// killGroup SIGKILLs t's process group: the command and whatever it
// spawned that stayed in the group, even after the command itself exited.
func (t *term) killGroup() error {
	if t.launch != nil {
		// The launcher kills the command and all it started, setsid
		// children included; a SIGKILL of the group now could kill the
		// launcher first and orphan them.
		t.launch.Kill()
		return nil
	}
	select {
	case <-t.reaped:
		// The leader's pid is free once reaped. While group members remain
		// the kernel keeps the id reserved; if a process now owns that pid,
		// the group is gone and the id was reused: leave it alone.
		if err := syscall.Kill(t.pid, 0); !errors.Is(err, syscall.ESRCH) {
			return nil
		}
	default:
	}
	if err := syscall.Kill(-t.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("terminal: kill %s: %w", t.id, err)
	}
	return nil
}

func (m *Manager) get(id string) (*term, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.terms[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTerminal, id)
	}
	return t, nil
}

// Output returns the retained output and, once the command has exited and
// its output has been collected, its exit status.
func (m *Manager) Output(ctx context.Context, id string) (Output, error) {
	if err := ctx.Err(); err != nil {
		return Output{}, err
	}
	t, err := m.get(id)
	if err != nil {
		return Output{}, err
	}
	select {
	case <-t.done:
		out, trunc := t.buf.snapshot(false)
		exit := t.exit.clone()
		return Output{Output: out, Truncated: trunc, Exit: &exit}, nil
	default:
		out, trunc := t.buf.snapshot(true)
		return Output{Output: out, Truncated: trunc}, nil
	}
}

// WaitForExit blocks until the command has exited and its output has been
// collected, or ctx is done. A background child still holding the output
// pipe delays it by at most the exit drain.
func (m *Manager) WaitForExit(ctx context.Context, id string) (ExitStatus, error) {
	t, err := m.get(id)
	if err != nil {
		return ExitStatus{}, err
	}
	select {
	case <-t.done:
		return t.exit.clone(), nil
	case <-ctx.Done():
		return ExitStatus{}, ctx.Err()
	}
}

// Kill SIGKILLs the command's process group (under the launcher: the
// command and everything it started, setsid children included). The
// terminal stays valid:
// its output and exit status remain readable until Release.
func (m *Manager) Kill(ctx context.Context, id string) error {
	t, err := m.get(id)
	if err != nil {
		return err
	}
	return t.killGroup()
}

// Release kills the command's process group if anything in it is still
// running and frees the id. It waits (bounded by ctx) for the process to be
// reaped and OnExit to return; the id is freed even if ctx ends first.
func (m *Manager) Release(ctx context.Context, id string) error {
	m.mu.Lock()
	t, ok := m.terms[id]
	delete(m.terms, id)
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownTerminal, id)
	}
	err := t.killGroup()
	select {
	case <-t.settled:
	case <-ctx.Done():
	}
	return err
}

// Close kills every process group, waits until every process has been
// reaped (and OnExit has run), and releases all terminals. Later calls to
// Create fail with ErrClosed. Close is idempotent.
func (m *Manager) Close() error {
	var errs []error
	m.closeOnce.Do(func() {
		m.mu.Lock()
		m.closed = true
		terms := m.terms
		m.terms = make(map[string]*term)
		m.mu.Unlock()
		for _, t := range terms {
			if err := t.killGroup(); err != nil {
				errs = append(errs, err)
			}
		}
		m.wg.Wait() // also covers terminals released with an expired ctx
	})
	return errors.Join(errs...)
}

// shellChars make a lone Command string a shell command line.
const shellChars = " \t\r\n|&;<>()$`\\\"'*?[]#~=!{}"

func needsShell(command string, args []string) bool {
	if len(args) > 0 || !strings.ContainsAny(command, shellChars) {
		return false
	}
	// An existing absolute path that merely contains a space is a program.
	if filepath.IsAbs(command) {
		if fi, err := os.Stat(command); err == nil && fi.Mode().IsRegular() {
			return false
		}
	}
	return true
}

// buildEnv appends vars to base; exec.Cmd keeps the last of duplicate
// names, so later entries override.
func buildEnv(base []string, vars []EnvVar) ([]string, error) {
	env := make([]string, 0, len(base)+len(vars))
	env = append(env, base...)
	for _, v := range vars {
		if v.Name == "" || strings.ContainsAny(v.Name, "=\x00") || strings.ContainsRune(v.Value, 0) {
			return nil, fmt.Errorf("invalid environment variable %q", v.Name)
		}
		env = append(env, v.Name+"="+v.Value)
	}
	return env, nil
}

// defaultPath is used when the environment has no PATH.
const defaultPath = "/usr/local/bin:/usr/bin:/bin"

// lookPath finds name like a shell would, but in the command's own PATH
// (exec.LookPath would use ours). Relative PATH entries are skipped, as
// exec.LookPath refuses them (exec.ErrDot).
func lookPath(name string, env []string, cwd string) (string, error) {
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) {
			name = filepath.Join(cwd, name)
		}
		return name, nil
	}
	pathEnv := defaultPath
	for _, kv := range slices.Backward(env) {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
			break
		}
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%q: %w", name, exec.ErrNotFound)
}

// SetSandbox makes later commands start through the launcher (nil:
// directly). The runner sets it once, before the agent starts.
func (m *Manager) SetSandbox(sb *sandbox.Sandbox) {
	m.mu.Lock()
	m.sandbox = sb
	m.mu.Unlock()
}
