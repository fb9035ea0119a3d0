// Package acp is tai's driver for agents that speak the Agent Client
// Protocol (JSON-RPC over stdio). It translates ACP into tai's common model
// (package driver) in both directions and does nothing else: permission,
// files and terminals are answered by the Host it is given.
package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/internal/agentproc"
	"github.com/tai-dev/tai/internal/spinpipe"
	"github.com/tai-dev/tai/jsonrpc"
	schema "github.com/tai-dev/tai/protocol/acp"
	"github.com/tai-dev/tai/sandbox"
)

// Name is this driver's name in presets and the capability manifest.
const Name = driver.ACP

// Config says what to launch and how.
type Config struct {
	Argv  []string // the agent command; never run through a shell
	Env   []string // the agent's environment; nil means os.Environ()
	Cwd   string   // the session's workspace, absolute; also the process cwd
	Agent string   // a label for events and errors

	Host       driver.Host
	MCPServers []driver.MCPServer
	AuthMethod string // --auth: the method to authenticate with, if the agent needs it
	ResumeID   string // resume (or load) this session instead of creating one
	LoadReplay bool   // load (replaying the history) rather than resume, where the agent can
	ForkID     string // fork this session (session/fork) instead of creating one
	// NoSession stops the handshake after initialize (and authenticate):
	// the connection then serves session/list and session/delete.
	NoSession bool
	AddDirs   []string // more workspace roots, sent where the agent takes them

	// Quirks: NoClientFS withholds fs/* from the agent even though the
	// host has it; IgnoresStdinEOF signals it at once on close instead of
	// waiting for it to see stdin end.
	Quirks driver.Quirks

	ClientVersion string
	Logger        *slog.Logger
	// Trace receives every raw line in both directions (for --trace).
	Trace        func(dir jsonrpc.Direction, line []byte)
	MaxLineBytes int64
	// StopGrace is how long the agent gets to exit after stdin closes, and
	// again after SIGTERM, before the next escalation. Default 2s.
	StopGrace time.Duration
	// StderrTo, if set, gets a live copy of the agent's stderr.
	StderrTo io.Writer
	Clock    quartz.Clock
	// Sandbox starts the agent through tai's launcher; nil: directly.
	Sandbox *sandbox.Sandbox
}

// Session is a live ACP session with one agent process.
type Session struct {
	cfg    Config
	log    *slog.Logger
	clock  quartz.Clock
	cmd    *exec.Cmd
	launch *sandbox.Proc // nil without the launcher
	stdin  io.Closer
	conn   *jsonrpc.Conn
	stderr *agentproc.Tail

	exited  chan struct{}
	exitErr *driver.AgentExitError
	reads   chan struct{} // fs/read_text_file replies being held, at most maxReads

	init        schema.InitializeResponse
	caps        driver.Capabilities
	fsOffered   bool
	termOffered bool

	// applyMu orders update application: live updates from the dispatch
	// goroutine and the flush of updates buffered before session/new
	// answered.
	applyMu   sync.Mutex
	dec       schema.Decoder // onUpdate's, on the dispatch goroutine
	id        string
	awaiting  bool
	replaying bool
	buffered  []schema.SessionNotification
	dropped   int
	tools     map[string]*driver.ToolCall
	toolsMax  int // len(tools) that triggers a sweep of finished calls
	toolsCap  int // the most toolsMax grows to; 0 is maxRunningTools
	config    []driver.ConfigOption
	mode      string

	turnMu   sync.Mutex // one prompt at a time
	turn     atomic.Pointer[turnState]
	closing  atomic.Bool
	closeMu  sync.Mutex
	closed   bool
	finished bool // Finish ran: session/close sent, stdin closed
	closeErr error
}

// turnState is the running turn: its context is done once the turn is
// cancelled or over.
type turnState struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// withTurn is ctx, also done when the turn is, with the turn's cause (why
// it was cancelled: what a withdrawn ask says).
func withTurn(ctx, turn context.Context) (context.Context, func()) {
	c, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(turn, func() { cancel(context.Cause(turn)) })
	return c, func() {
		stop()
		cancel(nil)
	}
}

// errClosedByTai is the cause given to the connection when tai ends the
// session on purpose.
var errClosedByTai = errors.New("session closed by tai")

