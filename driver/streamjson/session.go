// Package streamjson is tai's driver for agent CLIs that run headless and
// print one JSON object per line: Claude Code and Qwen Code in full duplex
// (NDJSON user lines and a control protocol on stdin: initialize,
// can_use_tool, hook_callback, interrupt, set_permission_mode, set_model),
// and the output-only CLIs (Gemini CLI, Codex exec, OpenCode run, Cursor,
// Amp), run once per turn and resumed by id. Each CLI's flavour is a
// Dialect.
// Like every driver it only translates: permissions are decided by the
// Host's Decider (and, for the tools a CLI runs without asking, its Veto:
// see hooks.go), and the exit status is tai's, computed from what the CLI
// reported (is_error, denials), never from the CLI's own exit code. Files
// the CLI's own tools wrote are reported from their completed tool calls.
package streamjson

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coder/quartz"
	"github.com/google/uuid"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/internal/agentproc"
	"github.com/tai-dev/tai/internal/lines"
	"github.com/tai-dev/tai/internal/spinpipe"
)

// Name is this driver's name in presets and the capability manifest.
const Name = driver.StreamJSON

// TurnError is a turn the agent reported as failed (is_error, an error_*
// result, turn.failed): an API error, a crash mid-turn. The run exits 1.
type TurnError struct {
	Dialect        string
	Subtype        string
	TerminalReason string
	APIErrorStatus int
	Message        string
	// RateLimit is the rate_limit_info that rejected the turn, if any.
	RateLimit json.RawMessage
}

// RateLimitInfo is the rate_limit_info that rejected the turn (nil: none),
// for quota.FromError.
func (e *TurnError) RateLimitInfo() json.RawMessage { return e.RateLimit }

