package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tai-dev/tai/agentspec"
	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/ask/tty"
	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/config"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/elicit"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/feed"
	"github.com/tai-dev/tai/internal/readlimit"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/quota"
	"github.com/tai-dev/tai/render"
	"github.com/tai-dev/tai/runner"
)

// buildRun turns a resolved command line into runner options: the flags
// become an agent Spec (package agentspec, the resolver every front end
// shares) for the agent already found, and the run's own parts (prompt,
// session, sinks, audit log, trace) are added around what it resolves.
// cleanup is always safe to call.
func buildRun(ro RunOptions, r resolvedRun, args []string, logger *slog.Logger) (runner.Options, func(), error) {
	b := &runBuild{f: r.f, r: r, deps: ro, std: ro.IO, logger: logger}
	err := b.build(args)
	return b.o, b.cleanup, err
}

// runBuild is buildRun in progress.
type runBuild struct {
	f       RunFlags
	r       resolvedRun
	deps    RunOptions // who answers where the terminal does not, chat's terminal
	std     IO
	logger  *slog.Logger
	closers []func()
	o       runner.Options
	res     agentspec.Resolved

	tp       *tty.Prompter // the terminal's asks, when there is one
	form     *elicit.Form  // the terminal's elicitation forms
	prompter policy.Prompter
	answerer policy.Prompter // the cap-speak parent, raced with the feed
	feed     *feed.Server
}

func (b *runBuild) cleanup() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
}

func (b *runBuild) build(args []string) error {
	f := b.f
	cwd, addDirs, err := workspaceOf(f, b.std)
	if err != nil {
		return err
	}
	sayUnconfined(f.Sandbox, b.std)
	b.o.RunID = newRunID()
	if err := b.askers(); err != nil {
		return err
	}
	if err := b.resolve(cwd, addDirs); err != nil {
		return err
	}
	for _, step := range []func() error{b.session, func() error { return b.prompt(args) }, b.settings} {
		if err := step(); err != nil {
			return err
		}
	}
	b.sinks()
	if err := b.auditLog(); err != nil {
		return err
	}
	return b.agentOutput()
}

// checkRun is buildRun's checks alone, for tai acp before it serves the
// editor, so that a bad flag is a usage error then and not in each
// session: the workspace, the feed's flags, the policy and the sandbox,
// --wait-quota, --continue and --fork, --pty-size, --set, --mcp and
// --redact. It opens nothing: no terminal, feed, audit log or trace. Its
// options are the agent's as resolved (Agent, Driver, Cwd).
func checkRun(ro RunOptions, r resolvedRun, logger *slog.Logger) (runner.Options, error) {
	b := &runBuild{f: r.f, r: r, deps: ro, std: ro.IO, logger: logger}
	cwd, addDirs, err := workspaceOf(b.f, b.std)
	if err != nil {
		return b.o, err
	}
	if err := b.f.Feed.check(); err != nil {
		return b.o, exitcode.With(exitcode.Usage, err)
	}
	for _, step := range []func() error{func() error { return b.resolve(cwd, addDirs) }, b.session, b.settings} {
		if err := step(); err != nil {
			return b.o, err
		}
	}
	if _, err := newRedactor(nil, b.o.MCPServers, b.f.Redact); err != nil {
		return b.o, exitcode.With(exitcode.Usage, fmt.Errorf("--redact: %w", err))
	}
	return b.o, nil
}

// agent is the agent the flags name, among the config's agents.
func (f RunFlags) agent(custom []config.Agent) agentspec.Agent {
	return agentspec.Agent{Name: f.Agent, Command: f.AgentCmd, Driver: driver.Name(f.Driver), Model: f.Model, Mode: f.Mode, Custom: custom}
}

// auditPath is the run's audit log ("" with --no-audit).
func (f RunFlags) auditPath(runID string) string {
	switch {
	case f.NoAudit:
		return ""
	case f.Audit != "":
		return f.Audit
	}
	return audit.DefaultPath(runID)
}

// spec is the run's agent Spec.
func (f RunFlags) spec(custom []config.Agent, cwd string, addDirs []string, runID string) agentspec.Spec {
	pol := agentspec.Policy{File: f.Policy, UserFile: true, Approve: f.Approve, Allow: f.Allow, Ask: f.Ask, Deny: f.Deny,
		Remember: f.Remember, NonInteractive: f.NonInteractive, AllowDenials: f.AllowDenials}
	sb := &agentspec.Sandbox{Mode: f.Sandbox, NetAllow: f.NetAllow, Write: f.SandboxWrite}
	if p := f.auditPath(runID); p != "" {
		sb.Protect = append(sb.Protect, p) // tai's own, like its state
		if f.Audit != "" {
			pol.Protected = append(pol.Protected, f.Audit)
		}
	}
	return agentspec.Spec{Agent: f.agent(custom), Cwd: cwd, AddDirs: addDirs, Env: f.Env, Policy: pol, Sandbox: sb}
}