// Start launches the agent, runs the handshake (initialize, authenticate if
// asked, session/new or resume/load) and returns the live session. On error
// the process is gone.
func Start(ctx context.Context, cfg Config) (*Session, error) {
	if len(cfg.Argv) == 0 {
		return nil, errors.New("acp: no agent command")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = quartz.NewReal()
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = 2 * time.Second
	}
	if cfg.Agent == "" {
		cfg.Agent = cfg.Argv[0]
	}
	s := &Session{
		cfg: cfg, log: cfg.Logger.With("agent", cfg.Agent), clock: cfg.Clock,
		stderr: &agentproc.Tail{Max: 64 << 10}, exited: make(chan struct{}), tools: map[string]*driver.ToolCall{},
		reads: make(chan struct{}, maxReads),
	}
	// onUpdate is done with each notification before the next: what it
	// keeps it converts (or, while it awaits session/new, decodes again).
	s.dec.Reuse = true
	if cfg.StderrTo != nil {
		w := cfg.StderrTo
		s.stderr.Fwd = func(p []byte) { _, _ = w.Write(p) }
	}
	s.turn.Store(&turnState{ctx: context.Background(), cancel: func(error) {}})
	if err := s.spawn(); err != nil {
		return nil, err
	}
	if err := s.handshake(ctx); err != nil {
		_ = s.Close(context.Background())
		return nil, err
	}
	return s, nil
}