func (e *TurnError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s reported an error", e.Dialect)
	var why []string
	if e.Subtype != "" {
		why = append(why, "subtype "+e.Subtype)
	}
	if e.TerminalReason != "" {
		why = append(why, "terminal_reason "+e.TerminalReason)
	}
	if e.APIErrorStatus != 0 {
		why = append(why, fmt.Sprintf("API status %d", e.APIErrorStatus))
	}
	if len(why) > 0 {
		b.WriteString(" (" + strings.Join(why, ", ") + ")")
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

// errClosed: the session was closed by tai.
var errClosed = errors.New("stream-json: session closed")

// Options tune a session beyond driver.Launch.
type Options struct {
	// Dialect overrides the dialect picked from the agent's name.
	Dialect string
	// StopGrace is how long the CLI gets to exit after stdin closes, and
	// again after SIGTERM. Default 2s.
	StopGrace time.Duration
	// NewID makes session ids (tests); default a random UUID.
	NewID func() string
}

// Session is a live stream-json session.
type Session struct {
	l     driver.Launch
	o     Options
	d     Dialect
	log   *slog.Logger
	clock quartz.Clock

	// proc is the running process: for duplex dialects the one process of
	// the session, for the others the current turn's.
	procMu sync.Mutex
	proc   *process
	argv   []string // what the duplex process was started with (flags added)

	wmu sync.Mutex // stdin writes

	mu          sync.Mutex
	dec         *decoder
	id          string
	started     bool
	startedCh   chan struct{} // closed when session.started was emitted
	mode        string
	model       string
	version     string
	nextReq     int
	pending     map[string]chan ControlResponse // tai's control requests
	perms       map[string]*pendingPerm         // the agent's can_use_tool, by request id
	turnDone    chan *Result
	interrupted bool
	turnCtx     context.Context
	turnCancel  context.CancelCauseFunc

	readerDone chan struct{}
	exited     chan struct{} // duplex: the process; one-shot: closed by Close
	turnMu     sync.Mutex
	closeOnce  sync.Once
	closing    bool
}

type pendingPerm struct {
	cancel    context.CancelFunc
	stop      func() bool
	withdrawn bool
}

// Launch starts a session. Duplex dialects start the CLI now, send
// initialize and report session.started; one-shot dialects start a process
// per Prompt.
func Launch(ctx context.Context, l driver.Launch) (*Session, error) {
	return Start(ctx, l, Options{})
}

// Start is Launch with driver-specific options.
func Start(ctx context.Context, l driver.Launch, o Options) (*Session, error) {
	if len(l.Argv) == 0 {
		return nil, errors.New("stream-json: no agent command")
	}
	var d Dialect
	var err error
	if o.Dialect != "" {
		var ok bool
		if d, ok = LookupDialect(o.Dialect); !ok {
			return nil, fmt.Errorf("%w: no stream-json dialect %q", driver.ErrUnsupported, o.Dialect)
		}
	} else if d, err = DialectFor(l.Agent, l.Argv); err != nil {
		return nil, err
	}
	if l.Logger == nil {
		l.Logger = slog.New(slog.DiscardHandler)
	}
	if l.Clock == nil {
		l.Clock = quartz.NewReal()
	}
	if l.Agent == "" {
		l.Agent = l.Argv[0]
	}
	if l.MaxLineBytes <= 0 {
		l.MaxLineBytes = 256 << 20
	}
	if o.StopGrace <= 0 {
		o.StopGrace = 2 * time.Second
	}
	if o.NewID == nil {
		o.NewID = func() string { return uuid.NewString() }
	}
	s := &Session{l: l, o: o, d: d, log: l.Logger.With("agent", l.Agent, "dialect", d.Name), clock: l.Clock,
		dec: newDecoder(d.Name), pending: map[string]chan ControlResponse{}, perms: map[string]*pendingPerm{},
		exited: make(chan struct{}), readerDone: make(chan struct{}), startedCh: make(chan struct{}), mode: d.DefaultMode}
	s.turnCtx, s.turnCancel = context.WithCancelCause(context.Background())
	if !d.Duplex {
		close(s.readerDone)
		s.id = l.ResumeID
		if s.id != "" {
			s.startedLocked(true)
		}
		return s, nil
	}
	if err := s.startDuplex(ctx); err != nil {
		_ = s.Close(context.Background())
		return nil, err
	}
	return s, nil
}

func (s *Session) startDuplex(ctx context.Context) error {
	resumed := s.l.ResumeID != ""
	s.id = s.l.ResumeID
	if !resumed && !s.d.ChildID {
		s.id = s.o.NewID()
	}
	argv := s.d.launchArgs(s.l.Argv, s.id, s.l.ResumeID)
	p, err := startProcess(s.l.Sandbox, argv, s.l.Env, s.l.Cwd, true, nil, s.l.StderrTo)
	if err != nil {
		return err
	}
	s.procMu.Lock()
	s.proc, s.argv = p, argv
	s.procMu.Unlock()
	s.log.Debug("agent started", "pid", p.pid(), "argv", argv)
	go s.read(p, true)
	go func() {
		<-p.exited
		<-s.readerDone
		s.mu.Lock()
		quiet := s.closing
		s.mu.Unlock()
		s.emit(driver.Event{Type: driver.EventProcessExited, Process: p.exitEvent(quiet)})
		close(s.exited)
	}()
	resp, err := s.request(ctx, "initialize", map[string]any{"hooks": s.hooks()})
	if err != nil {
		return s.startupError(fmt.Errorf("initialize: %w", err))
	}
	var init struct {
		Mode     string `json:"current_permission_mode"`
		Version  string `json:"claude_code_version"`
		QVersion string `json:"qwen_code_version"`
	}
	_ = json.Unmarshal(resp, &init)
	s.mu.Lock()
	if init.Mode != "" {
		s.mode = init.Mode
	}
	s.version = orDefault(init.Version, init.QVersion)
	if !s.d.ChildID {
		s.startedLocked(resumed)
	}
	s.mu.Unlock()
	if s.d.ChildID {
		// The session is the child's: wait for it to say which.
		select {
		case <-s.startedCh:
		case <-s.readerDone:
			return s.startupError(s.deathError("start"))
		case <-ctx.Done():
			return fmt.Errorf("waiting for the session: %w", context.Cause(ctx))
		}
	}
	return nil
}

// startupError turns a CLI that died during the handshake into an error
// carrying its stderr; a resume of an unknown session into ErrNoSession.
func (s *Session) startupError(err error) error {
	var exit *driver.AgentExitError
	if !errors.As(err, &exit) {
		return err
	}
	low := strings.ToLower(exit.Stderr)
	if s.l.ResumeID != "" && (strings.Contains(low, "no conversation found") || strings.Contains(low, "session not found") || strings.Contains(low, "no session")) {
		return fmt.Errorf("--resume %s: %w: %w", s.l.ResumeID, driver.ErrNoSession, exit)
	}
	return fmt.Errorf("%s did not start: %w", s.l.Agent, exit)
}

// startedLocked emits session.started once; s.mu is held.
func (s *Session) startedLocked(resumed bool) {
	if s.started {
		return
	}
	s.started = true
	close(s.startedCh)
	st := &driver.SessionStarted{Agent: s.l.Agent, Driver: Name, Cwd: s.l.Cwd, AgentName: s.d.Name, AgentVersion: s.version,
		Protocol: "stream-json/" + s.d.Name, Resumed: resumed, CurrentMode: s.mode,
		Capabilities: driver.Capabilities{ResumeSession: true, Modes: len(s.d.Modes) > 0}}
	if len(s.d.Modes) == 0 {
		st.CurrentMode = ""
	}
	for _, m := range s.d.Modes {
		st.Modes = append(st.Modes, driver.ModeInfo{ID: m, Name: m})
	}
	s.l.Host.Sink.Emit(driver.Event{Type: driver.EventSessionStarted, Session: s.id, Started: st})
}

// read is the reader loop of a process: it decodes every line, emits the
// events and routes the signals. Duplex sessions read for the process's
// life; one-shot turns until EOF.
func (s *Session) read(p *process, duplex bool) {
	if duplex {
		defer close(s.readerDone)
	}
	lr := lines.New(spinpipe.New(p.outF), 64<<10, s.l.MaxLineBytes)
	for {
		line, over, _, err := lr.Next()
		// The reader reuses its buffer; what is decoded must not.
		line = bytes.Clone(line)
		if over > 0 {
			s.emit(driver.Event{Type: driver.EventError, Error: &driver.ErrorInfo{Code: "oversize_line",
				Message: fmt.Sprintf("skipped a %d-byte line from the agent (over the %d-byte limit)", over, s.l.MaxLineBytes)}})
		}
		if len(line) > 0 {
			if s.l.Trace != nil {
				s.l.Trace("in", trimNL(line))
			}
			s.handle(line)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				s.log.Debug("reading the agent's stdout", "err", err)
			}
			p.outF.Close()
			return
		}
	}
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// handle applies one line. Events are emitted from the reader goroutine
// only (and from permission handlers, which run beside it), in order.
func (s *Session) handle(line []byte) {
	s.mu.Lock()
	f := s.dec.decode(line)
	s.initLocked(f.Init)
	var changed string
	if f.Mode != "" && f.Mode != s.mode && s.started {
		s.mode, changed = f.Mode, f.Mode
	}
	id := s.id
	done := s.resultLocked(f.Result)
	var ctl chan ControlResponse
	if f.Response != nil {
		ctl = s.pending[f.Response.ID]
		delete(s.pending, f.Response.ID)
	}
	if f.CancelID != "" {
		if pp, ok := s.perms[f.CancelID]; ok {
			pp.withdrawn = true
			pp.cancel()
		}
	}
	s.mu.Unlock()

	for _, ev := range f.Events {
		ev.Session = id
		s.l.Host.Sink.Emit(ev)
	}
	s.recordWrites(f.Wrote)
	if changed != "" {
		s.emit(driver.Event{Type: driver.EventModeChanged, Mode: &driver.Mode{ID: changed}})
	}
	if ctl != nil {
		ctl <- *f.Response
	}
	s.serveRequest(f.Control)
	if f.Result != nil {
		r := f.Result
		s.emit(driver.Event{Type: driver.EventTurnEnded, Turn: &driver.TurnEnded{StopReason: r.StopReason, Usage: r.Usage}})
		if done != nil {
			done <- r
		}
	}
}

// initLocked takes the session's id, model, version and mode from the
// CLI's init frame, and starts the session at the first one.
func (s *Session) initLocked(in *Init) {
	if in == nil {
		return
	}
	if in.SessionID != "" && (s.id == "" || !s.d.Duplex || s.d.ChildID) {
		s.id = in.SessionID
	}
	if in.Model != "" {
		s.model = in.Model
	}
	if in.Version != "" && s.version == "" {
		s.version = in.Version
	}
	if !s.started {
		if in.Mode != "" {
			s.mode = in.Mode
		}
		s.startedLocked(s.d.ChildID && s.l.ResumeID != "")
	}
}

// resultLocked normalizes a turn's result and returns the channel of the
// turn waiting for it (nil without a result).
func (s *Session) resultLocked(r *Result) chan *Result {
	if r == nil {
		return nil
	}
	if s.interrupted && r.IsError && r.StopReason == StopError {
		// What an interrupt looks like on the wire.
		r.StopReason, r.IsError = driver.StopCancelled, false
	}
	if r.StopReason == driver.StopCancelled || r.StopReason == driver.StopMaxTurnRequests {
		// A stop reason tai already understands, not a failure.
		r.IsError = false
	}
	return s.turnDone
}

// serveRequest answers the CLI's control request beside the reader.
func (s *Session) serveRequest(c *ControlRequest) {
	if c == nil {
		return
	}
	if c.Subtype == "can_use_tool" {
		pp, ctx := s.registerPerm(*c)
		go s.canUseTool(*c, pp, ctx)
	} else {
		go s.serveControl(*c)
	}
}

func (s *Session) emit(ev driver.Event) {
	if ev.Session == "" {
		ev.Session = s.ID()
	}
	s.l.Host.Sink.Emit(ev)
}

// send writes one NDJSON line to the CLI's stdin.
func (s *Session) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("stream-json: encoding: %w", err)
	}
	s.procMu.Lock()
	p := s.proc
	s.procMu.Unlock()
	if p == nil || p.stdin == nil {
		return fmt.Errorf("stream-json: %w", errClosed)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.l.Trace != nil {
		s.l.Trace("out", b)
	}
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("stream-json: writing to the agent: %w", err)
	}
	return nil
}

