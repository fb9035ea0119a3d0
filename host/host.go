// Package host wires tai's host services (workspace-confined files and
// terminals) to the driver-neutral interfaces drivers call, has every call
// decided by the policy, and reports what they did as events. It is
// written once, outside the drivers.
package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/host/files"
	"github.com/tai-dev/tai/host/terminal"
	"github.com/tai-dev/tai/policy"
)

// Services serves an agent's file and terminal requests inside the
// workspace roots, and has each one decided: a call a granted permission
// announced is served; any other is put to the Decider as a request of
// its own, marked unrequested.
type Services struct {
	files     *files.Service
	terms     *terminal.Manager
	sink      driver.Sink
	decider   driver.PermissionDecider
	grants    *Grants
	recorded  func() error
	editor    driver.Files
	requestID atomic.Uint64
}

// Options configure the services.
type Options struct {
	// Roots are the workspace roots (absolute directories; the first is
	// the default cwd).
	Roots []string
	// Sink receives what the services did, and the unrequested
	// permission requests and decisions.
	Sink   driver.Sink
	Logger *slog.Logger
	// Decider decides every call Grants does not cover. Nil serves every
	// call confined but undecided (for tests of the services alone).
	Decider driver.PermissionDecider
	// Grants are the permissions the agent was granted (the Decider the
	// driver asks should feed it). Nil: every call is decided.
	Grants *Grants
	// Protected are tai's own files and directories (its policy, config
	// and state) and the agent's config files that name commands (the
	// sandbox's Protect list): never written, even inside the workspace.
	Protected []string
	// Secret are the secret paths (the sandbox's Deny list): never read
	// or written, even inside the workspace, nor a terminal's cwd.
	Secret []string
	// Recorded, if set, says whether what is served can still be
	// recorded: while it returns an error, every call is refused. What
	// cannot be recorded is not granted.
	Recorded func() error
	// Editor, if set, holds the content: the reads and writes the
	// services have confined and decided are served from it (an editor's
	// buffers, under tai acp) instead of the disk.
	Editor driver.Files
}

