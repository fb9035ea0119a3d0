// Package app holds tai's commands, so that cmd/tai only assembles them:
// each command's constructor (NewCmd*, in cmd_*.go) declares its flags next
// to its options and takes an IO and, for tests, the function it runs. The
// commands resolve an agent, build the policy and the output, run the
// session and return an error that carries the exit code; Report prints it.
package app

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/capspeak"
	"github.com/tai-dev/tai/config"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/elicit"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/feed"
	"github.com/tai-dev/tai/internal/readlimit"
	"github.com/tai-dev/tai/internal/statedir"
	"github.com/tai-dev/tai/internal/tracefile"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/preset"
	"github.com/tai-dev/tai/redact"
	"github.com/tai-dev/tai/render"
	"github.com/tai-dev/tai/runner"
)

// Version is tai's version, set at build time.
var Version = "0.1.0-dev"

// RunFlags are `tai run`'s flags.
type RunFlags struct {
	Agent           string
	AgentCmd        string
	AgentCmdSet     bool // --agent-cmd was given (an empty one is refused)
	Driver          string
	Cwd             string
	Approve         string
	NonInteractive  string
	AllowDenials    bool
	Mode            string
	Model           string
	Set             []string
	Resume          string
	Continue        bool
	Fork            string
	AddDir          []string
	Auth            string
	MCP             []string
	Files           []string
	EmbedFiles      bool
	Timeout         time.Duration
	CancelGrace     time.Duration
	Output          string
	Trace           string
	Verbose         bool
	MaxLineBytes    int64
	MaxMessageBytes int64
	Env             []string
	Audit           string
	NoAudit         bool
	Policy          string
	Allow           []string
	Ask             []string
	Deny            []string
	Remember        string
	Redact          []string
	// PTYSize is COLSxROWS for the pty driver's screen.
	PTYSize string
	// Sandbox is --sandbox: auto | on | off.
	Sandbox string
	// NetAllow is --net-allow: HOST:PORT the agent may connect to; given,
	// it turns the network rule on.
	NetAllow []string
	// InputFormat "stream-json" makes tai an agent its parent drives on
	// stdin (cap.md's agent-side binding); "" or "text" is the prompt
	// from the arguments.
	InputFormat string

	// Changed reports whether a flag was given on the command line; the
	// config's defaults fill the others. Nil: every field is as given.
	Changed func(flag string) bool

	Feed FeedFlags

	answerer policy.Prompter // the parent, under --input-format stream-json
	chat     bool            // tai chat: the prompts come as lines
	prompter policy.Prompter // the human where the terminal is not: an editor, under tai acp
	cfg      config.Config   // the user's and the project's configuration
}

// Outputs.
const (
	OutputText       = "text"
	OutputJSON       = "json"
	OutputStreamJSON = "stream-json"
)

// Run runs `tai run`. Its error carries the exit code (exitcode.Of).
func Run(ctx context.Context, f RunFlags, args []string, std IO) error {
	if wantsChat(f, args, std) {
		return Chat(ctx, f, args, std)
	}
	ctx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	std.Out = &closedOut{w: std.Out, stop: func() { stopRun(exitcode.ErrOutputClosed) }}
	f, err := applyConfig(f)
	if err != nil {
		return err
	}
	logger := newLogger(std.Err, f.Verbose)
	var frames *render.Frames
	if f.Output == OutputStreamJSON {
		frames = render.NewFrames(std.Out)
	}
	var conn *capspeak.Conn
	switch f.InputFormat {
	case "", "text":
	case "stream-json":
		if f.Output != OutputStreamJSON {
			return exitcode.Usagef("--input-format stream-json needs --output stream-json (tai --cap-speak stream-json sets both)")
		}
		conn = capspeak.New(frames, logger, Version)
		f.answerer = conn
	default:
		return exitcode.Usagef("--input-format must be text or stream-json, not %q", f.InputFormat)
	}
	opts, cleanup, err := buildRun(f, args, std, logger)
	defer cleanup()
	if err != nil {
		return err
	}
	var text *render.Text // buffered: flushed once the run is over
	for _, s := range opts.Sinks {
		if t, ok := s.(*render.Text); ok {
			text = t
		}
	}
	switch f.Output {
	case OutputStreamJSON:
		opts.Sinks = append(opts.Sinks, frames)
	}
	if conn != nil {
		stop := serveParent(ctx, conn, std.In, logger)
		defer stop()
		opts.Turns, opts.Interrupts = conn.Turns(), conn.Interrupts()
	}
	res, runErr := runner.Run(ctx, opts)
	recordSession(context.WithoutCancel(ctx), opts, res, logger)
	switch f.Output {
	case OutputJSON:
		out := bufio.NewWriterSize(std.Out, 64<<10)
		_ = res.WriteIndented(out)
		_ = out.Flush()
		return exit(res.ExitCode)
	case OutputStreamJSON:
		_ = frames.Write(runner.ResultFrame{Type: "result", Seq: res.LastSeq + 1, Time: time.Now().UTC(), Result: res})
		return exit(res.ExitCode)
	}
	if text != nil {
		_ = text.Flush()
	}
	return runEnd(res, runErr != nil || res.ExitCode != 0)
}