// request sends a control request and waits for its response, the CLI's
// death or ctx.
func (s *Session) request(ctx context.Context, subtype string, fields map[string]any) (json.RawMessage, error) {
	if !s.d.Duplex {
		return nil, fmt.Errorf("%s: %w: %s has no control channel", subtype, driver.ErrUnsupported, s.d.Name)
	}
	req := map[string]any{"subtype": subtype}
	for k, v := range fields {
		req[k] = v
	}
	ch := make(chan ControlResponse, 1)
	s.mu.Lock()
	s.nextReq++
	id := fmt.Sprintf("tai_%d", s.nextReq)
	s.pending[id] = ch
	s.mu.Unlock()
	drop := func() {
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
	}
	if err := s.send(map[string]any{"type": "control_request", "request_id": id, "request": req}); err != nil {
		drop()
		return nil, err
	}
	select {
	case r := <-ch:
		if !r.OK {
			return nil, &driver.RemoteError{Method: subtype, Message: r.Error}
		}
		return r.Response, nil
	case <-s.readerDone:
		drop()
		return nil, s.deathError(subtype)
	case <-ctx.Done():
		drop()
		return nil, fmt.Errorf("%s: %w", subtype, ctx.Err())
	}
}

// deathError is the CLI's exit, once it is known.
func (s *Session) deathError(what string) error {
	s.procMu.Lock()
	p := s.proc
	s.procMu.Unlock()
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	if closing {
		return fmt.Errorf("%s: %w", what, errClosed)
	}
	<-p.exited
	return p.exitErr
}