// workspaceOf is --cwd (default the working directory) and --add-dir,
// absolute and checked.
func workspaceOf(f RunFlags, std IO) (string, []string, error) {
	cwd := f.Cwd
	if cwd == "" {
		var err error
		if cwd, err = std.Wd(); err != nil {
			return "", nil, exitcode.Usagef("working directory: %v", err)
		}
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return "", nil, exitcode.Usagef("--cwd: %v", err)
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return "", nil, exitcode.Usagef("--cwd %s is not a directory", abs)
	}
	var dirs []string
	for _, d := range f.AddDir {
		if !filepath.IsAbs(d) {
			d = filepath.Join(abs, d)
		}
		d = filepath.Clean(d)
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return "", nil, exitcode.Usagef("--add-dir %s is not a directory", d)
		}
		dirs = append(dirs, d)
	}
	return abs, dirs, nil
}

// askers are who answers the agent's asks: an editor (tai acp), else the
// terminal, and the cap-speak parent; the live feed races both.
func (b *runBuild) askers() error {
	f, d := b.f, b.deps
	b.prompter, b.answerer = d.prompter, d.answerer
	if f.Output != OutputStreamJSON && b.prompter == nil { // else no tty is opened (and left open)
		if t, ok := b.std.TTY(); ok {
			b.closers = append(b.closers, func() { t.Close() })
			var in io.Reader = t
			if d.termIn != nil {
				in = d.termIn // chat's editor reads the same terminal: one reader for both
			}
			b.tp = &tty.Prompter{In: in, Out: t, Hold: d.hold}
			b.prompter = b.tp
			b.form = &elicit.Form{In: t, Out: t, Lines: b.tp} // one reader of the terminal for both
		}
	}
	lf, closeFeed, err := openFeed(b.o.RunID, feed.KindRun, f.Feed, b.logger, b.std)
	b.closers = append(b.closers, closeFeed)
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	if b.feed = lf.srv; b.feed != nil {
		b.o.Sinks = append(b.o.Sinks, b.feed.Sink(""))
		switch {
		case b.tp != nil && d.prompter == nil:
			b.prompter = withFeed(b.tp, b.feed) // the terminal's asks
		case d.prompter != nil:
			// tai acp: the editor and the feed, whichever answers first.
			b.prompter = policy.Race(policy.Channel(ask.ViaEditor, d.prompter), b.feed.Channel())
		}
		if d.answerer != nil {
			// The cap-speak parent and the feed: whoever answers first.
			b.answerer = policy.Race(policy.Channel(ask.ViaParent, d.answerer), b.feed.Channel())
		}
	}
	return nil
}

// resolve resolves the run's Spec and takes its options.
func (b *runBuild) resolve(cwd string, addDirs []string) error {
	spec := b.f.spec(b.r.cfg.Agents, cwd, addDirs, b.o.RunID)
	spec.BaseEnv = b.std.Env()
	spec.Policy.Prompter, spec.Policy.Answerer = b.prompter, b.answerer
	r, err := agentspec.ResolveFound(spec, b.r.agent)
	if err != nil {
		return err
	}
	b.res = r
	o := r.Options
	f := b.f
	o.RunID, o.Sinks = b.o.RunID, b.o.Sinks
	o.Logger, o.Version, o.Timeout, o.CancelGrace = b.logger, Version, f.Timeout, f.CancelGrace
	o.ResumeID, o.AuthMethod, o.MaxLineBytes, o.MaxMessageBytes = f.Resume, f.Auth, f.MaxLineBytes, f.MaxMessageBytes
	if o.Quota, err = b.quota(r); err != nil {
		return err
	}
	b.o = o
	return nil
}

// DefaultQuotaWait is how long --wait-quota (or the policy's quota =
// "wait") waits for usage limits to reset, in all, when not told.
const DefaultQuotaWait = 24 * time.Hour