// runEnd is how a run in text ended: when it failed, the error with the
// run's code (which may be 0 for a run that ended early but clean).
func runEnd(res runner.Result, failed bool) error {
	if !failed {
		return nil
	}
	c := exitcode.Code(res.ExitCode)
	return exitcode.With(c, fmt.Errorf("%s (exit %d, %s)", res.Error, res.ExitCode, c.Name()))
}

// wantsChat: no prompt on a terminal, for a driver without a terminal UI
// of its own, is an interactive session (tai chat).
func wantsChat(f RunFlags, args []string, std IO) bool {
	if len(args) > 0 || f.Resume != "" || f.Continue || f.Fork != "" || len(f.Files) > 0 ||
		f.InputFormat == "stream-json" || !std.InTTY() || !std.OutTTY() {
		return false
	}
	cf, err := applyConfig(f)
	if err != nil {
		return false
	}
	p, _, err := resolveAgent(cf)
	if err != nil {
		return false
	}
	drv := cf.Driver
	if drv == "" {
		drv = p.Driver
	}
	return drv != "pty"
}

func newLogger(w io.Writer, verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: logValue}))
}

// colorOn: colour only on a terminal, and never with NO_COLOR.
func colorOn(w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	f, ok := osFile(w)
	return ok && term.IsTerminal(int(f.Fd()))
}