// serveControl answers a request from the CLI.
func (s *Session) serveControl(c ControlRequest) {
	if c.Subtype == "hook_callback" {
		out, err := s.hookCallback(c)
		if err == nil {
			_ = s.send(map[string]any{"type": "control_response", "response": map[string]any{
				"subtype": "success", "request_id": c.ID, "response": out}})
			return
		}
		s.log.Debug("hook callback refused", "err", err)
		_ = s.send(map[string]any{"type": "control_response", "response": map[string]any{
			"subtype": "error", "request_id": c.ID, "error": err.Error()}})
		return
	}
	// mcp_message, elicitation...: tai registered none.
	s.log.Debug("refused control request", "subtype", c.Subtype)
	_ = s.send(map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "error", "request_id": c.ID, "error": "tai does not support " + c.Subtype}})
}

// permission options tai offers for a can_use_tool: the CLI has none of
// its own; "always" is remembered by tai's policy, never written into the
// agent's settings.
var permOptions = []driver.PermissionOption{
	{ID: "allow", Name: "Allow", Kind: driver.OptionAllowOnce},
	{ID: "allow_always", Name: "Allow always", Kind: driver.OptionAllowAlways},
	{ID: "deny", Name: "Deny", Kind: driver.OptionRejectOnce},
	{ID: "deny_always", Name: "Deny always", Kind: driver.OptionRejectAlways},
}