// quota is what the run does at the agent's usage limit: --wait-quota
// and --max-resumes, else the policy's quota and quota_resumes; and whose
// account it is (a hash of the credentials the agent's preset names).
func (b *runBuild) quota(r agentspec.Resolved) (runner.QuotaOptions, error) {
	f := b.f
	if f.WaitQuota < 0 || f.MaxResumes < 0 {
		return runner.QuotaOptions{}, exitcode.Usagef("--wait-quota and --max-resumes must not be negative")
	}
	env := r.Options.Env
	if env == nil {
		env = b.std.Env()
	}
	home, _ := b.std.lookup("HOME")
	agent := r.Preset.Known()
	if agent == "" {
		agent = r.Options.Agent
	}
	q := runner.QuotaOptions{
		Account:    quota.AccountOf(agent, r.Preset.Credentials(), env, home),
		Wait:       f.WaitQuota,
		MaxResumes: f.MaxResumes,
	}
	given := f.Changed != nil && f.Changed("wait-quota")
	if !given && r.Policy.Quota == policy.QuotaWait {
		q.Wait = DefaultQuotaWait
	}
	if q.MaxResumes == 0 {
		q.MaxResumes = r.Policy.QuotaResumes
	}
	return q, nil
}

// session is --continue (the last resumable session of this agent, driver
// and workspace, as kept by earlier runs) and --fork.
func (b *runBuild) session() error {
	f := b.f
	if f.Continue {
		if f.Resume != "" {
			return exitcode.Usagef("--continue and --resume both name the session; pass one")
		}
		id, err := continueSession(context.Background(), b.o.Cwd, b.o.Agent, b.o.Driver)
		if err != nil {
			return err
		}
		b.o.ResumeID = id
	}
	if f.Fork != "" {
		switch {
		case f.Resume != "" || f.Continue:
			return exitcode.Usagef("--fork starts a new session from another: it does not go with --resume or --continue")
		case b.o.Driver != driver.ACP:
			return exitcode.Usagef("--fork needs an ACP agent (session/fork); the %s driver has none", b.o.Driver)
		}
		b.o.ForkID = f.Fork
	}
	return nil
}

// prompt is the arguments (or stdin, for -) and --file; with none on a
// terminal, the user takes the agent's TUI over.
func (b *runBuild) prompt(args []string) error {
	f, o := b.f, &b.o
	text := strings.Join(args, " ")
	if text == "-" && b.deps.answerer != nil {
		return exitcode.Usagef("with --input-format stream-json, stdin carries the conversation: pass the first prompt as arguments, or none")
	}
	if text == "-" {
		data, err := readlimit.Read(b.std.In, "the prompt on stdin", readlimit.Stdin)
		if err != nil {
			return exitcode.Usagef("reading the prompt from stdin: %v", err)
		}
		text = string(data)
	}
	if err := checkPrompt(text, len(args) > 0); err != nil {
		return err
	}
	if text != "" {
		o.Prompt = append(o.Prompt, driver.TextContent(text))
	}
	for _, path := range f.Files {
		c, err := fileContent(o.Cwd, path, f.EmbedFiles)
		if err != nil {
			return exitcode.With(exitcode.Usage, err)
		}
		o.Prompt = append(o.Prompt, c)
	}
	if d := b.deps; len(o.Prompt) == 0 && o.ResumeID == "" && o.ForkID == "" && d.answerer == nil && d.prompter == nil && !d.chat {
		return b.attach()
	}
	return nil
}

// attach: no prompt on a terminal, with a terminal UI: the user takes the
// TUI over (tai still decides what shows up after a detach).
func (b *runBuild) attach() error {
	ut, tty := attachTerminal(b.std.In, b.std.Out)
	switch {
	case b.o.Driver != driver.PTY:
		return exitcode.Usagef("no prompt: pass it as arguments, or - to read it from stdin (or use --driver pty on a terminal to attach to the agent's TUI)")
	case !tty:
		return exitcode.Usagef("no prompt: pass it as arguments, or - to read it from stdin; attaching to the TUI needs a terminal on stdin and stdout")
	case b.f.Output != "" && b.f.Output != OutputText:
		return exitcode.Usagef("attaching to the TUI (no prompt) takes --output text, not %s", b.f.Output)
	}
	b.closers = append(b.closers, ut.close)
	b.o.Attach = ut.attach(driver.DefaultDetachKey, b.std, b.o.Agent)
	return nil
}