// buildRun turns flags into runner options. cleanup is always safe to call.
func buildRun(f RunFlags, args []string, std IO, logger *slog.Logger) (runner.Options, func(), error) {
	var closers []func()
	cleanup := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	o := runner.Options{Logger: logger, Version: Version, Timeout: f.Timeout, CancelGrace: f.CancelGrace,
		AllowDenials: f.AllowDenials, Mode: f.Mode, Model: f.Model, ResumeID: f.Resume, AuthMethod: f.Auth,
		MaxLineBytes: f.MaxLineBytes, MaxMessageBytes: f.MaxMessageBytes, Driver: f.Driver}
	if err := checkRunFlags(f); err != nil {
		return o, cleanup, err
	}
	switch f.Output {
	case "", OutputText, OutputJSON, OutputStreamJSON:
	default:
		return o, cleanup, exitcode.Usagef("--output must be text, json or stream-json, not %q", f.Output)
	}

	// Agent.
	p, argv, err := resolveAgent(f)
	if err != nil {
		return o, cleanup, err
	}
	o.Argv = argv
	if o.Driver == "" {
		o.Driver = p.Driver
	}
	o.Agent, o.NoClientFS, o.IgnoresStdinEOF = p.Name, p.Quirks.NoClientFS, p.Quirks.IgnoresStdinEOF
	if len(f.Env) > 0 {
		o.Env = append(os.Environ(), f.Env...)
	}

	// Workspace.
	cwd := f.Cwd
	if cwd == "" {
		var err error
		if cwd, err = os.Getwd(); err != nil {
			return o, cleanup, exitcode.Usagef("working directory: %v", err)
		}
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return o, cleanup, exitcode.Usagef("--cwd: %v", err)
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return o, cleanup, exitcode.Usagef("--cwd %s is not a directory", abs)
	}
	o.Cwd = abs
	for _, d := range f.AddDir {
		if !filepath.IsAbs(d) {
			d = filepath.Join(abs, d)
		}
		d = filepath.Clean(d)
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return o, cleanup, exitcode.Usagef("--add-dir %s is not a directory", d)
		}
		o.AddDirs = append(o.AddDirs, d)
	}

	// --continue: the last resumable session of this agent, driver and
	// workspace, as kept by earlier runs.
	if f.Continue {
		if f.Resume != "" {
			return o, cleanup, exitcode.Usagef("--continue and --resume both name the session; pass one")
		}
		id, err := continueSession(context.Background(), abs, p.Name, o.Driver)
		if err != nil {
			return o, cleanup, err
		}
		o.ResumeID = id
	}

	if f.Fork != "" {
		switch {
		case f.Resume != "" || f.Continue:
			return o, cleanup, exitcode.Usagef("--fork starts a new session from another: it does not go with --resume or --continue")
		case o.Driver != "acp":
			return o, cleanup, exitcode.Usagef("--fork needs an ACP agent (session/fork); the %s driver has none", o.Driver)
		}
		o.ForkID = f.Fork
	}

	// Prompt.
	text := strings.Join(args, " ")
	if text == "-" && f.answerer != nil {
		return o, cleanup, exitcode.Usagef("with --input-format stream-json, stdin carries the conversation: pass the first prompt as arguments, or none")
	}
	if text == "-" {
		b, err := readlimit.Read(std.In, "the prompt on stdin", readlimit.Stdin)
		if err != nil {
			return o, cleanup, exitcode.Usagef("reading the prompt from stdin: %v", err)
		}
		text = string(b)
	}
	if err := checkPrompt(text, len(args) > 0); err != nil {
		return o, cleanup, err
	}
	if text != "" {
		o.Prompt = append(o.Prompt, driver.TextContent(text))
	}
	for _, path := range f.Files {
		c, err := fileContent(abs, path, f.EmbedFiles)
		if err != nil {
			return o, cleanup, exitcode.With(exitcode.Usage, err)
		}
		o.Prompt = append(o.Prompt, c)
	}
	if len(o.Prompt) == 0 && o.ResumeID == "" && o.ForkID == "" && f.answerer == nil && f.prompter == nil && !f.chat {
		// No prompt on a terminal, with a terminal UI: the user takes the
		// TUI over (tai still decides what shows up after a detach).
		ut, tty := attachTerminal(std.In, std.Out)
		switch {
		case o.Driver != "pty":
			return o, cleanup, exitcode.Usagef("no prompt: pass it as arguments, or - to read it from stdin (or use --driver pty on a terminal to attach to the agent's TUI)")
		case !tty:
			return o, cleanup, exitcode.Usagef("no prompt: pass it as arguments, or - to read it from stdin; attaching to the TUI needs a terminal on stdin and stdout")
		case f.Output != "" && f.Output != OutputText:
			return o, cleanup, exitcode.Usagef("attaching to the TUI (no prompt) takes --output text, not %s", f.Output)
		}
		closers = append(closers, ut.close)
		o.Attach = ut.attach(driver.DefaultDetachKey, std, p.Name)
	}

	if f.PTYSize != "" {
		var cols, rows int
		if n, err := fmt.Sscanf(f.PTYSize, "%dx%d", &cols, &rows); err != nil || n != 2 || cols < 20 || rows < 5 || cols > 1000 || rows > 10000 {
			return o, cleanup, exitcode.Usagef("--pty-size wants COLSxROWS (at least 20x5), not %q", f.PTYSize)
		}
		o.Cols, o.Rows = cols, rows
	}
	for _, kv := range f.Set {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return o, cleanup, exitcode.Usagef("--set wants id=value, not %q", kv)
		}
		o.Config = append(o.Config, [2]string{k, v})
	}
	for _, m := range f.MCP {
		servers, err := parseMCP(m)
		if err != nil {
			return o, cleanup, exitcode.With(exitcode.Usage, err)
		}
		o.MCPServers = append(o.MCPServers, servers...)
	}

	// Policy: the policy file (--policy, else the user's default one; never
	// one from the workspace, which an agent's repo could plant), then flags.
	eng, err := buildPolicy(f, abs)
	eng.roots = o.AddDirs // the workspace's too: inside, not "outside"
	if err != nil {
		return o, cleanup, exitcode.With(exitcode.Usage, err)
	}
	prompter := f.prompter
	var tp *policy.TTYPrompter
	var form *elicit.Form
	if tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err == nil && isTTY(tty) && f.Output != OutputStreamJSON && prompter == nil {
		closers = append(closers, func() { tty.Close() })
		tp = &policy.TTYPrompter{In: tty, Out: tty}
		prompter = tp
		form = &elicit.Form{In: tty, Out: tty}
	}
	o.RunID = newRunID()
	parent := f.answerer // the cap-speak parent itself: it also answers elicitations
	lf, closeFeed, err := openFeed(o.RunID, feed.KindRun, f.Feed, logger, std.Err)
	closers = append(closers, closeFeed)
	if err != nil {
		return o, cleanup, exitcode.With(exitcode.Usage, err)
	}
	if srv := lf.srv; srv != nil {
		o.Sinks = append(o.Sinks, srv.Sink(""))
		if tp != nil && f.prompter == nil {
			prompter = withFeed(tp, srv) // the terminal's asks; an editor's (tai acp) stay the editor's
		}
		if f.answerer != nil {
			// The cap-speak parent and the feed: whoever answers first.
			f.answerer = policy.Race{{Name: policy.ViaParent, Prompter: f.answerer}, srv.Channel()}
		}
	}
	if (f.Output == "" || f.Output == OutputText) && o.Attach == nil && f.prompter == nil { // attached, the screen is the TUI's
		text := render.NewText(std.Out, colorOn(std.Out))
		o.Sinks = append(o.Sinks, text)
		if tp != nil && isTTY(std.Out) {
			// The same screen: a diff tai's output showed is not asked again.
			tp.Shown = text.ShownDiff
		}
	}
	engine, err := eng.build(prompter, f.answerer)
	if err != nil {
		return o, cleanup, exitcode.With(exitcode.Usage, err)
	}
	o.Decider, o.Modes = engine, engine
	if eng.cfg.Path != "" {
		o.Protected = append(o.Protected, eng.cfg.Path)
	}
	if o.Mode == "" {
		o.Mode = engine.DefaultMode()
	}
	mode := engine.Mode()
	ni := eng.ni
	if ni == "" {
		ni = eng.cfg.NonInteractive
	}
	o.Elicitor = elicitChain(eng.cfg.Elicit, form, parent, ni)

	// Audit log: every run has one unless --no-audit.
	o.RunInfo = map[string]any{"approve": string(mode), "non_interactive": string(ni), "allow_denials": f.AllowDenials,
		"policy": eng.cfg.Path, "rules": len(eng.cfg.Rules), "floor": !eng.cfg.NoFloor, "remember": string(eng.cfg.Remember),
		"mode": f.Mode, "model": f.Model, "set": f.Set, "resume": o.ResumeID, "fork": f.Fork, "continue": f.Continue, "timeout": f.Timeout.String(), "output": f.Output,
		"sandbox": f.Sandbox, "net_allow": f.NetAllow}
	if !f.NoAudit {
		path := f.Audit
		if path == "" {
			path = audit.DefaultPath(o.RunID)
		}
		var env []string
		if o.Env != nil {
			env = o.Env
		} else {
			env = os.Environ()
		}
		red, err := redact.New(redact.Options{Literals: append(redact.SecretEnvLiterals(env), tracefile.MCPLiterals(o.MCPServers)...), Patterns: f.Redact})
		if err != nil {
			return o, cleanup, exitcode.With(exitcode.Usage, fmt.Errorf("--redact: %w", err))
		}
		log, err := audit.Open(path, audit.Options{Run: o.RunID, Redactor: red, Logger: logger})
		if err != nil {
			return o, cleanup, exitcode.With(exitcode.Usage, fmt.Errorf("--audit: %w", err))
		}
		closers = append(closers, func() {
			if err := log.Close(); err != nil {
				logger.Error("closing the audit log", "path", path, "err", err)
			}
		})
		o.Audit = log
	}

	// Sandbox: the agent confined to the workspace and its own state.
	sbc, err := sandboxConfig(f, p, eng.cfg, o.Audit, o.Env)
	if err != nil {
		return o, cleanup, exitcode.With(exitcode.Usage, err)
	}
	if isTai(o.Argv) {
		// tai as the agent (the built-in agent, tai --cap-speak) keeps its
		// state apart from this tai's, which it may not write.
		nested := statedir.Dir("agents")
		if err := os.MkdirAll(nested, 0o700); err != nil {
			return o, cleanup, fmt.Errorf("state directory for tai as the agent: %w", err)
		}
		if o.Env == nil {
			o.Env = os.Environ()
		}
		o.Env = append(o.Env, "XDG_STATE_HOME="+nested)
		sbc.Write = append(sbc.Write, nested)
	}
	o.Sandbox = sbc

	// Agent stderr: shown live with --verbose; always kept for crash reports.
	if f.Verbose {
		o.StderrTo = prefixWriter(std.Err, "["+p.Name+"] ")
	}

	if f.Trace != "" {
		tw, err := traceWriter(f.Trace, o.Env, f.Redact, o.MCPServers)
		if err != nil {
			return o, cleanup, exitcode.With(exitcode.Usage, err)
		}
		closers = append(closers, func() { _ = tw.Close() })
		o.Trace = tw.Line
	}
	return o, cleanup, nil
}