// New returns services confined to o.Roots.
func New(o Options) (*Services, error) {
	fsvc, err := files.New(o.Roots...)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	fsvc.Protect(o.Protected...)
	fsvc.Hide(o.Secret...)
	s := &Services{files: fsvc, sink: o.Sink, decider: o.Decider, grants: o.Grants, recorded: o.Recorded, editor: o.Editor}
	sink := o.Sink
	s.terms = terminal.NewManager(terminal.Options{
		Roots:  fsvc.Roots(),
		Logger: o.Logger,
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

// Host call names, as the agent sees them in refusals.
const (
	opRead      = "fs/read_text_file"
	opWrite     = "fs/write_text_file"
	opTerminal  = "terminal/create"
	opOwnWrites = "the agent's own write"
)

// refused marks the services' refusals with the driver's errors, so that
// drivers can tell them apart, and reports those no decision records.
func (s *Services) refused(op string, err error) error {
	var oe *files.OutsideError
	var pe *files.ProtectedError
	var se *files.SecretError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &oe) || errors.Is(err, files.ErrNotAbsolute):
		return fmt.Errorf("%w: %w", driver.ErrOutsideWorkspace, err)
	case errors.As(err, &se):
		s.emitError("secret_path", fmt.Sprintf("refused %s: %v", op, err))
		return fmt.Errorf("%w: %w", driver.ErrSecret, err)
	case errors.As(err, &pe):
		s.emitError("protected_path", fmt.Sprintf("refused %s: %v", op, err))
		return fmt.Errorf("%w: %w", driver.ErrProtected, err)
	case errors.Is(err, files.ErrNUL):
		s.emitError("invalid_path", fmt.Sprintf("refused %s: %v", op, err))
		return fmt.Errorf("%w: %w", driver.ErrInvalidPath, err)
	}
	return err
}

func (s *Services) emitError(code, msg string) {
	s.sink.Emit(driver.Event{Type: driver.EventError, Error: &driver.ErrorInfo{Code: code, Message: msg}})
}

// canRecord refuses every call while the record cannot be kept.
func (s *Services) canRecord(op, subject string) error {
	if s.recorded == nil {
		return nil
	}
	if err := s.recorded(); err != nil {
		return fmt.Errorf("refused %s %s: %w: %w", op, subject, driver.ErrUnrecorded, err)
	}
	return nil
}

// unrequestedOptions are what tai offers its policy for a call the agent
// did not ask about.
var unrequestedOptions = []driver.PermissionOption{
	{ID: "allow", Name: "Allow", Kind: driver.OptionAllowOnce},
	{ID: "reject", Name: "Reject", Kind: driver.OptionRejectOnce},
}

// decide puts a call no grant covers to the Decider, reporting the request
// and its decision (both marked unrequested). Anything but an allow is a
// *driver.DeniedError.
func (s *Services) decide(ctx context.Context, op, subject string, tc driver.ToolCall) error {
	if s.decider == nil {
		return nil
	}
	req := driver.PermissionRequest{
		ID: fmt.Sprintf("tai-%d", s.requestID.Add(1)), ToolCall: tc, Options: unrequestedOptions, Unrequested: true,
	}
	d, _ := driver.AskPermission(ctx, s.decider, s.sink.Emit, req, func(err error) string {
		return "the decision failed: " + err.Error()
	})
	if d.Verdict != driver.VerdictAllow {
		return &driver.DeniedError{Op: op, Subject: subject, Decision: d}
	}
	// The decision's own record must have been kept.
	return s.canRecord(op, subject)
}

// ReadTextFile reads a workspace file; line is 1-based, limit in lines.
func (s *Services) ReadTextFile(ctx context.Context, path string, line, limit int) (string, error) {
	if err := s.canRecord(opRead, path); err != nil {
		return "", err
	}
	if _, err := s.files.Resolve(path); err != nil {
		return "", s.refused(opRead, err)
	}
	if !s.grants.coversRead(path) {
		loc := driver.Location{Path: path, Line: line}
		tc := driver.ToolCall{Title: "Read " + path, Kind: driver.KindRead, Status: "pending", Name: opRead,
			Locations: []driver.Location{loc}, RawInput: rawJSON(map[string]any{"path": path})}
		if err := s.decide(ctx, opRead, path, tc); err != nil {
			return "", err
		}
	}
	if s.editor != nil {
		return s.editor.ReadTextFile(ctx, path, line, limit)
	}
	text, err := s.files.Read(ctx, path, line, limit)
	return text, s.refused(opRead, err)
}

// WriteTextFile writes a workspace file atomically and reports it.
func (s *Services) WriteTextFile(ctx context.Context, path, content string) error {
	if err := s.canRecord(opWrite, path); err != nil {
		return err
	}
	if _, err := s.files.Resolve(path); err != nil {
		return s.refused(opWrite, err)
	}
	if !s.grants.coversWrite(path) {
		tc := driver.ToolCall{Title: "Write " + path, Kind: driver.KindEdit, Status: "pending", Name: opWrite,
			Locations: []driver.Location{{Path: path}}, RawInput: rawJSON(map[string]any{"path": path, "bytes": len(content)})}
		if err := s.decide(ctx, opWrite, path, tc); err != nil {
			return err
		}
	}
	var res files.WriteResult
	var err error
	if s.editor != nil {
		res, err = s.editorWrite(ctx, path, content)
	} else {
		res, err = s.files.Write(ctx, path, []byte(content))
	}
	if err != nil {
		return s.refused(opWrite, err)
	}
	s.sink.Emit(driver.Event{Type: driver.EventFileWritten, File: &driver.FileWrite{
		Path: res.Path, Size: res.Size, Created: res.Created, HashBefore: res.HashBefore, HashAfter: res.HashAfter,
	}})
	return nil
}

// editorWrite hands a decided write to the editor, after the checks a
// write to disk gets.
func (s *Services) editorWrite(ctx context.Context, path, content string) (files.WriteResult, error) {
	if _, err := s.files.CheckWrite(path); err != nil {
		return files.WriteResult{}, err
	}
	res := files.WriteResult{Path: path, Size: int64(len(content)), Created: true}
	if before, err := s.files.Observe(ctx, path); err == nil {
		res.Created, res.HashBefore = false, before.HashAfter
	}
	if err := s.editor.WriteTextFile(ctx, path, content); err != nil {
		return files.WriteResult{}, err
	}
	sum := sha256.Sum256([]byte(content))
	res.HashAfter = "sha256:" + hex.EncodeToString(sum[:])
	return res, nil
}

// RecordWrite reports a file the agent wrote with its own tools (a
// stream-json CLI's Write or Edit), hashed here like the writes tai makes
// for an agent. tai served none of these, so a write outside the workspace
// or to tai's own files is reported as an error event naming the path
// (and returned as an error wrapping driver.ErrOutsideWorkspace or
// driver.ErrProtected); a path that no longer exists wrote nothing.
func (s *Services) RecordWrite(ctx context.Context, path string, created bool) error {
	if _, err := s.files.CheckWrite(path); err != nil {
		var oe *files.OutsideError
		var pe *files.ProtectedError
		switch {
		case errors.As(err, &oe):
			s.emitError("agent_write_outside", fmt.Sprintf("the agent wrote %s with its own tools: %v", path, err))
			return fmt.Errorf("%w: %w", driver.ErrOutsideWorkspace, err)
		case errors.As(err, &pe):
			s.emitError("protected_path", fmt.Sprintf("the agent wrote %s with its own tools: %v", path, err))
			// It is written all the same: report what is there now.
		default:
			return s.refused(opOwnWrites, err)
		}
	}
	res, err := s.files.Observe(ctx, path)
	if err != nil {
		return s.refused(opOwnWrites, err)
	}
	s.sink.Emit(driver.Event{Type: driver.EventFileWritten, File: &driver.FileWrite{
		Path: res.Path, Size: res.Size, Created: created, HashAfter: res.HashAfter,
	}})
	return nil
}

// CreateTerminal starts a command.
func (s *Services) CreateTerminal(ctx context.Context, req driver.TerminalRequest) (string, error) {
	cwd := req.Cwd
	if cwd == "" {
		cwd = s.files.Roots()[0]
	}
	raw := map[string]any{"command": req.Command, "cwd": cwd}
	if len(req.Args) > 0 {
		raw["args"] = req.Args
	}
	tc := driver.ToolCall{Kind: driver.KindExecute, Status: "pending", Name: opTerminal, RawInput: rawJSON(raw)}
	line := policy.Command(tc)
	tc.Title = "Run `" + line + "`"
	if err := s.canRecord(opTerminal, line); err != nil {
		return "", err
	}
	if _, err := s.files.Resolve(cwd); err != nil {
		return "", s.refused(opTerminal, err)
	}
	if !s.grants.coversCommand(line) {
		if err := s.decide(ctx, opTerminal, line, tc); err != nil {
			return "", err
		}
	}
	cr := terminal.CreateRequest{Command: req.Command, Args: req.Args, Cwd: req.Cwd, OutputByteLimit: req.OutputByteLimit}
	for k, v := range req.Env {
		cr.Env = append(cr.Env, terminal.EnvVar{Name: k, Value: v})
	}
	id, err := s.terms.Create(ctx, cr)
	return id, s.refused(opTerminal, err)
}

func rawJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v) // maps of strings, string slices and ints
	return b
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