// registerPerm records a can_use_tool as pending before the next line is
// read, so that a control_cancel_request right behind it finds it, and
// marks its tool use as decided by tai (the result's permission_denials
// list it again).
func (s *Session) registerPerm(c ControlRequest) (*pendingPerm, context.Context) {
	var r struct {
		ToolUseID string `json:"tool_use_id"`
	}
	_ = json.Unmarshal(c.Request, &r)
	ctx, cancelCause := context.WithCancelCause(context.Background())
	pp := &pendingPerm{cancel: func() { cancelCause(nil) }}
	s.mu.Lock()
	s.perms[c.ID] = pp
	if r.ToolUseID != "" {
		s.dec.decided[r.ToolUseID] = true
	}
	turn := s.turnCtx
	// Withdrawn with the turn, saying why it was cancelled.
	stop := context.AfterFunc(turn, func() { cancelCause(context.Cause(turn)) })
	s.mu.Unlock()
	pp.stop = stop
	return pp, ctx
}

func (s *Session) canUseTool(c ControlRequest, pp *pendingPerm, ctx context.Context) {
	defer pp.cancel()
	defer pp.stop()
	defer func() {
		s.mu.Lock()
		delete(s.perms, c.ID)
		s.mu.Unlock()
	}()
	var r struct {
		ToolName    string          `json:"tool_name"`
		Input       json.RawMessage `json:"input"`
		ToolUseID   string          `json:"tool_use_id"`
		Title       string          `json:"title"`
		Description string          `json:"description"`
	}
	_ = json.Unmarshal(c.Request, &r)
	if len(r.Input) == 0 || string(r.Input) == "null" {
		r.Input = json.RawMessage(`{}`)
	}
	s.mu.Lock()
	tc := driver.ToolCall{ID: orDefault(r.ToolUseID, c.ID)}
	if known, ok := s.dec.tools[r.ToolUseID]; ok {
		tc = *known
	}
	toolCall(&tc, r.ToolName, r.Input)
	if r.Title != "" {
		tc.Title = r.Title
	}
	tc.Status = "pending"
	id := s.id
	s.mu.Unlock()

	req := driver.PermissionRequest{ID: c.ID, Session: id, ToolCall: tc, Options: permOptions}
	isWithdrawn := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return pp.withdrawn
	}
	d, err := driver.AskPermission(ctx, s.l.Host.Decider, s.emit, req, func(error) string {
		if isWithdrawn() {
			return "withdrawn by the agent"
		}
		return "the turn was cancelled"
	})
	if err != nil {
		s.log.Warn("permission decision failed; answering deny", "err", err)
	}
	withdrawn := isWithdrawn()
	if withdrawn {
		return // the CLI withdrew it: never answered
	}
	var resp map[string]any
	if d.Verdict == driver.VerdictAllow && d.Outcome == driver.OutcomeSelected {
		resp = map[string]any{"behavior": "allow", "updatedInput": r.Input}
	} else {
		resp = map[string]any{"behavior": "deny", "message": denyMessage(d), "interrupt": d.Outcome == driver.OutcomeCancelled}
	}
	_ = s.send(map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "success", "request_id": c.ID, "response": resp}})
}

