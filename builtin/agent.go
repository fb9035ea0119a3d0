package builtin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tai-dev/tai/internal/atomicfile"
	"github.com/tai-dev/tai/jsonrpc"
	"github.com/tai-dev/tai/protocol/acp"
)

// AgentName is the agentInfo.name the built-in agent reports.
const AgentName = "tai-builtin"

// Options configures Serve. The zero value plays DefaultScript.
type Options struct {
	// Script is played for every non-slash prompt; nil means DefaultScript().
	Script *Script
	// Logger receives diagnostics; nil means a text logger on Stderr.
	Logger *slog.Logger
	// Sleep implements delay steps; nil means a real timer that returns
	// ctx.Err() when ctx is done first. Tests inject a fake.
	Sleep func(ctx context.Context, d time.Duration) error
	// Stderr receives a crash step's stderr text; nil means os.Stderr.
	Stderr io.Writer
	// Version is agentInfo.version; empty means "dev".
	Version string
	// StateDir, if set, keeps sessions on disk so that a later process
	// can resume or load them; empty keeps them in memory only.
	StateDir string
	// PageSize is how many sessions a session/list page holds (0:
	// DefaultPageSize).
	PageSize int
}

// CrashError is returned by Serve when a crash step ran. Serve has already
// written the step's stderr text and stopped writing to stdout; the command
// wrapping Serve should exit with Code (os.Exit(crashErr.Code)) to simulate
// an agent process dying mid-turn.
type CrashError struct {
	Code int
}

func (e *CrashError) Error() string {
	return fmt.Sprintf("builtin agent: crash step (exit code %d)", e.Code)
}

// Serve runs the built-in agent over r (the client's requests, normally
// stdin) and w (normally stdout) until r reports EOF, the connection fails,
// ctx is done or a crash step runs (*CrashError).
//
// EOF is a clean end (nil). Serve closes r and w when they are io.Closers,
// which is what unblocks its reader goroutine; every goroutine it started has
// ended when it returns.
func Serve(ctx context.Context, r io.Reader, w io.Writer, opts Options) error {
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	a := &agent{
		ctx:      ctx,
		opts:     opts,
		log:      opts.Logger,
		script:   opts.Script,
		out:      newOutWriter(w),
		sessions: map[string]*session{},
		crashed:  make(chan *CrashError, 1),
		ready:    make(chan struct{}),
	}
	a.conn = jsonrpc.NewConn(r, a.out, a, jsonrpc.Options{Logger: opts.Logger, KeepOpenOnEOF: true})
	close(a.ready)
	a.log.Debug("builtin agent: serving", "script", a.script.Name, "steps", len(a.script.Steps))

	var err error
	select {
	case <-ctx.Done():
		err = ctx.Err()
	case <-a.conn.Done():
		if cerr := a.conn.Err(); cerr != nil && !errors.Is(cerr, jsonrpc.ErrPeerClosed) && !a.goneAway(cerr) {
			err = fmt.Errorf("builtin agent: %w", cerr)
		}
	case <-a.conn.ReadDone():
		if cerr := a.conn.Err(); cerr != nil && !errors.Is(cerr, jsonrpc.ErrPeerClosed) && !a.goneAway(cerr) {
			err = fmt.Errorf("builtin agent: %w", cerr)
			break
		}
		// The client closed stdin: every request it sent before is still
		// answered, and what was already started for it (late updates
		// after a response) still goes out before stdout closes, as a
		// well-behaved agent does.
		if err = a.finishHandlers(ctx); err != nil {
			break
		}
		a.out.quiesce()
		a.bg.Wait()
	case ce := <-a.crashed:
		err = ce
	}
	// A crash seals stdout, which can make the conn fail first: the crash,
	// signalled before the seal, is the real reason.
	select {
	case ce := <-a.crashed:
		err = ce
	default:
	}
	_ = a.conn.Close(err) // closes r; cancels handler contexts
	cancel()              // releases hang steps and background senders

	a.bgMu.Lock()
	a.stopping = true
	a.bgMu.Unlock()
	// Closing w first unblocks a write stuck on a client that stopped
	// reading; the seal (which waits for such a write) then drops whatever
	// a finishing handler still tries to send.
	if c, ok := w.(io.Closer); ok {
		_ = c.Close()
	}
	a.out.seal()
	a.handlers.Wait()
	a.bg.Wait()
	a.log.Debug("builtin agent: stopped", "err", err)
	return err
}