// resolveAgent finds the agent of --agent / --agent-cmd (a preset, or one
// from the user's config) and the command that starts it.
func resolveAgent(f RunFlags) (preset.Preset, []string, error) {
	var p preset.Preset
	custom, isCustom := f.cfg.Agent(f.Agent)
	switch {
	case f.AgentCmd == "" && isCustom:
		cp, argv, err := configAgent(custom)
		if err != nil {
			return p, nil, exitcode.With(exitcode.Usage, err)
		}
		return cp, argv, nil
	case f.AgentCmd != "":
		cp, argv, err := preset.Custom(f.AgentCmd)
		if err != nil {
			return p, nil, exitcode.With(exitcode.Usage, err)
		}
		if f.Agent != "" && f.Agent != "builtin" {
			// A preset name plus a command: the command, with the preset's quirks.
			if known, ok := preset.Lookup(f.Agent); ok {
				cp.Quirks, cp.Name = known.Quirks, known.Name
			}
		}
		return cp, argv, nil
	default:
		name := f.Agent
		if name == "" {
			name = "builtin"
		}
		known, ok := preset.Lookup(name)
		if !ok {
			known := preset.Names()
			for _, a := range f.cfg.Agents {
				known = append(known, a.Name)
			}
			return p, nil, exitcode.Usagef("unknown agent %q (known: %s; or pass --agent-cmd)", name, strings.Join(known, ", "))
		}
		// The driver picks the command: claude over ACP is claude-agent-acp,
		// over stream-json the claude CLI itself.
		argv, err := known.CommandFor(f.Driver)
		if err != nil {
			return p, nil, exitcode.With(exitcode.Usage, err)
		}
		return known, argv, nil
	}
}