// Prompt runs one turn and returns when the agent reported its result.
// It may be called again for the next turn: duplex CLIs keep their
// process, one-shot CLIs are started again with the session id.
func (s *Session) Prompt(ctx context.Context, prompt []driver.Content) (driver.TurnResult, error) {
	s.turnMu.Lock()
	defer s.turnMu.Unlock()
	text, blocks, err := promptContent(prompt)
	if err != nil {
		return driver.TurnResult{}, err
	}
	done := make(chan *Result, 1)
	s.mu.Lock()
	s.turnDone = done
	s.interrupted = false
	s.turnCtx, s.turnCancel = context.WithCancelCause(context.Background())
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.turnDone = nil
		s.turnCancel(nil)
		s.mu.Unlock()
	}()
	if !s.d.Duplex {
		return s.promptOnce(ctx, text, done)
	}
	msg := map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": blocks},
		"parent_tool_use_id": nil, "session_id": s.ID()}
	if err := s.send(msg); err != nil {
		return driver.TurnResult{}, s.turnDeath()
	}
	select {
	case r := <-done:
		return s.turnResult(r)
	case <-s.readerDone:
		// The result may have been the last line before the CLI died.
		select {
		case r := <-done:
			return s.turnResult(r)
		default:
		}
		return driver.TurnResult{}, s.turnDeath()
	case <-ctx.Done():
		return driver.TurnResult{}, fmt.Errorf("prompt: %w", ctx.Err())
	}
}

// turnDeath is the error of a turn the CLI's exit ended (deathError is
// never nil: the exit is always recorded before exited closes).
func (s *Session) turnDeath() error {
	return fmt.Errorf("the agent exited during the turn: %w", s.deathError("prompt"))
}

func (s *Session) turnResult(r *Result) (driver.TurnResult, error) {
	res := driver.TurnResult{StopReason: r.StopReason, Usage: r.Usage}
	if r.IsError {
		return res, &TurnError{Dialect: s.d.Name, Subtype: r.Subtype, TerminalReason: r.TerminalReason,
			APIErrorStatus: r.APIErrorStatus, Message: r.Message, RateLimit: r.RateLimit}
	}
	return res, nil
}