func (s *Session) spawn() error {
	cmd := exec.Command(s.cfg.Argv[0], s.cfg.Argv[1:]...)
	cmd.Dir = s.cfg.Cwd
	cmd.Env = s.cfg.Env
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	// Its own process group, so that the whole tree can be stopped; and
	// Pdeathsig, so that an agent ignoring stdin EOF does not outlive a tai
	// that was killed -9.
	cmd.SysProcAttr = agentproc.Group()
	// Our own stdout pipe: exec's StdoutPipe is closed by Wait, which would
	// drop the last lines of an agent that crashes mid-turn.
	outR, outW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("acp: stdout pipe: %w", err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return fmt.Errorf("acp: stdin pipe: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, s.stderr
	cmd.WaitDelay = s.cfg.StopGrace
	launch, err := s.cfg.Sandbox.Start(cmd, nil)
	if err != nil {
		for _, f := range []*os.File{outR, outW, inR, inW} {
			f.Close()
		}
		return fmt.Errorf("starting agent %s: %w", s.cfg.Argv[0], err)
	}
	s.launch = launch
	outW.Close()
	inR.Close()
	s.cmd, s.stdin = cmd, inW
	s.log.Debug("agent started", "pid", cmd.Process.Pid, "argv", s.cfg.Argv)
	s.conn = jsonrpc.NewConn(spinpipe.New(outR), inW, handler{s}, jsonrpc.Options{
		MaxLineBytes: s.cfg.MaxLineBytes,
		Logger:       s.log,
		Trace:        s.cfg.Trace,
		OnProblem:    s.problem,
	})
	go s.wait()
	return nil
}

// wait is the process-exit watcher: when the agent dies, every pending call
// fails at once with its exit status and stderr, instead of hanging.
func (s *Session) wait() {
	err := s.cmd.Wait()
	s.launch.Release()
	var ee *exec.ExitError
	errors.As(err, &ee)
	code, sig := agentproc.ExitInfo(ee, err)
	s.exitErr = &driver.AgentExitError{ExitCode: code, Signal: sig, Stderr: agentproc.LastLines(s.stderr.String(), 20)}
	// Let the reader drain what the agent wrote before it died.
	t := s.clock.NewTimer(500*time.Millisecond, "acp", "drain")
	select {
	case <-s.conn.Done():
	case <-t.C:
	}
	t.Stop()
	if s.closing.Load() {
		s.conn.Close(errClosedByTai)
	} else {
		s.conn.Close(s.exitErr)
	}
	pe := &driver.ProcessExit{Pid: s.cmd.Process.Pid, Signal: sig}
	if sig == "" {
		pe.ExitCode = &code
	}
	if !s.closing.Load() {
		pe.Stderr = s.exitErr.Stderr
	}
	s.emit(driver.Event{Type: driver.EventProcessExited, Process: pe})
	close(s.exited)
}

func (s *Session) problem(p jsonrpc.Problem) {
	switch p.Kind {
	case jsonrpc.ProblemOversize:
		s.emit(driver.Event{Type: driver.EventError, Error: &driver.ErrorInfo{Code: "oversize_line",
			Message: fmt.Sprintf("skipped a %d-byte line from the agent (over the %d-byte limit)", p.Bytes, s.maxLine())}})
	case jsonrpc.ProblemGarbage:
		s.log.Warn("agent wrote a non-JSON line on stdout", "sample", p.Sample)
	default:
		s.log.Debug("skipped agent message", "kind", p.Kind.String(), "sample", p.Sample, "err", p.Err)
	}
}

func (s *Session) maxLine() int64 {
	if s.cfg.MaxLineBytes > 0 {
		return s.cfg.MaxLineBytes
	}
	return 256 << 20
}

// call is Conn.Call with the agent's death turned into its exit status.
func (s *Session) call(ctx context.Context, method string, params, result any) error {
	var raw json.RawMessage
	err := s.conn.Call(ctx, method, params, &raw)
	if err == nil {
		if result != nil {
			if derr := schema.DecodeResult(raw, result); derr != nil {
				return fmt.Errorf("%w: decoding the %s result: %w", driver.ErrProtocol, method, derr)
			}
		}
		return nil
	}
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return &driver.RemoteError{Method: method, Code: rpcErr.Code, Message: rpcErr.Message, Data: rpcErr.Data}
	}
	if errors.Is(err, jsonrpc.ErrClosed) {
		var exit *driver.AgentExitError
		if errors.As(err, &exit) {
			return exit
		}
		if s.closing.Load() {
			return fmt.Errorf("%s: %w", method, errClosedByTai)
		}
		// The pipe closed first; the exit status follows shortly.
		t := s.clock.NewTimer(s.cfg.StopGrace, "acp", "exit")
		defer t.Stop()
		select {
		case <-s.exited:
			return s.exitErr
		case <-t.C:
			return fmt.Errorf("%w: agent closed its stdout during %s", driver.ErrProtocol, method)
		}
	}
	return err
}

func (s *Session) handshake(ctx context.Context) error {
	s.fsOffered = s.cfg.Host.Files != nil && !s.cfg.Quirks.NoClientFS
	s.termOffered = s.cfg.Host.Terminals != nil
	req := schema.InitializeRequest{
		ProtocolVersion: schema.ProtocolVersion,
		ClientCapabilities: schema.ClientCapabilities{
			Fs:       schema.FileSystemCapability{ReadTextFile: s.fsOffered, WriteTextFile: s.fsOffered},
			Terminal: s.termOffered,
			Session:  handledSession,
		},
		ClientInfo: &schema.Implementation{Name: "tai", Title: "tai", Version: s.cfg.ClientVersion},
	}
	if s.cfg.Host.Elicitor != nil {
		req.ClientCapabilities.Elicitation = schema.ElicitationCapabilities{Form: &schema.EmptyObject{}, Url: &schema.EmptyObject{}}
	}
	if err := s.call(ctx, schema.MethodInitialize, req, &s.init); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if s.init.ProtocolVersion != schema.ProtocolVersion {
		return fmt.Errorf("%w: the agent speaks ACP version %d; tai speaks version %d", driver.ErrProtocol, s.init.ProtocolVersion, schema.ProtocolVersion)
	}
	ac := s.init.AgentCapabilities
	s.caps = driver.Capabilities{
		LoadSession:   ac.LoadSession,
		ResumeSession: ac.SessionCapabilities.Resume != nil,
		ListSessions:  ac.SessionCapabilities.List != nil,
		CloseSession:  ac.SessionCapabilities.Close != nil,
		DeleteSession: ac.SessionCapabilities.Delete != nil,
		ForkSession:   ac.SessionCapabilities.Fork != nil,
		Images:        ac.PromptCapabilities.Image,
		Audio:         ac.PromptCapabilities.Audio,
		EmbeddedFiles: ac.PromptCapabilities.EmbeddedContext,
		MCPHTTP:       ac.McpCapabilities.Http,
		AddDirs:       ac.SessionCapabilities.AdditionalDirectories != nil,
	}
	if s.cfg.AuthMethod != "" {
		if err := s.authenticate(ctx); err != nil {
			return err
		}
	}
	if s.cfg.NoSession {
		return nil
	}
	return s.openSession(ctx)
}

func (s *Session) authMethods() []driver.AuthMethod {
	var out []driver.AuthMethod
	for _, m := range s.init.AuthMethods {
		switch {
		case m.Agent != nil:
			out = append(out, driver.AuthMethod{ID: m.Agent.Id, Name: m.Agent.Name, Description: deref(m.Agent.Description), Type: "agent"})
		case m.Terminal != nil:
			out = append(out, driver.AuthMethod{ID: m.Terminal.Id, Name: m.Terminal.Name, Description: deref(m.Terminal.Description), Type: "terminal"})
		}
	}
	return out
}

func (s *Session) authenticate(ctx context.Context) error {
	methods := s.authMethods()
	for _, m := range methods {
		if m.ID != s.cfg.AuthMethod {
			continue
		}
		if m.Type == "terminal" {
			return &driver.AuthRequiredError{Methods: methods, Message: fmt.Sprintf("%q is a terminal login: run the agent interactively to log in, then retry without --auth", m.ID)}
		}
		if err := s.call(ctx, schema.MethodAuthenticate, schema.AuthenticateRequest{MethodId: m.ID}, nil); err != nil {
			return fmt.Errorf("authenticate %s: %w", m.ID, err)
		}
		return nil
	}
	return &driver.AuthRequiredError{Methods: methods, Message: fmt.Sprintf("the agent offers no auth method %q", s.cfg.AuthMethod)}
}

func (s *Session) mcpServers() schema.McpServerList {
	list := schema.McpServerList{}
	for _, m := range s.cfg.MCPServers {
		switch m.Type {
		case "", "stdio":
			st := &schema.McpServerStdio{Name: m.Name, Command: m.Command, Args: m.Args}
			for k, v := range m.Env {
				st.Env = append(st.Env, schema.EnvVariable{Name: k, Value: v})
			}
			list = append(list, schema.McpServer{Stdio: st})
		case "http":
			h := &schema.McpServerHttp{Name: m.Name, Url: m.URL}
			for k, v := range m.Headers {
				h.Headers = append(h.Headers, schema.HttpHeader{Name: k, Value: v})
			}
			list = append(list, schema.McpServer{Http: h})
		case "sse":
			h := &schema.McpServerSse{Name: m.Name, Url: m.URL}
			for k, v := range m.Headers {
				h.Headers = append(h.Headers, schema.HttpHeader{Name: k, Value: v})
			}
			list = append(list, schema.McpServer{Sse: h})
		}
	}
	return list
}

// addDirs are the extra roots, for an agent that takes them (the host
// serves them whether or not it does).
func (s *Session) addDirs() []string {
	if !s.caps.AddDirs {
		if len(s.cfg.AddDirs) > 0 {
			s.log.Warn("the agent does not take additionalDirectories; tai's file and terminal services still serve them", "dirs", s.cfg.AddDirs)
		}
		return nil
	}
	return s.cfg.AddDirs
}

func (s *Session) openSession(ctx context.Context) error {
	var modes *schema.SessionModeState
	var config schema.ConfigOptionList
	resumed := false
	s.applyMu.Lock()
	s.awaiting = true
	if s.cfg.ResumeID != "" {
		s.id = s.cfg.ResumeID
		s.awaiting = false
	}
	s.applyMu.Unlock()

	switch {
	case s.cfg.ResumeID != "" && s.caps.ResumeSession && !(s.cfg.LoadReplay && s.caps.LoadSession):
		var r schema.ResumeSessionResponse
		if err := s.call(ctx, schema.MethodSessionResume, schema.ResumeSessionRequest{SessionId: s.cfg.ResumeID, Cwd: s.cfg.Cwd, McpServers: s.mcpServers(), AdditionalDirectories: s.addDirs()}, &r); err != nil {
			return sessionError("session/resume", s.cfg.ResumeID, err, s.authMethods())
		}
		modes, config, resumed = r.Modes, r.ConfigOptions, true
	case s.cfg.ResumeID != "" && s.caps.LoadSession:
		// load replays the history; tai keeps its own transcript and does
		// not re-render an agent's replay as new output.
		s.applyMu.Lock()
		s.replaying = true
		s.applyMu.Unlock()
		var r schema.LoadSessionResponse
		err := s.call(ctx, schema.MethodSessionLoad, schema.LoadSessionRequest{SessionId: s.cfg.ResumeID, Cwd: s.cfg.Cwd, McpServers: s.mcpServers(), AdditionalDirectories: s.addDirs()}, &r)
		s.applyMu.Lock()
		s.replaying = false
		s.applyMu.Unlock()
		if err != nil {
			return sessionError("session/load", s.cfg.ResumeID, err, s.authMethods())
		}
		modes, config, resumed = r.Modes, r.ConfigOptions, true
	case s.cfg.ResumeID != "":
		return fmt.Errorf("--resume: %w: the agent can neither resume nor load sessions", driver.ErrUnsupported)
	case s.cfg.ForkID != "" && !s.caps.ForkSession:
		return fmt.Errorf("--fork: %w: the agent does not offer session/fork", driver.ErrUnsupported)
	case s.cfg.ForkID != "":
		var r schema.ForkSessionResponse
		req := schema.ForkSessionRequest{SessionId: s.cfg.ForkID, Cwd: s.cfg.Cwd, McpServers: s.mcpServers(), AdditionalDirectories: s.addDirs()}
		if err := s.call(ctx, schema.MethodSessionFork, req, &r); err != nil {
			return sessionError("session/fork", s.cfg.ForkID, err, s.authMethods())
		}
		if r.SessionId == "" {
			return fmt.Errorf("%w: session/fork answered without a sessionId", driver.ErrProtocol)
		}
		modes, config = r.Modes, r.ConfigOptions
		s.applyMu.Lock()
		s.id = r.SessionId
		s.applyMu.Unlock()
	default:
		var r schema.NewSessionResponse
		if err := s.call(ctx, schema.MethodSessionNew, schema.NewSessionRequest{Cwd: s.cfg.Cwd, McpServers: s.mcpServers(), AdditionalDirectories: s.addDirs()}, &r); err != nil {
			return sessionError("session/new", "", err, s.authMethods())
		}
		if r.SessionId == "" {
			return fmt.Errorf("%w: session/new answered without a sessionId", driver.ErrProtocol)
		}
		modes, config = r.Modes, r.ConfigOptions
		s.applyMu.Lock()
		s.id = r.SessionId
		s.applyMu.Unlock()
	}
	s.opened(modes, config, resumed)
	return nil
}

// opened records the session's modes and config once session/new (or
// resume, load) answered, emits session.started, and applies the updates
// held until then. The wire replay test calls it too.
func (s *Session) opened(modes *schema.SessionModeState, config schema.ConfigOptionList, resumed bool) {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	s.awaiting = false
	started := &driver.SessionStarted{Agent: s.cfg.Agent, Driver: Name, Cwd: s.cfg.Cwd, Protocol: fmt.Sprintf("acp/%d", s.init.ProtocolVersion), Resumed: resumed}
	if s.init.AgentInfo != nil {
		started.AgentName, started.AgentVersion = s.init.AgentInfo.Name, s.init.AgentInfo.Version
	}
	if modes != nil {
		s.caps.Modes = true
		s.mode = modes.CurrentModeId
		started.CurrentMode = modes.CurrentModeId
		for _, m := range modes.AvailableModes {
			started.Modes = append(started.Modes, driver.ModeInfo{ID: m.Id, Name: m.Name, Description: deref(m.Description)})
		}
	}
	if len(config) > 0 {
		s.caps.ConfigOptions = true
		started.Config = convertConfig(config)
		s.config = started.Config
		if modes == nil {
			s.mode = configMode(started.Config)
			started.CurrentMode = s.mode
		}
	}
	started.Capabilities = s.caps
	s.emitLocked(driver.Event{Type: driver.EventSessionStarted, Started: started})
	// Updates some agents send before their session/new response.
	for _, n := range s.buffered {
		if n.SessionId == s.id {
			s.apply(n.Update)
		} else {
			s.dropped++
		}
	}
	s.buffered = nil
}

// sessionError turns session/* failures into the typed errors callers
// branch on.
func sessionError(method, id string, err error, methods []driver.AuthMethod) error {
	var re *driver.RemoteError
	if errors.As(err, &re) {
		switch {
		case re.Code == jsonrpc.CodeAuthRequired:
			return &driver.AuthRequiredError{Methods: methods, Message: re.Message}
		case id != "" && (re.Code == jsonrpc.CodeResourceNotFound || strings.Contains(strings.ToLower(re.Message+string(re.Data)), "not found")):
			return fmt.Errorf("%s %s: %w: %w", method, id, driver.ErrNoSession, err)
		}
	}
	return fmt.Errorf("%s: %w", method, err)
}

// ID returns the session id.
func (s *Session) ID() string {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	return s.id
}

// Capabilities returns what the agent supports.
func (s *Session) Capabilities() driver.Capabilities {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	return s.caps
}

// Pid returns the agent's process id.
func (s *Session) Pid() int { return s.cmd.Process.Pid }

// AgentInfo returns the agent's name and version as it reported them.
func (s *Session) AgentInfo() (name, version string) {
	if s.init.AgentInfo == nil {
		return "", ""
	}
	return s.init.AgentInfo.Name, s.init.AgentInfo.Version
}

// Stats returns the connection's counters (garbage and oversize lines).
func (s *Session) Stats() jsonrpc.Stats { return s.conn.Stats() }

// Prompt runs one turn.
func (s *Session) Prompt(ctx context.Context, prompt []driver.Content) (driver.TurnResult, error) {
	s.turnMu.Lock()
	defer s.turnMu.Unlock()
	blocks, err := s.promptBlocks(prompt)
	if err != nil {
		return driver.TurnResult{}, err
	}
	turn, endTurn := context.WithCancelCause(context.Background())
	defer endTurn(nil)
	s.turn.Store(&turnState{ctx: turn, cancel: endTurn})
	var resp schema.PromptResponse
	if err := s.call(ctx, schema.MethodSessionPrompt, schema.PromptRequest{SessionId: s.ID(), Prompt: blocks}, &resp); err != nil {
		return driver.TurnResult{}, fmt.Errorf("session/prompt: %w", err)
	}
	res := driver.TurnResult{StopReason: string(resp.StopReason)}
	if res.StopReason == "" {
		res.StopReason = driver.StopEndTurn
	}
	if u, err := resp.DecodeUsage(); err == nil && u != nil {
		res.Usage = &driver.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens}
	}
	s.emit(driver.Event{Type: driver.EventTurnEnded, Turn: &driver.TurnEnded{StopReason: res.StopReason, Usage: res.Usage}})
	return res, nil
}