// goneAway reports whether err is the write that failed because the
// client, having closed its output, stopped reading too: answering what
// it sent before is tried, and its absence is no failure.
func (a *agent) goneAway(err error) bool {
	select {
	case <-a.conn.ReadDone():
	default:
		return false
	}
	return errors.Is(err, io.ErrClosedPipe) || errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed)
}

// wedged blocks a hung step until the connection ends: the client's EOF
// (which Serve otherwise answers by finishing every request, so a hung
// one must give up there) or Serve's end.
func (a *agent) wedged() error {
	select {
	case <-a.ctx.Done():
		return a.ctx.Err()
	case <-a.conn.ReadDone():
		return errors.New("the client closed its output")
	}
}

// finishHandlers waits for the requests already read to be answered, or
// for ctx to end or the script to crash first (whose error it returns).
func (a *agent) finishHandlers(ctx context.Context) error {
	done := make(chan struct{})
	// The Conn counts a request when it dispatches it, before ReadDone;
	// a.handlers counts it only once its goroutine runs.
	go func() { a.conn.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case ce := <-a.crashed:
		a.crashed <- ce // seen again below, as the real reason
		return ce
	}
}

func (o Options) withDefaults() Options {
	if o.Script == nil {
		o.Script = DefaultScript()
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(o.Stderr, nil))
	}
	if o.Sleep == nil {
		o.Sleep = realSleep
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	return o
}

func realSleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// agent is the state of one Serve call: one client connection.
type agent struct {
	ctx    context.Context // Serve's lifetime
	opts   Options
	log    *slog.Logger
	script *Script
	out    *outWriter
	conn   *jsonrpc.Conn
	ready  chan struct{} // closed once conn is set: handlers may run before NewConn returns

	crashed chan *CrashError
	// leaving: a limit step with exit ran; no prompt is answered any more.
	leaving  atomic.Bool
	handlers sync.WaitGroup // in-flight HandleRequest calls

	bgMu     sync.Mutex
	stopping bool
	bg       sync.WaitGroup // goroutines sending after a response

	mu            sync.Mutex
	clientCaps    acp.ClientCapabilities
	authenticated bool
	sessions      map[string]*session
}

// background runs f on its own goroutine unless Serve is stopping.
func (a *agent) background(f func()) {
	a.bgMu.Lock()
	defer a.bgMu.Unlock()
	if a.stopping {
		return
	}
	a.bg.Add(1)
	go func() {
		defer a.bg.Done()
		f()
	}()
}

// afterResponse runs f in the background once the response to the request
// served by ctx has been written; without a request id it runs right away.
func (a *agent) afterResponse(ctx context.Context, f func()) {
	id, ok := jsonrpc.RequestID(ctx)
	if !ok || id.IsZero() {
		a.background(f)
		return
	}
	a.out.afterResponse(id.String(), func() { a.background(f) })
}

func (a *agent) caps() acp.ClientCapabilities {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.clientCaps
}

// HandleNotification implements jsonrpc.Handler. Only session/cancel means
// anything; other notifications are ignored, as ACP requires.
func (a *agent) HandleNotification(_ context.Context, method string, params json.RawMessage) {
	<-a.ready
	if method != acp.MethodSessionCancel {
		a.log.Debug("builtin agent: ignoring notification", "method", method)
		return
	}
	var p acp.CancelNotification
	if err := json.Unmarshal(params, &p); err != nil {
		a.log.Warn("builtin agent: bad session/cancel", "err", err)
		return
	}
	if s := a.session(p.SessionId); s != nil {
		s.cancelTurn()
	}
}

// HandleRequest implements jsonrpc.Handler.
func (a *agent) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	a.handlers.Add(1)
	defer a.handlers.Done()
	<-a.ready
	switch method {
	case acp.MethodInitialize:
		return a.initialize(params)
	case acp.MethodAuthenticate:
		return a.authenticate(params)
	}
	if err := a.checkAuth(method); err != nil {
		return nil, err
	}
	switch method {
	case acp.MethodSessionNew:
		return a.newSession(ctx, params)
	case acp.MethodSessionLoad:
		return a.loadSession(ctx, params, true)
	case acp.MethodSessionResume:
		return a.loadSession(ctx, params, false)
	case acp.MethodSessionList:
		return a.listSessions(params)
	case acp.MethodSessionClose:
		return a.closeSession(params)
	case acp.MethodSessionDelete:
		return a.deleteSession(params)
	case acp.MethodSessionFork:
		return a.forkSession(ctx, params)
	case acp.MethodSessionPrompt:
		return a.prompt(ctx, params)
	case acp.MethodSessionSetMode:
		return a.setModeRequest(params)
	case acp.MethodSessionSetConfigOption:
		return a.setConfigOption(params)
	}
	return nil, jsonrpc.ErrMethodNotFound(method)
}