// promptOnce runs a one-shot CLI for one turn.
func (s *Session) promptOnce(ctx context.Context, text string, done chan *Result) (driver.TurnResult, error) {
	argv, stdin := s.d.turnArgs(s.l.Argv, text, s.ID())
	p, err := startProcess(s.l.Sandbox, argv, s.l.Env, s.l.Cwd, false, stdin, s.l.StderrTo)
	if err != nil {
		return driver.TurnResult{}, err
	}
	s.procMu.Lock()
	s.proc = p
	s.procMu.Unlock()
	s.log.Debug("agent started", "pid", p.pid(), "argv", argv)
	// The last result wins (opencode reports one per step); the reader
	// hands them over through a buffer so it never blocks.
	results := make(chan *Result, 64)
	s.mu.Lock()
	s.turnDone = results
	s.mu.Unlock()
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		s.read(p, false)
	}()
	select {
	case <-readDone:
	case <-ctx.Done():
		s.Cancel(context.Background(), nil) //nolint:errcheck // best effort
		<-readDone
	}
	<-p.exited
	s.emit(driver.Event{Type: driver.EventProcessExited, Process: p.exitEvent(true)})
	var last *Result
	for {
		select {
		case r := <-results:
			last = r
			continue
		default:
		}
		break
	}
	s.mu.Lock()
	interrupted := s.interrupted
	if !s.started {
		s.startedLocked(false)
	}
	s.mu.Unlock()
	switch {
	case last != nil:
		return s.turnResult(last)
	case interrupted:
		s.emit(driver.Event{Type: driver.EventTurnEnded, Turn: &driver.TurnEnded{StopReason: driver.StopCancelled}})
		return driver.TurnResult{StopReason: driver.StopCancelled}, nil
	case p.exitErr.ExitCode == 0 && p.exitErr.Signal == "":
		s.emit(driver.Event{Type: driver.EventTurnEnded, Turn: &driver.TurnEnded{StopReason: driver.StopEndTurn}})
		return driver.TurnResult{StopReason: driver.StopEndTurn}, nil
	case s.d.Name == DialectGemini && p.exitErr.ExitCode == 53:
		s.emit(driver.Event{Type: driver.EventTurnEnded, Turn: &driver.TurnEnded{StopReason: driver.StopMaxTurnRequests}})
		return driver.TurnResult{StopReason: driver.StopMaxTurnRequests}, nil
	}
	return driver.TurnResult{}, fmt.Errorf("%s ended the turn without a result: %w", s.d.Name, p.exitErr)
}

// promptContent renders a prompt as plain text (one-shot CLIs) and as
// Anthropic content blocks (duplex CLIs). Files are referenced by path;
// embedded ones are inlined.
func promptContent(prompt []driver.Content) (string, []map[string]any, error) {
	var texts []string
	var blocks []map[string]any
	for _, c := range prompt {
		var t string
		switch c.Type {
		case "text":
			t = c.Text
		case "resource":
			t = fmt.Sprintf("<file path=%q>\n%s\n</file>", strings.TrimPrefix(c.URI, "file://"), c.Text)
		case "resource_link":
			t = "@" + strings.TrimPrefix(c.URI, "file://")
		default:
			return "", nil, fmt.Errorf("%w: prompt content of type %q", driver.ErrUnsupported, c.Type)
		}
		texts = append(texts, t)
		blocks = append(blocks, map[string]any{"type": "text", "text": t})
	}
	return strings.Join(texts, "\n\n"), blocks, nil
}

// Cancel stops the running turn: pending permission decisions are
// abandoned (answered deny with interrupt), then an interrupt control
// request for duplex CLIs, SIGINT to the process group for the others.
// Prompt then returns with StopCancelled.
func (s *Session) Cancel(ctx context.Context, cause error) error {
	s.mu.Lock()
	s.interrupted = true
	s.turnCancel(cause)
	s.mu.Unlock()
	if !s.d.Duplex {
		s.procMu.Lock()
		p := s.proc
		s.procMu.Unlock()
		if p != nil {
			agentproc.SignalGroup(p.cmd, syscall.SIGINT)
		}
		return nil
	}
	_, err := s.request(ctx, "interrupt", nil)
	return err
}