func (s *Session) promptBlocks(prompt []driver.Content) ([]schema.ContentBlock, error) {
	var out []schema.ContentBlock
	for _, c := range prompt {
		switch c.Type {
		case "text":
			out = append(out, schema.TextBlock(c.Text))
		case "resource":
			if s.caps.EmbeddedFiles {
				b := schema.TextResourceBlock(c.URI, c.Text)
				if c.MimeType != "" {
					b.Resource.Resource.Text.MimeType = &c.MimeType
				}
				out = append(out, b)
				continue
			}
			// The agent cannot take embedded files: link it instead.
			fallthrough
		case "resource_link":
			b := schema.ResourceLinkBlock(c.URI, c.Name)
			if c.MimeType != "" {
				b.ResourceLink.MimeType = &c.MimeType
			}
			if c.Size > 0 {
				b.ResourceLink.Size = &c.Size
			}
			out = append(out, b)
		default:
			return nil, fmt.Errorf("%w: prompt content of type %q", driver.ErrUnsupported, c.Type)
		}
	}
	return out, nil
}

// Cancel asks the agent to stop the running turn. Pending permission
// requests are answered "cancelled", as the protocol requires; their
// asks are withdrawn with cause.
func (s *Session) Cancel(ctx context.Context, cause error) error {
	// Cancelling the turn context makes every pending permission decision
	// come back cancelled.
	s.turn.Load().cancel(cause)
	return s.conn.Notify(ctx, schema.MethodSessionCancel, schema.CancelNotification{SessionId: s.ID()})
}