func invalidParams(format string, args ...any) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

func decodeParams(params json.RawMessage, v any) error {
	if len(params) == 0 || string(params) == "null" {
		return invalidParams("params are required")
	}
	if err := json.Unmarshal(params, v); err != nil {
		return invalidParams("invalid params: %v", err)
	}
	return nil
}

func (a *agent) initialize(params json.RawMessage) (any, error) {
	var req acp.InitializeRequest
	if err := decodeParams(params, &req); err != nil {
		return nil, err
	}
	if req.ProtocolVersion < 1 {
		return nil, invalidParams("unsupported protocolVersion %d: this agent speaks 1", req.ProtocolVersion)
	}
	a.mu.Lock()
	a.clientCaps = req.ClientCapabilities
	a.mu.Unlock()
	client := "unknown"
	if req.ClientInfo != nil {
		client = req.ClientInfo.Name + " " + req.ClientInfo.Version
	}
	a.log.Info("builtin agent: initialize", "client", client, "protocolVersion", req.ProtocolVersion,
		"fs.read", req.ClientCapabilities.Fs.ReadTextFile, "fs.write", req.ClientCapabilities.Fs.WriteTextFile,
		"terminal", req.ClientCapabilities.Terminal)

	resp := acp.InitializeResponse{
		ProtocolVersion: acp.ProtocolVersion, // a newer client gets 1, per the negotiation rule
		AgentCapabilities: acp.AgentCapabilities{
			LoadSession:        true,
			PromptCapabilities: acp.PromptCapabilities{EmbeddedContext: true},
			SessionCapabilities: acp.SessionCapabilities{
				List:   &acp.EmptyObject{},
				Resume: &acp.EmptyObject{},
				Close:  &acp.EmptyObject{},
				// Taken and listed; the client serves them.
				AdditionalDirectories: &acp.EmptyObject{},
				Delete:                &acp.EmptyObject{},
				Fork:                  &acp.EmptyObject{},
			},
		},
		AuthMethods: []acp.AuthMethod{},
		AgentInfo:   &acp.Implementation{Name: AgentName, Title: "tai built-in agent", Version: a.opts.Version},
	}
	for _, m := range a.script.AuthMethods {
		am := &acp.AgentAuthMethod{Id: m.ID, Name: m.Name}
		if m.Description != "" {
			am.Description = acp.Ptr(m.Description)
		}
		resp.AuthMethods = append(resp.AuthMethods, acp.AuthMethod{Agent: am})
	}
	return resp, nil
}

func (a *agent) authenticate(params json.RawMessage) (any, error) {
	var req acp.AuthenticateRequest
	if err := decodeParams(params, &req); err != nil {
		return nil, err
	}
	for _, m := range a.script.AuthMethods {
		if m.ID == req.MethodId {
			a.mu.Lock()
			a.authenticated = true
			a.mu.Unlock()
			return acp.AuthenticateResponse{}, nil
		}
	}
	return nil, invalidParams("unknown auth method %q", req.MethodId)
}

// checkAuth fails session methods until authenticate when the script
// advertises auth methods.
func (a *agent) checkAuth(method string) error {
	if len(a.script.AuthMethods) == 0 {
		return nil
	}
	a.mu.Lock()
	ok := a.authenticated
	a.mu.Unlock()
	if ok {
		return nil
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeAuthRequired, Message: "auth_required: authenticate before " + method}
}

func (a *agent) session(id string) *session {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessions[id]
}

func (a *agent) mustSession(id string) (*session, error) {
	if s := a.session(id); s != nil {
		return s, nil
	}
	if s, err := a.loadSaved(id); err == nil {
		a.mu.Lock()
		defer a.mu.Unlock()
		if cur := a.sessions[id]; cur != nil { // loaded concurrently
			return cur, nil
		}
		a.sessions[id] = s
		return s, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		a.log.Warn("builtin agent: saved session unreadable", "session", id, "err", err)
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeResourceNotFound, Message: fmt.Sprintf("session %q not found", id)}
}

func newSessionID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "builtin-" + hex.EncodeToString(b[:])
}