// settings are --pty-size, --set and --mcp.
func (b *runBuild) settings() error {
	f, o := b.f, &b.o
	if f.PTYSize != "" {
		var cols, rows int
		if n, err := fmt.Sscanf(f.PTYSize, "%dx%d", &cols, &rows); err != nil || n != 2 || cols < 20 || rows < 5 || cols > 1000 || rows > 10000 {
			return exitcode.Usagef("--pty-size wants COLSxROWS (at least 20x5), not %q", f.PTYSize)
		}
		o.Cols, o.Rows = cols, rows
	}
	for _, kv := range f.Set {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return exitcode.Usagef("--set wants id=value, not %q", kv)
		}
		o.Config = append(o.Config, [2]string{k, v})
	}
	for _, m := range f.MCP {
		servers, err := parseMCP(m)
		if err != nil {
			return exitcode.With(exitcode.Usage, err)
		}
		o.MCPServers = append(o.MCPServers, servers...)
	}
	return nil
}

// sinks are the text renderer (on the screen tai owns) and the
// elicitation chain, and what the audit log records of the settings.
func (b *runBuild) sinks() {
	f, d, o := b.f, b.deps, &b.o
	if (f.Output == "" || f.Output == OutputText) && o.Attach == nil && d.prompter == nil { // attached, the screen is the TUI's
		out := b.std.Out
		if d.above != nil {
			out = d.above(out) // chat: above the line being typed
		}
		text := render.NewText(out, b.std.ColorOn(b.std.Out))
		text.Verbose = f.Verbose
		text.Status = b.std.OutTTY() // a pipe gets no status line
		if m := b.res.Engine.Mode(); m == policy.ApproveAll || m == policy.Yolo {
			text.QuietAllows = true // every allow is the one asked for: noise, unless -v
		}
		o.Sinks = append(o.Sinks, text)
		if b.tp != nil && b.std.OutTTY() {
			// The same screen: a diff tai's output showed is not asked again.
			b.tp.Shown = text.ShownDiff
		}
	}
	cfg, ni := b.res.Policy, b.res.NonInteractive
	o.Elicitor = elicitChain(cfg.Elicit, b.form, d.editorForms, d.prompter != nil, d.answerer, b.feed, ni) // the cap-speak parent itself answers elicitations
	o.RunInfo = map[string]any{"approve": string(b.res.Engine.Mode()), "non_interactive": string(ni), "allow_denials": f.AllowDenials,
		"policy": cfg.Path, "rules": len(cfg.Rules), "floor": !cfg.NoFloor, "remember": string(cfg.Remember),
		"mode": f.Mode, "model": f.Model, "set": f.Set, "resume": o.ResumeID, "fork": f.Fork, "continue": f.Continue, "timeout": f.Timeout.String(), "wait_quota": f.WaitQuota.String(), "output": f.Output,
		"sandbox": f.Sandbox, "net_allow": f.NetAllow, "sandbox_write": f.SandboxWrite}
}

// auditLog opens the run's audit log: every run has one unless --no-audit.
func (b *runBuild) auditLog() error {
	path := b.f.auditPath(b.o.RunID)
	env := b.o.Env
	if env == nil {
		env = b.std.Env()
	}
	red, err := newRedactor(env, b.o.MCPServers, b.f.Redact)
	if err != nil {
		return exitcode.With(exitcode.Usage, fmt.Errorf("--redact: %w", err))
	}
	if path == "" {
		guardFeed(b.feed, nil, red, interruptSelf) // the feed is redacted as a log would be
		return nil
	}
	log, err := audit.Open(path, audit.Options{Run: b.o.RunID, Redactor: red, Logger: b.logger})
	if err != nil {
		return exitcode.With(exitcode.Usage, fmt.Errorf("--audit: %w", err))
	}
	b.closers = append(b.closers, func() {
		if err := log.Close(); err != nil {
			b.logger.Error("closing the audit log", "path", path, "err", err)
		}
	})
	b.o.Audit = log
	guardFeed(b.feed, log, red, interruptSelf)
	return nil
}

// agentOutput is the agent's stderr (shown live with --verbose; always
// kept for crash reports) and the --trace transcript.
func (b *runBuild) agentOutput() error {
	if b.f.Verbose {
		b.o.StderrTo = prefixWriter(b.std.Err, "["+b.o.Agent+"] ")
	}
	if b.f.Trace != "" {
		env := b.o.Env
		if env == nil {
			env = b.std.Env()
		}
		tw, err := traceWriter(b.f.Trace, env, b.f.Redact, b.o.MCPServers)
		if err != nil {
			return exitcode.With(exitcode.Usage, err)
		}
		b.closers = append(b.closers, func() { _ = tw.Close() })
		b.o.Trace = tw.Line
	}
	return nil
}