// SetMode switches the session's mode.
func (s *Session) SetMode(ctx context.Context, modeID string) error {
	caps := s.Capabilities()
	if !caps.Modes {
		// Some agents only expose modes as a config option.
		if caps.ConfigOptions {
			return s.setConfigByCategory(ctx, "mode", modeID)
		}
		return fmt.Errorf("--mode: %w: the agent has no modes", driver.ErrUnsupported)
	}
	if err := s.call(ctx, schema.MethodSessionSetMode, schema.SetSessionModeRequest{SessionId: s.ID(), ModeId: modeID}, nil); err != nil {
		return fmt.Errorf("session/set_mode %s: %w", modeID, err)
	}
	s.applyMu.Lock()
	changed := s.mode != modeID
	s.mode = modeID
	s.applyMu.Unlock()
	if changed {
		s.emit(driver.Event{Type: driver.EventModeChanged, Mode: &driver.Mode{ID: modeID}})
	}
	return nil
}

// CurrentMode returns the session's mode as last reported.
func (s *Session) CurrentMode() string {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	return s.mode
}

// SetModel selects a model through the config option of category model.
func (s *Session) SetModel(ctx context.Context, model string) error {
	return s.setConfigByCategory(ctx, "model", model)
}

func (s *Session) setConfigByCategory(ctx context.Context, category, value string) error {
	if !s.Capabilities().ConfigOptions {
		return fmt.Errorf("%w: the agent has no config options, so no %s can be set", driver.ErrUnsupported, category)
	}
	return s.SetConfigOption(ctx, category, value)
}