// sessionArgs are the fields session/new, load and resume share; decoded
// separately so that a missing mcpServers (distinct from []) is detectable.
type sessionArgs struct {
	SessionId  string          `json:"sessionId"`
	Cwd        string          `json:"cwd"`
	McpServers json.RawMessage `json:"mcpServers"`
}

func checkSessionArgs(params json.RawMessage, needMCP bool) (sessionArgs, error) {
	var sa sessionArgs
	if err := decodeParams(params, &sa); err != nil {
		return sa, err
	}
	if sa.Cwd == "" || !isAbs(sa.Cwd) {
		return sa, invalidParams("cwd must be an absolute path, got %q", sa.Cwd)
	}
	if needMCP && (len(sa.McpServers) == 0 || string(sa.McpServers) == "null") {
		return sa, invalidParams("mcpServers is required (send [] for none)")
	}
	return sa, nil
}

func (a *agent) newSession(ctx context.Context, params json.RawMessage) (any, error) {
	sa, err := checkSessionArgs(params, true)
	if err != nil {
		return nil, err
	}
	var req acp.NewSessionRequest
	if err := decodeParams(params, &req); err != nil {
		return nil, err
	}
	for _, d := range req.AdditionalDirectories {
		if !isAbs(d) {
			return nil, invalidParams("additionalDirectories must be absolute paths, got %q", d)
		}
	}
	s := newSession(newSessionID(), sa.Cwd, a.script)
	s.addDirs = req.AdditionalDirectories
	s.limitHits = a.accountHits()
	a.mu.Lock()
	a.sessions[s.id] = s
	a.mu.Unlock()
	a.log.Info("builtin agent: new session", "session", s.id, "cwd", s.cwd)
	a.save(s)

	sendCommands := func() {
		if err := a.send(s, s.commandsUpdate()); err != nil {
			a.log.Debug("builtin agent: available commands", "err", err)
		}
	}
	if a.script.EarlyUpdates {
		// Some agents do this; clients must buffer updates for a session id
		// they have not been told yet.
		sendCommands()
	}
	a.afterResponse(ctx, sendCommands)
	return acp.NewSessionResponse{
		SessionId:     s.id,
		Modes:         s.modeState(),
		ConfigOptions: s.configOptions(),
	}, nil
}

func (a *agent) loadSession(ctx context.Context, params json.RawMessage, replay bool) (any, error) {
	sa, err := checkSessionArgs(params, replay) // mcpServers is optional for resume
	if err != nil {
		return nil, err
	}
	s, err := a.mustSession(sa.SessionId)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.cwd = sa.Cwd
	s.mu.Unlock()
	if replay {
		for _, h := range s.historySnapshot() {
			if err := a.replay(s, h); err != nil {
				return nil, fmt.Errorf("replay: %w", err)
			}
		}
		return acp.LoadSessionResponse{Modes: s.modeState(), ConfigOptions: s.configOptions()}, nil
	}
	return acp.ResumeSessionResponse{Modes: s.modeState(), ConfigOptions: s.configOptions()}, nil
}

func (a *agent) closeSession(params json.RawMessage) (any, error) {
	var req acp.CloseSessionRequest
	if err := decodeParams(params, &req); err != nil {
		return nil, err
	}
	if _, err := a.dropSession(req.SessionId); err != nil {
		return nil, err
	}
	return acp.CloseSessionResponse{}, nil
}

// dropSession ends the session's turn and forgets it (session/close and
// session/delete); a saved session is loaded first, so that an unknown id
// is an error.
func (a *agent) dropSession(id string) (*session, error) {
	s, err := a.mustSession(id)
	if err != nil {
		return nil, err
	}
	s.cancelTurn()
	a.mu.Lock()
	delete(a.sessions, s.id)
	a.mu.Unlock()
	return s, nil
}

func (a *agent) setModeRequest(params json.RawMessage) (any, error) {
	var req acp.SetSessionModeRequest
	if err := decodeParams(params, &req); err != nil {
		return nil, err
	}
	s, err := a.mustSession(req.SessionId)
	if err != nil {
		return nil, err
	}
	if _, ok := modeByID(req.ModeId); !ok {
		return nil, invalidParams("unknown mode %q", req.ModeId)
	}
	if err := a.switchMode(s, req.ModeId, true); err != nil {
		return nil, err
	}
	return acp.SetSessionModeResponse{}, nil
}

