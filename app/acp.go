package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/tai-dev/tai/acpserver"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/runner"
)

// ACP runs `tai acp`: tai is an ACP agent on stdin/stdout, in front of the
// agent the run flags name. Each of the editor's sessions is one run, with
// its own audit log and session record; what the policy leaves open is
// asked in the editor.
func ACP(ctx context.Context, o RunOptions) error {
	r, err := resolveRun(o)
	if err != nil {
		return err
	}
	std, f := o.IO, r.f
	logger := newLogger(std.Err, f.Verbose)
	// The flags are checked once up front, so that a bad one is a usage
	// error before the editor is served.
	probe, err := checkRun(o, r, logger)
	if err != nil {
		return err
	}
	var editorTrace func(string, []byte)
	if f.Trace != "" {
		// The agent's wire goes to --trace; the editor's next to it.
		tw, err := traceWriter(f.Trace+".editor", std.Env(), f.Redact, nil)
		if err != nil {
			return exitcode.With(exitcode.Usage, err)
		}
		defer func() { _ = tw.Close() }()
		editorTrace = tw.Line
	}
	err = acpserver.Serve(ctx, std.In, std.Out, acpserver.Options{
		Trace: editorTrace,
		Run: func(ctx context.Context, spec acpserver.Spec, h acpserver.Hooks) error {
			return acpSession(ctx, o, r, spec, h, logger)
		},
		Cwd: probe.Cwd, Agent: probe.Agent, Version: Version, Logger: logger, MaxLineBytes: f.MaxLineBytes,
		List: func(ctx context.Context, cwd string) ([]driver.SessionSummary, error) {
			return keptSessions(ctx, cwd, probe.Agent, probe.Driver)
		},
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		logger.Error("tai acp", "err", err)
		return exitcode.Said(exitcode.AgentError)
	}
	return nil
}

// acpSession runs one editor session until the editor closes it.
func acpSession(ctx context.Context, o RunOptions, r resolvedRun, spec acpserver.Spec, h acpserver.Hooks, logger *slog.Logger) error {
	f := &r.f
	f.Cwd, f.Resume, f.Continue = spec.Cwd, spec.ResumeID, false
	o.prompter, o.editorForms = h.Prompter, h.Elicitor
	// The editor shows what happened; denials are answers, not failures.
	f.Output, f.AllowDenials = OutputJSON, true
	// stdin and stdout are the editor's: the run has neither.
	o.IO.In, o.IO.Out = eofReader{}, o.IO.Err
	opts, cleanup, err := buildRun(o, r, nil, logger)
	defer cleanup()
	if err != nil {
		return err
	}
	opts.MCPServers = append(opts.MCPServers, spec.MCPServers...)
	opts.LoadReplay = spec.Load
	opts.Sinks = append(opts.Sinks, h.Sink)
	opts.Turns, opts.Interrupts = h.Turns, h.Interrupts
	opts.OnSession = func(c runner.Live) { h.OnSession(c) }
	opts.Passthrough = h.Passthrough
	if h.Files != nil {
		opts.EditorFiles = h.Files
	}
	started := recordStart(&opts, logger)
	res, err := runner.Run(ctx, opts)
	started()
	recordSession(context.WithoutCancel(ctx), opts, res, promptExcerpt(opts.Prompt, opts.Env), logger)
	return err
}

// keptSessions lists the resumable sessions tai kept for a workspace, newest
// first, one entry per session.
func keptSessions(ctx context.Context, cwd, agent string, drv driver.Name) ([]driver.SessionSummary, error) {
	recs, _, err := sessionStore().List(ctx, cwd)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []driver.SessionSummary
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		if !r.Resumable || r.Agent != agent || r.Driver != string(drv) || seen[r.SessionID] {
			continue
		}
		seen[r.SessionID] = true
		out = append(out, driver.SessionSummary{ID: r.SessionID, Cwd: r.Workspace, Title: r.Prompt, UpdatedAt: r.Time.UTC().Format(time.RFC3339)})
	}
	return out, nil
}

// eofReader is a stdin that has ended: stdin is the editor's.
type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }
