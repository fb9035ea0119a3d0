// Package app holds tai's commands, so that cmd/tai only assembles them:
// each command's constructor (NewCmd*, in cmd_*.go) declares its flags next
// to its options and takes an IO and, for tests, the function it runs. The
// commands resolve an agent, build the policy and the output, run the
// session and return an error that carries the exit code; Report prints it.
package app

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/capspeak"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/elicit"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/feed"
	"github.com/tai-dev/tai/internal/readlimit"
	"github.com/tai-dev/tai/internal/safetext"
	"github.com/tai-dev/tai/internal/tracefile"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/render"
	"github.com/tai-dev/tai/runner"
	"github.com/tai-dev/tai/sessions"
)

// Version is tai's version, set at build time.
var Version = "0.1.0-dev"

// Outputs.
const (
	OutputText       = "text"
	OutputJSON       = "json"
	OutputStreamJSON = "stream-json"
)

// Run runs `tai run`. Its error carries the exit code (exitcode.Of).
// With -o json or stream-json, stdout carries one result document
// whatever happens: a run refused before it started (an unknown agent, a
// bad policy) gets one too, with its status and error.
func Run(ctx context.Context, o RunOptions, args []string) error {
	r, err := resolveRun(o)
	if err != nil {
		notStarted(o.IO, o.Flags.Output, o.Flags.Agent, err)
		return err
	}
	if wantsChat(r, args, o.IO) {
		o.oneAgent() // its start waits on a human anyway
		return runChat(ctx, o, r, args)
	}
	ran := false
	err = runOnce(ctx, o, r, args, &ran)
	if err != nil && !ran {
		notStarted(o.IO, o.Flags.Output, o.Flags.Agent, err)
	}
	return err
}

// notStarted prints the result document of a run refused before it
// started, in output's form (nothing for text).
func notStarted(std IO, output, agent string, err error) {
	res := runner.NotStarted(err)
	res.Agent = agent
	switch output {
	case OutputJSON:
		out := bufio.NewWriter(std.Out)
		_ = res.WriteIndented(out)
		_ = out.Flush()
	case OutputStreamJSON:
		_ = render.NewFrames(std.Out).Write(runner.ResultFrame{Type: "result", Seq: 1, Time: time.Now().UTC(), Result: res})
	}
}

// CommandLineRefused gives a `tai run -o json` (or stream-json; or tai
// chat -o json) that cobra refused before the command ran (an unknown
// flag, a bad flag value) its one result document too: the output flag is
// read from args as cobra would have. Any other command line prints
// nothing here.
func CommandLineRefused(std IO, args []string, err error) {
	i := slices.IndexFunc(args, func(a string) bool { return !strings.HasPrefix(a, "-") })
	if i < 0 || args[i] != "run" && args[i] != "chat" {
		return
	}
	output, agent := "", ""
	flag := func(a string, j int, long, short string) (string, bool) {
		switch {
		case a == "--"+long || short != "" && a == "-"+short:
			if j+1 < len(args) {
				return args[j+1], true
			}
		case strings.HasPrefix(a, "--"+long+"="):
			return a[len(long)+3:], true
		case short != "" && strings.HasPrefix(a, "-"+short) && !strings.HasPrefix(a, "--"):
			return strings.TrimPrefix(a[2:], "="), true
		}
		return "", false
	}
	for j := i + 1; j < len(args) && args[j] != "--"; j++ {
		if v, ok := flag(args[j], j, "output", "o"); ok {
			output = v
		}
		if v, ok := flag(args[j], j, "agent", ""); ok {
			agent = v
		}
	}
	if output == OutputJSON || output == OutputStreamJSON {
		notStarted(std, output, agent, err)
	}
}

// runOnce is Run's one run; ran says whether it got as far as a result
// of its own.
func runOnce(ctx context.Context, o RunOptions, r resolvedRun, args []string, ran *bool) error {
	ctx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	std, f := o.IO, r.f
	widenPipe(std.Out)
	std.Out = &closedOut{w: std.Out, stop: func() { stopRun(exitcode.ErrOutputClosed) }}
	o.IO = std
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
		o.answerer = conn
	default:
		return exitcode.Usagef("--input-format must be text or stream-json, not %q", f.InputFormat)
	}
	opts, cleanup, err := buildRun(o, r, args, logger)
	defer cleanup()
	if err != nil {
		return err
	}
	opts.Sinks = append(opts.Sinks, o.oneAgentStreaming())
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
	// While tai starts the agent, the other thread makes what the run's end
	// needs: the JSON encoders, and the prompt's excerpt for the session
	// record (a redactor).
	excerpt := make(chan string, 1)
	go func() {
		warmEncoders(f)
		excerpt <- promptExcerpt(opts.Prompt, opts.Env)
	}()
	started := recordStart(&opts, logger)
	res, runErr := runner.Run(ctx, opts)
	*ran = true
	started()
	recordSession(context.WithoutCancel(ctx), opts, res, <-excerpt, logger)
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
	// The one printer (Report) adds the code: "(exit N, name)".
	return exitcode.With(exitcode.Code(res.ExitCode), errors.New(res.Error))
}

// wantsChat: no prompt on a terminal, for a driver without a terminal UI
// of its own, is an interactive session (tai chat).
func wantsChat(r resolvedRun, args []string, std IO) bool {
	f := r.f
	if len(args) > 0 || f.Resume != "" || f.Continue || f.Fork != "" || len(f.Files) > 0 ||
		f.InputFormat == "stream-json" || !std.InTTY() || !std.OutTTY() {
		return false
	}
	return r.agent.Driver != driver.PTY
}

// newLogger is the logger of tai's own diagnostics: with -v every record
// in full, else warnings and errors in tai's short style.
func newLogger(w io.Writer, verbose bool) *slog.Logger {
	if !verbose {
		return slog.New(newShortHandler(w))
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: logValue}))
}

// elicitChain is the answer chain of the agent's elicitations: the policy
// file's [[elicit]] rules, the human (at the terminal, or in the editor of
// tai acp), the cap-speak parent; then decline, or a stop under
// --non-interactive fail. The live feed (tai top) races the human and the
// parent, as it does for asks. Under tai acp an editor that shows no forms
// leaves the feed alone to answer (the turn's cancel still ends the wait);
// with no feed either, nobody can answer and the chain declines at once.
func elicitChain(rules []policy.ElicitRule, form *elicit.Form, editor elicit.Answerer, inEditor bool, parent policy.Prompter, srv *feed.Server, ni policy.NonInteractive) *elicit.Chain {
	c := &elicit.Chain{Rules: rules, Fail: ni == policy.NonInteractiveFail}
	raced := func(via ask.Via, a elicit.Answerer) elicit.Answerer {
		if srv == nil {
			return a
		}
		return elicit.Race(elicit.Channel(via, a), srv.Elicitor())
	}
	switch {
	case form != nil:
		c.Links = append(c.Links, elicit.Link{By: elicit.ByHuman, A: raced(ask.ViaTerminal, form)})
	case editor != nil && srv != nil:
		c.Links = append(c.Links, elicit.Link{By: elicit.ByHuman, A: editorOrFeed{editor: editor, feed: srv.Elicitor()}})
	case editor != nil:
		c.Links = append(c.Links, elicit.Link{By: elicit.ByHuman, A: editor})
	case inEditor && srv != nil:
		c.Links = append(c.Links, elicit.Link{By: elicit.ByHuman, A: elicit.Race(srv.Elicitor())})
	}
	if p, ok := parent.(elicit.Answerer); ok {
		c.Links = append(c.Links, elicit.Link{By: elicit.ByParent, A: raced(ask.ViaParent, p)})
	}
	return c
}

// editorOrFeed races the editor and the feed for an elicitation of a mode
// the editor shows, and leaves the feed alone for one it does not.
type editorOrFeed struct {
	editor elicit.Answerer
	feed   elicit.FormChannel
}

// modeOfferer is an editor that says which elicitation modes it shows.
type modeOfferer interface {
	Offers(driver.ElicitMode) bool
}

func (e editorOrFeed) Answer(ctx context.Context, req driver.ElicitationRequest) (driver.ElicitationAnswer, error) {
	if o, ok := e.editor.(modeOfferer); ok && !o.Offers(req.Mode) {
		return elicit.Race(e.feed).Answer(ctx, req)
	}
	return elicit.Race(elicit.Channel(ask.ViaEditor, e.editor), e.feed).Answer(ctx, req)
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
// {"ts":..., "dir":"in"|"out", "line": <the message>}. env is the
// environment whose secret values it masks.
func traceWriter(path string, env, patterns []string, mcp []driver.MCPServer) (*tracefile.Writer, error) {
	red, err := newRedactor(env, mcp, patterns)
	if err != nil {
		return nil, fmt.Errorf("--trace: %w", err)
	}
	return tracefile.Open(path, red)
}

// prefixWriter prefixes each line, for the agent's stderr in our log.
func prefixWriter(w io.Writer, prefix string) io.Writer {
	return &prefixed{w: w, prefix: prefix, bol: true}
}

// prefixed is the agent's stderr on tai's: escaped (safetext), so that
// what the agent writes there cannot act on the terminal either.
type prefixed struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	bol    bool
	part   []byte // a character cut by the end of the last write
}

func (p *prefixed) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	in := append(p.part, b...)
	p.part = nil
	// Keep back a last character the next write completes.
	for i := len(in) - 1; i >= 0 && i >= len(in)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(in[i]) {
			if !utf8.FullRune(in[i:]) {
				p.part = append([]byte(nil), in[i:]...)
				in = in[:i]
			}
			break
		}
	}
	var out []byte
	for len(in) > 0 {
		if p.bol {
			out = append(out, p.prefix...)
			p.bol = false
		}
		line := in
		if i := bytes.IndexByte(in, '\n'); i >= 0 {
			line, p.bol = in[:i+1], true
		}
		out = append(out, safetext.Text(string(line))...)
		in = in[len(line):]
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

// warmEncoders builds encoding/json's encoders for the types the run
// writes while the agent starts: built on first use they would cost the
// run about a millisecond each on its critical path, for a one-turn run
// most of its own time. Only those it writes: each is also CPU and memory
// that the other thread spends while tai starts the agent.
func warmEncoders(f RunFlags) {
	types := []any{sessions.Record{}} // the session record
	if !f.Feed.NoFeed {
		types = append(types, render.Tagged{}) // the live feed's frames
	}
	switch f.Output {
	case OutputStreamJSON:
		types = append(types, driver.Event{}, runner.Result{}) // its frames, its result
	case OutputJSON:
		types = append(types, runner.Result{})
	}
	for _, v := range types {
		_ = json.NewEncoder(io.Discard).Encode(v)
	}
}