func (a *agent) setConfigOption(params json.RawMessage) (any, error) {
	var req acp.SetSessionConfigOptionRequest
	if err := decodeParams(params, &req); err != nil {
		return nil, err
	}
	s, err := a.mustSession(req.SessionId)
	if err != nil {
		return nil, err
	}
	var value string
	if err := json.Unmarshal(req.Value, &value); err != nil {
		return nil, invalidParams("config option %q takes a string value", req.ConfigId)
	}
	switch req.ConfigId {
	case configMode:
		if _, ok := modeByID(value); !ok {
			return nil, invalidParams("unknown mode %q", value)
		}
		// The response carries the options, so only the mode update is sent.
		if err := a.switchMode(s, value, false); err != nil {
			return nil, err
		}
	case configModel:
		if !s.setModel(value) {
			return nil, invalidParams("unknown model %q", value)
		}
	default:
		return nil, invalidParams("unknown config option %q", req.ConfigId)
	}
	return acp.SetSessionConfigOptionResponse{ConfigOptions: s.configOptions()}, nil
}

// switchMode sets the session mode and tells the client: current_mode_update
// and, if withOptions, config_option_update (the mode option changed too).
func (a *agent) switchMode(s *session, mode string, withOptions bool) error {
	s.mu.Lock()
	s.mode = mode
	s.mu.Unlock()
	if err := a.send(s, acp.SessionUpdate{CurrentModeUpdate: &acp.CurrentModeUpdate{CurrentModeId: mode}}); err != nil {
		return err
	}
	if withOptions {
		return a.send(s, acp.SessionUpdate{ConfigOptionUpdate: &acp.ConfigOptionUpdate{ConfigOptions: s.configOptions()}})
	}
	return nil
}

// send records u in the session history and sends it. It uses Serve's
// context, not a turn's: updates after a cancel must still go out.
func (a *agent) send(s *session, u acp.SessionUpdate) error {
	s.record(historyEntry{update: u})
	return a.notify(s, u)
}

// notify sends u without recording it.
func (a *agent) notify(s *session, u acp.SessionUpdate) error {
	return a.conn.Notify(a.ctx, acp.MethodSessionUpdate, acp.SessionNotification{SessionId: s.id, Update: u})
}

func (a *agent) replay(s *session, h historyEntry) error {
	if h.bigBytes > 0 {
		return a.streamBig(s, h.bigBytes, h.messageID)
	}
	return a.notify(s, h.update)
}

// exitAfterLimit ends the agent after a limit step with exit: Serve
// returns a *CrashError with code 0; forget deletes the saved session
// first, so that no later process can load it.
func (a *agent) exitAfterLimit(s *session, forget bool) {
	if forget && a.opts.StateDir != "" {
		// The limit is the account's: its count goes on in the next
		// process's new sessions.
		s.mu.Lock()
		hits := s.limitHits
		s.mu.Unlock()
		if err := atomicfile.Write(filepath.Join(a.opts.StateDir, accountHitsFile), []byte(strconv.Itoa(hits)), 0o600); err != nil {
			a.log.Warn("builtin agent: saving the limit's count", "err", err)
		}
		if err := os.Remove(filepath.Join(a.opts.StateDir, s.id+".json")); err != nil && !os.IsNotExist(err) {
			a.log.Warn("builtin agent: forgetting the session", "session", s.id, "err", err)
		}
	}
	a.crash(&CrashStep{})
}

// accountHitsFile, in StateDir, is the limit's count a forgotten session
// left (limit: {exit: true, forget: true}); new sessions start from it.
const accountHitsFile = "account-limit-hits"

// accountHits is the count a forgotten session left, if any.
func (a *agent) accountHits() int {
	if a.opts.StateDir == "" {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(a.opts.StateDir, accountHitsFile))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// crash seals stdout, writes the crash text and makes Serve return ce.
func (a *agent) crash(cs *CrashStep) *CrashError {
	ce := &CrashError{Code: cs.Code}
	select {
	case a.crashed <- ce: // before the seal, see Serve
	default:
	}
	a.out.seal()
	if cs.Stderr != "" {
		msg := cs.Stderr
		if msg[len(msg)-1] != '\n' {
			msg += "\n"
		}
		_, _ = io.WriteString(a.opts.Stderr, msg)
	}
	a.log.Debug("builtin agent: crash step", "code", cs.Code)
	return ce
}

var _ jsonrpc.Handler = (*agent)(nil)

// now is the clock for session bookkeeping.
var now = time.Now