// SetConfigOption sets a config option by id (or by category, when no
// option has that id).
func (s *Session) SetConfigOption(ctx context.Context, id, value string) error {
	opt, ok := s.findConfig(id)
	if !ok {
		return fmt.Errorf("%w: the agent has no config option %q (it has: %s)", driver.ErrUnsupported, id, strings.Join(s.configIDs(), ", "))
	}
	var req schema.SetSessionConfigOptionRequest
	switch opt.Type {
	case "boolean":
		b := value == "true" || value == "on" || value == "1" || value == "yes"
		if !b && value != "false" && value != "off" && value != "0" && value != "no" {
			return fmt.Errorf("%w: config option %s is a boolean; %q is not", driver.ErrBadValue, opt.ID, value)
		}
		req = schema.SetConfigBoolean(s.ID(), opt.ID, b)
	default:
		valid := len(opt.Values) == 0
		for _, v := range opt.Values {
			if v.Value == value {
				valid = true
			}
		}
		if !valid {
			var vals []string
			for _, v := range opt.Values {
				vals = append(vals, v.Value)
			}
			return fmt.Errorf("%w: config option %s has no value %q (choose from: %s)", driver.ErrBadValue, opt.ID, value, strings.Join(vals, ", "))
		}
		req = schema.SetConfigSelect(s.ID(), opt.ID, value)
	}
	var resp schema.SetSessionConfigOptionResponse
	if err := s.call(ctx, schema.MethodSessionSetConfigOption, req, &resp); err != nil {
		return fmt.Errorf("session/set_config_option %s=%s: %w", opt.ID, value, err)
	}
	if len(resp.ConfigOptions) > 0 {
		s.applyMu.Lock()
		s.setConfigLocked(convertConfig(resp.ConfigOptions))
		s.applyMu.Unlock()
	}
	return nil
}