// SetMode switches the permission mode live (set_permission_mode). The
// mode.changed event follows when the CLI confirms it (system/status).
func (s *Session) SetMode(ctx context.Context, modeID string) error {
	if len(s.d.Modes) == 0 || !s.d.Duplex {
		return fmt.Errorf("--mode: %w: %s has no live modes over stream-json", driver.ErrUnsupported, s.d.Name)
	}
	if !containsStr(s.d.Modes, modeID) {
		return fmt.Errorf("--mode: %w: %s has no mode %q (choose from: %s)", driver.ErrBadValue, s.d.Name, modeID, strings.Join(s.d.Modes, ", "))
	}
	if _, err := s.request(ctx, "set_permission_mode", map[string]any{"mode": modeID}); err != nil {
		var re *driver.RemoteError
		if errors.As(err, &re) {
			return fmt.Errorf("set_permission_mode %s: %w: %w", modeID, driver.ErrBadValue, err)
		}
		return fmt.Errorf("set_permission_mode %s: %w", modeID, err)
	}
	return nil
}

// SetModel selects the model live (set_model).
func (s *Session) SetModel(ctx context.Context, model string) error {
	if !s.d.Duplex {
		return fmt.Errorf("--model: %w: pass the model in the agent's command for %s", driver.ErrUnsupported, s.d.Name)
	}
	if _, err := s.request(ctx, "set_model", map[string]any{"model": model}); err != nil {
		var re *driver.RemoteError
		if errors.As(err, &re) {
			return fmt.Errorf("set_model %s: %w: %w", model, driver.ErrBadValue, err)
		}
		return fmt.Errorf("set_model %s: %w", model, err)
	}
	s.mu.Lock()
	s.model = model
	s.mu.Unlock()
	return nil
}

// SetConfigOption supports "mode" and "model"; launch-time settings such
// as max turns go in the agent's command line.
func (s *Session) SetConfigOption(ctx context.Context, id, value string) error {
	switch id {
	case "mode":
		return s.SetMode(ctx, value)
	case "model":
		return s.SetModel(ctx, value)
	}
	return fmt.Errorf("%w: the stream-json driver has no config option %q (it has: mode, model; pass launch flags such as --max-turns in --agent-cmd)", driver.ErrUnsupported, id)
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ID returns the session id: tai's own for CLIs that take one, else the
// one the CLI reported (empty until then).
func (s *Session) ID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

// Dialect returns the session's dialect.
func (s *Session) Dialect() Dialect { return s.d }

// Capabilities says what the session supports.
func (s *Session) Capabilities() driver.Capabilities {
	return driver.Capabilities{ResumeSession: true, Modes: len(s.d.Modes) > 0}
}

// CurrentMode is the mode the CLI last confirmed.
func (s *Session) CurrentMode() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.d.Modes) == 0 {
		return ""
	}
	return s.mode
}

// Pid is the running process's id (0 between one-shot turns).
// Argv is the command the session's process was started with, the flags
// the dialect adds (--resume, --session-id) included; nil for a dialect
// that starts a process per turn.
func (s *Session) Argv() []string {
	s.procMu.Lock()
	defer s.procMu.Unlock()
	return slices.Clone(s.argv)
}

func (s *Session) Pid() int {
	s.procMu.Lock()
	defer s.procMu.Unlock()
	if s.proc == nil {
		return 0
	}
	return s.proc.pid()
}

// Exited is closed when the duplex CLI ended (for one-shot CLIs, at Close).
func (s *Session) Exited() <-chan struct{} { return s.exited }

// Close ends the session: stdin closed, then SIGTERM and SIGKILL to the
// process group after grace periods, then whatever the CLI started outside
// its group. It is idempotent.
func (s *Session) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closing = true
		s.turnCancel(nil)
		s.mu.Unlock()
		s.procMu.Lock()
		p := s.proc
		s.procMu.Unlock()
		if p != nil {
			// Duplex CLIs finish on stdin EOF (the ACP adapters' quirk does
			// not apply to them).
			p.stop(s.clock, s.o.StopGrace, s.l.Quirks.IgnoresStdinEOF && !s.d.Duplex, ctx.Err() != nil)
		}
		if s.d.Duplex {
			if p != nil {
				<-s.exited
			}
		} else {
			close(s.exited)
		}
	})
	return nil
}

var _ driver.Session = (*Session)(nil)