// elicitChain is the answer chain of the agent's elicitations: the policy
// file's [[elicit]] rules, the human at the terminal, the cap-speak parent;
// then decline, or a stop under --non-interactive fail.
func elicitChain(rules []policy.ElicitRule, form *elicit.Form, parent policy.Prompter, ni policy.NonInteractive) *elicit.Chain {
	c := &elicit.Chain{Rules: rules, Fail: ni == policy.NonInteractiveFail}
	if form != nil {
		c.Links = append(c.Links, elicit.Link{By: elicit.ByHuman, A: form})
	}
	if p, ok := parent.(elicit.Answerer); ok {
		c.Links = append(c.Links, elicit.Link{By: elicit.ByParent, A: p})
	}
	return c
}

// fileContent turns --file into a prompt block: embedded text when asked
// (and the agent can take it), else a link the agent reads itself.
func fileContent(cwd, path string, embed bool) (driver.Content, error) {
	if !filepath.IsAbs(path) {
		path = filepath.Join(cwd, path)
	}
	st, err := os.Stat(path)
	if err != nil {
		return driver.Content{}, fmt.Errorf("--file: %w", err)
	}
	c := driver.Content{Type: "resource_link", URI: "file://" + path, Name: filepath.Base(path), Size: st.Size(),
		MimeType: mime.TypeByExtension(filepath.Ext(path))}
	if embed {
		b, err := os.ReadFile(path)
		if err != nil {
			return driver.Content{}, fmt.Errorf("--file: %w", err)
		}
		c.Type, c.Text = "resource", string(b)
		if c.MimeType == "" {
			c.MimeType = "text/plain"
		}
	}
	return c, nil
}

// parseMCP reads --mcp: a JSON object (one server), a JSON array, or @FILE
// holding either.
func parseMCP(s string) ([]driver.MCPServer, error) {
	data := []byte(s)
	if strings.HasPrefix(s, "@") {
		b, err := readlimit.ReadFile(s[1:], readlimit.Config)
		if err != nil {
			return nil, fmt.Errorf("--mcp: %w", err)
		}
		data = b
	}
	data = []byte(strings.TrimSpace(string(data)))
	var list []driver.MCPServer
	if len(data) > 0 && data[0] == '[' {
		if err := json.Unmarshal(data, &list); err != nil {
			return nil, fmt.Errorf("--mcp: %w", err)
		}
	} else {
		var one driver.MCPServer
		if err := json.Unmarshal(data, &one); err != nil {
			return nil, fmt.Errorf("--mcp wants a JSON server object ({\"name\":..., \"command\":...}) or @file: %w", err)
		}
		list = append(list, one)
	}
	for i, m := range list {
		if m.Name == "" {
			return nil, fmt.Errorf("--mcp: server %d has no name", i)
		}
		if (m.Type == "" || m.Type == "stdio") && m.Command == "" {
			return nil, fmt.Errorf("--mcp: stdio server %q has no command", m.Name)
		}
		if (m.Type == "http" || m.Type == "sse") && m.URL == "" {
			return nil, fmt.Errorf("--mcp: %s server %q has no url", m.Type, m.Name)
		}
	}
	return list, nil
}