// ListSessions lists the agent's stored sessions.
func (s *Session) ListSessions(ctx context.Context, cwd string) ([]driver.SessionSummary, error) {
	if !s.Capabilities().ListSessions {
		return nil, fmt.Errorf("session/list: %w", driver.ErrUnsupported)
	}
	var out []driver.SessionSummary
	cursor := ""
	for {
		var resp schema.ListSessionsResponse
		req := schema.ListSessionsRequest{Cwd: cwd, Cursor: cursor}
		if err := s.call(ctx, schema.MethodSessionList, req, &resp); err != nil {
			return nil, fmt.Errorf("session/list: %w", err)
		}
		for _, si := range resp.Sessions {
			out = append(out, driver.SessionSummary{ID: si.SessionId, Cwd: si.Cwd, Title: deref(si.Title), UpdatedAt: deref(si.UpdatedAt)})
		}
		if resp.NextCursor == "" || resp.NextCursor == cursor {
			return out, nil
		}
		cursor = resp.NextCursor
	}
}

// DeleteSession deletes one of the agent's stored sessions.
func (s *Session) DeleteSession(ctx context.Context, id string) error {
	if !s.Capabilities().DeleteSession {
		return fmt.Errorf("session/delete: %w", driver.ErrUnsupported)
	}
	if err := s.call(ctx, schema.MethodSessionDelete, schema.DeleteSessionRequest{SessionId: id}, nil); err != nil {
		return sessionError("session/delete", id, err, s.authMethods())
	}
	return nil
}

