// Package host wires tai's host services (workspace-confined files and
// terminals) to the driver-neutral interfaces drivers call, and reports
// what they did as events. It is written once, outside the drivers.
package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/host/files"
	"github.com/tai-dev/tai/host/terminal"
)

// Services serves an agent's file and terminal requests inside the
// workspace roots.
type Services struct {
	files *files.Service
	terms *terminal.Manager
	sink  driver.Sink
}

// New returns services confined to roots (absolute directories; the first
// is the default cwd). Events go to sink.
func New(roots []string, sink driver.Sink, logger *slog.Logger) (*Services, error) {
	fsvc, err := files.New(roots...)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	s := &Services{files: fsvc, sink: sink}
	s.terms = terminal.NewManager(terminal.Options{
		Roots:  fsvc.Roots(),
		Logger: logger,
		OnExit: func(info terminal.Info) {
			sink.Emit(driver.Event{Type: driver.EventTerminalExited, Terminal: &driver.TerminalExit{
				ID: info.ID, Command: info.Command, Args: info.Args, Cwd: info.Cwd,
				ExitCode: info.Exit.ExitCode, Signal: info.Exit.Signal, DurationMS: info.Duration.Milliseconds(),
			}})
		},
	})
	return s, nil
}

// Roots returns the real workspace roots.
func (s *Services) Roots() []string { return s.files.Roots() }

// confined marks refusals so drivers can tell them apart.
func confined(err error) error {
	var oe *files.OutsideError
	if errors.As(err, &oe) || errors.Is(err, files.ErrNotAbsolute) {
		return fmt.Errorf("%w: %w", driver.ErrOutsideWorkspace, err)
	}
	return err
}

// ReadTextFile reads a workspace file; line is 1-based, limit in lines.
func (s *Services) ReadTextFile(ctx context.Context, path string, line, limit int) (string, error) {
	text, err := s.files.Read(ctx, path, line, limit)
	return text, confined(err)
}

// WriteTextFile writes a workspace file atomically and reports it.
func (s *Services) WriteTextFile(ctx context.Context, path, content string) error {
	res, err := s.files.Write(ctx, path, []byte(content))
	if err != nil {
		return confined(err)
	}
	s.sink.Emit(driver.Event{Type: driver.EventFileWritten, File: &driver.FileWrite{
		Path: res.Path, Size: res.Size, Created: res.Created, HashBefore: res.HashBefore, HashAfter: res.HashAfter,
	}})
	return nil
}

// RecordWrite reports a file the agent wrote with its own tools (a
// stream-json CLI's Write or Edit): confined to the workspace and hashed
// here, like the writes tai makes for an agent. A path outside it is an
// error wrapping driver.ErrOutsideWorkspace, and nothing is reported.
func (s *Services) RecordWrite(ctx context.Context, path string, created bool) error {
	res, err := s.files.Observe(ctx, path)
	if err != nil {
		return confined(err)
	}
	s.sink.Emit(driver.Event{Type: driver.EventFileWritten, File: &driver.FileWrite{
		Path: res.Path, Size: res.Size, Created: created, HashAfter: res.HashAfter,
	}})
	return nil
}

// CreateTerminal starts a command.
func (s *Services) CreateTerminal(ctx context.Context, req driver.TerminalRequest) (string, error) {
	cr := terminal.CreateRequest{Command: req.Command, Args: req.Args, Cwd: req.Cwd, OutputByteLimit: req.OutputByteLimit}
	for k, v := range req.Env {
		cr.Env = append(cr.Env, terminal.EnvVar{Name: k, Value: v})
	}
	id, err := s.terms.Create(ctx, cr)
	return id, confined(err)
}

// TerminalOutput returns what a command printed so far.
func (s *Services) TerminalOutput(ctx context.Context, id string) (driver.TerminalOutput, error) {
	out, err := s.terms.Output(ctx, id)
	if err != nil {
		return driver.TerminalOutput{}, err
	}
	res := driver.TerminalOutput{Output: out.Output, Truncated: out.Truncated}
	if out.Exit != nil {
		res.Exit = &driver.ExitStatus{ExitCode: out.Exit.ExitCode, Signal: out.Exit.Signal}
	}
	return res, nil
}

// WaitForTerminalExit blocks until the command exits.
func (s *Services) WaitForTerminalExit(ctx context.Context, id string) (driver.ExitStatus, error) {
	st, err := s.terms.WaitForExit(ctx, id)
	return driver.ExitStatus{ExitCode: st.ExitCode, Signal: st.Signal}, err
}

// KillTerminal kills a command; its output stays readable.
func (s *Services) KillTerminal(ctx context.Context, id string) error { return s.terms.Kill(ctx, id) }

// ReleaseTerminal kills a command if needed and forgets it.
func (s *Services) ReleaseTerminal(ctx context.Context, id string) error {
	return s.terms.Release(ctx, id)
}

// Close kills every process group the agent started.
func (s *Services) Close() error { return s.terms.Close() }

var (
	_ driver.Files     = (*Services)(nil)
	_ driver.Terminals = (*Services)(nil)
)