// traceWriter opens the raw wire transcript (JSONL, secrets redacted, the
// MCP servers' env, headers and secret flags among them):
// {"ts":..., "dir":"in"|"out", "line": <the message>}.
func traceWriter(path string, env, patterns []string, mcp []driver.MCPServer) (*tracefile.Writer, error) {
	if env == nil {
		env = os.Environ()
	}
	red, err := redact.New(redact.Options{Literals: append(redact.SecretEnvLiterals(env), tracefile.MCPLiterals(mcp)...), Patterns: patterns})
	if err != nil {
		return nil, fmt.Errorf("--trace: %w", err)
	}
	return tracefile.Open(path, red)
}

// prefixWriter prefixes each line, for the agent's stderr in our log.
func prefixWriter(w io.Writer, prefix string) io.Writer {
	return &prefixed{w: w, prefix: prefix, bol: true}
}

type prefixed struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	bol    bool
}

func (p *prefixed) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []byte
	for _, c := range b {
		if p.bol {
			out = append(out, p.prefix...)
			p.bol = false
		}
		out = append(out, c)
		if c == '\n' {
			p.bol = true
		}
	}
	_, err := p.w.Write(out)
	return len(b), err
}

// newRunID names a run: sortable by time, unique enough across processes.
func newRunID() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("run-%s-%x", time.Now().UTC().Format("20060102-150405"), b)
}

// policySetup is a loaded policy waiting for its prompter.
type policySetup struct {
	cfg       policy.Config
	ni        policy.NonInteractive
	workspace string
	roots     []string // --add-dir
	protected []string // the --audit file: tai's own, like its state
}

func buildPolicy(f RunFlags, workspace string) (policySetup, error) {
	var cfg policy.Config
	path := f.Policy
	if path == "" {
		if p, err := policy.DefaultPath(); err == nil {
			if _, err := os.Stat(p); err == nil {
				path = p
			}
		}
	}
	if path != "" {
		var err error
		if cfg, err = policy.Load(path); err != nil {
			return policySetup{}, fmt.Errorf("--policy: %w", err)
		}
	}
	cfg, err := cfg.WithFlags(policy.Flags{Approve: f.Approve, Allow: f.Allow, Ask: f.Ask, Deny: f.Deny})
	if err != nil {
		return policySetup{}, err
	}
	if f.Remember != "" {
		sc, err := policy.ParseScope(f.Remember)
		if err != nil {
			return policySetup{}, fmt.Errorf("--remember: %w", err)
		}
		cfg.Remember = sc
	}
	var ni policy.NonInteractive
	if f.NonInteractive != "" {
		if ni, err = policy.ParseNonInteractive(f.NonInteractive); err != nil {
			return policySetup{}, err
		}
	}
	ps := policySetup{cfg: cfg, ni: ni, workspace: workspace}
	if f.Audit != "" && !f.NoAudit {
		if abs, err := filepath.Abs(f.Audit); err == nil {
			ps.protected = append(ps.protected, abs)
		}
	}
	return ps, nil
}

func (p policySetup) build(prompter, answerer policy.Prompter) (*policy.Engine, error) {
	var mem *policy.Memory
	switch p.cfg.Remember {
	case policy.ScopeRun:
		mem = policy.NewMemory(policy.ScopeRun)
	case policy.ScopeWorkspace:
		var err error
		if mem, err = policy.OpenWorkspaceMemory(p.workspace); err != nil {
			return nil, fmt.Errorf("policy memory: %w", err)
		}
	}
	return policy.NewEngine(p.cfg, policy.Options{Workspace: p.workspace, Prompter: prompter, Answerer: answerer, NonInteractive: p.ni, Memory: mem,
		Protected: p.protected, Roots: p.roots})
}