// Close ends the session: session/close if the agent supports it, then
// stdin closed, then SIGTERM and SIGKILL to the process group, each after
// a grace period. It is idempotent.
func (s *Session) Close(ctx context.Context) error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return s.closeErr
	}
	s.closed = true
	alive := true
	select {
	case <-s.exited:
		alive = false
	default:
	}
	// The agent's process tree, taken while it is alive: what it started
	// outside its process group (setsid shells) is stopped at the end too.
	var tree []agentproc.Proc
	if alive {
		tree = agentproc.Descendants(s.cmd.Process.Pid)
	}
	now := ctx.Err() != nil // the caller's grace is over: kill at once
	if alive && !now && s.caps.CloseSession && s.id != "" && !s.finished {
		cctx, cancel := context.WithTimeout(ctx, s.cfg.StopGrace)
		if err := s.call(cctx, schema.MethodSessionClose, schema.CloseSessionRequest{SessionId: s.id}, nil); err != nil {
			s.log.Debug("session/close failed", "err", err)
		}
		cancel()
	}
	s.closing.Store(true)
	// stdin closed, then the group signalled; whatever the agent left in
	// its group (MCP servers, shells) goes too, and what it started in
	// groups of their own.
	agentproc.Stop(agentproc.Stopping{Clock: s.clock, Cmd: s.cmd, Exited: s.exited, Grace: s.cfg.StopGrace,
		SignalAtOnce: s.cfg.Quirks.IgnoresStdinEOF, Now: now, CloseInput: func() { _ = s.stdin.Close() }, Tree: tree, Kill: s.launch.Killer()})
	s.conn.Close(errClosedByTai)
	<-s.conn.Done()
	return nil
}

// Finish tells the agent no more prompts are coming: session/close if it
// supports it, then its stdin is closed. What it still sends is handled
// until it closes its stdout (Drained) or exits; Close ends it for good.
func (s *Session) Finish(ctx context.Context) {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed || s.finished {
		return
	}
	s.finished = true
	select {
	case <-s.exited:
		return
	default:
	}
	if s.caps.CloseSession && s.id != "" {
		cctx, cancel := context.WithTimeout(ctx, s.cfg.StopGrace)
		if err := s.call(cctx, schema.MethodSessionClose, schema.CloseSessionRequest{SessionId: s.id}, nil); err != nil {
			s.log.Debug("session/close failed", "err", err)
		}
		cancel()
	}
	s.closing.Store(true)
	if err := s.conn.CloseWrite(); err != nil {
		s.log.Debug("closing the agent's stdin", "err", err)
	}
}

// Drained is closed once the agent has closed its stdout and everything it
// sent has been handled.
func (s *Session) Drained() <-chan struct{} { return s.conn.Done() }

// Exited is closed when the agent process has ended.
func (s *Session) Exited() <-chan struct{} { return s.exited }

// ExitError is how the agent process ended, once Exited is closed.
func (s *Session) ExitError() *driver.AgentExitError {
	select {
	case <-s.exited:
		return s.exitErr
	default:
		return nil
	}
}

func (s *Session) emit(ev driver.Event) {
	if ev.Session == "" {
		ev.Session = s.ID()
	}
	s.cfg.Host.Sink.Emit(ev)
}

// emitLocked is emit for callers holding applyMu.
func (s *Session) emitLocked(ev driver.Event) {
	if ev.Session == "" {
		ev.Session = s.id
	}
	s.cfg.Host.Sink.Emit(ev)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

var _ driver.Session = (*Session)(nil)

// Launch starts a session from the driver-neutral launch settings.
func Launch(ctx context.Context, l driver.Launch) (*Session, error) {
	cfg := Config{
		Argv: l.Argv, Env: l.Env, Cwd: l.Cwd, Agent: l.Agent, Host: l.Host, MCPServers: l.MCPServers,
		AuthMethod: l.AuthMethod, ResumeID: l.ResumeID, LoadReplay: l.LoadReplay, ForkID: l.ForkID, AddDirs: l.AddDirs, Quirks: l.Quirks,
		ClientVersion: l.ClientVersion, Logger: l.Logger,
		MaxLineBytes: l.MaxLineBytes, StderrTo: l.StderrTo, Clock: l.Clock, Sandbox: l.Sandbox,
	}
	if l.Trace != nil {
		trace := l.Trace
		cfg.Trace = func(d jsonrpc.Direction, line []byte) { trace(d.String(), line) }
	}
	return Start(ctx, cfg)
}
