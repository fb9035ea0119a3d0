// Package acpserver makes tai an ACP agent (`tai acp`): an editor talks ACP
// to tai on stdio, and tai runs each of the editor's sessions through the
// runner, with whatever driver the run flags name. The common events come
// back to the editor as session/update notifications; asks that tai's
// policy leaves open go to the editor as session/request_permission, and
// its answers are recorded as a human's.
//
// The package knows nothing of flags: the app hands it a RunFunc that runs
// one session with the run flags' agent, policy and audit log.
package acpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/elicit"
	"github.com/tai-dev/tai/jsonrpc"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/protocol/acp"
	"github.com/tai-dev/tai/runner"
)

// ProtocolVersion is the ACP version tai speaks to editors.
const ProtocolVersion = 1

// Spec is what one session starts with.
type Spec struct {
	Cwd        string
	ResumeID   string // load or resume this session of the wrapped agent
	Load       bool   // session/load: its history is replayed first
	MCPServers []driver.MCPServer
}

// Hooks connect one session's run to the editor.
type Hooks struct {
	Sink       driver.Sink
	Turns      <-chan []driver.Content
	Interrupts <-chan struct{}
	// Prompter is the editor, asked what the policy leaves open.
	Prompter policy.Prompter
	// OnSession must be handed the live session (runner.Options.OnSession
	// with a runner.Live) before the first turn.
	OnSession func(Control)
	// Files, when set, is where the agent's file requests go once tai's
	// policy and confinement have passed them: the editor's buffers.
	Files driver.Files
	// Passthrough takes the agent's extension messages to the editor.
	Passthrough driver.Passthrough
	// Elicitor is the editor, asked the agent's elicitations in the modes
	// it advertised (elicitation/create); nil when it advertised none.
	Elicitor elicit.Answerer
}

// Control is the live session of a run (runner.Live).
type Control interface {
	Session() runner.Session
	SetMode(ctx context.Context, mode string) error
	SetConfigOption(ctx context.Context, id, value string) error
}

// RunFunc runs one session until Turns is closed or ctx is done.
type RunFunc func(ctx context.Context, spec Spec, h Hooks) error

// Options configure Serve.
type Options struct {
	Run RunFunc
	// Cwd is the workspace of the session started at initialize, whose
	// capabilities initialize reports; a session/new there takes it over.
	Cwd string
	// Agent names the wrapped agent in agentInfo.
	Agent   string
	Version string
	// List lists the sessions tai has kept for a workspace, for agents
	// that cannot list their own.
	List   func(ctx context.Context, cwd string) ([]driver.SessionSummary, error)
	Logger *slog.Logger
	// MaxLineBytes bounds one line from the editor.
	MaxLineBytes int64
	// Trace receives the editor's wire lines.
	Trace func(dir string, line []byte)
}

// ErrNoWarmSession: the session started at initialize to learn what the
// wrapped agent can do ended before it was ready.
var ErrNoWarmSession = errors.New("the wrapped agent did not start")

// Serve serves one editor on r and w until the editor closes its output or
// ctx is done. Every session's run has ended when it returns.
func Serve(ctx context.Context, r io.Reader, w io.Writer, o Options) error {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &Server{o: o, ctx: ctx, sessions: map[string]*session{}, live: map[*session]struct{}{}, ready: make(chan struct{}),
		initChanged: make(chan struct{})}
	// The editor's EOF ends only the reading: every request it sent
	// before is still answered (below), as other agents do.
	opts := jsonrpc.Options{Logger: o.Logger, MaxLineBytes: o.MaxLineBytes, KeepOpenOnEOF: true}
	if o.Trace != nil {
		opts.Trace = func(d jsonrpc.Direction, line []byte) { o.Trace(d.String(), line) }
	}
	s.conn = jsonrpc.NewConn(r, w, s, opts)
	close(s.ready)
	var err error
	select {
	case <-s.conn.Done():
		if cerr := s.conn.Err(); cerr != nil && !errors.Is(cerr, jsonrpc.ErrPeerClosed) {
			err = cerr
		}
	case <-s.conn.ReadDone():
		if cerr := s.conn.Err(); cerr != nil && !errors.Is(cerr, jsonrpc.ErrPeerClosed) {
			err = cerr
			break
		}
		err = s.answerRead(ctx)
	case <-ctx.Done():
		err = ctx.Err()
	}
	_ = s.conn.Close(err)
	s.closeAll()
	s.conn.Wait()
	return err
}

// answerRead waits, after the editor's EOF, for the requests it sent
// before to be answered, or for ctx to end first.
func (s *Server) answerRead(ctx context.Context) error {
	done := make(chan struct{})
	go func() { s.conn.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-s.conn.Done(): // a write failed: nobody reads the answers
		if cerr := s.conn.Err(); cerr != nil && !errors.Is(cerr, jsonrpc.ErrPeerClosed) {
			return cerr
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Server is one editor connection. Its methods are jsonrpc.Handler's.
type Server struct {
	o     Options
	ctx   context.Context
	conn  *jsonrpc.Conn
	ready chan struct{}

	mu         sync.Mutex
	clientCaps acp.ClientCapabilities
	inited     bool
	// initPending counts the initialize requests that came on the wire
	// (Arrived) and are not over: a request after one waits for it,
	// rather than being refused for coming before it was done.
	// initChanged is closed, and replaced, as each is over.
	initPending int
	initChanged chan struct{}
	initStarted bool // an initialize is being served or was
	// initFirst is the id of the first initialize on the wire, which is
	// the one served when several are pipelined (set: initFirstSet).
	initFirst    jsonrpc.ID
	initFirstSet bool
	closing      bool
	warm         *session
	sessions     map[string]*session   // ready, by id
	live         map[*session]struct{} // every session whose run has not ended
	runs         sync.WaitGroup
}

// HandleNotification implements jsonrpc.Handler: session/cancel stops the
// session's turn; notifications tai does not know go to the wrapped agent
// when it speaks ACP.
func (s *Server) HandleNotification(ctx context.Context, method string, params json.RawMessage) {
	<-s.ready
	switch method {
	case acp.MethodSessionCancel:
		var p acp.CancelNotification
		if err := json.Unmarshal(params, &p); err != nil {
			s.o.Logger.Warn("acp: bad session/cancel", "err", err)
			return
		}
		if ss := s.session(p.SessionId); ss != nil {
			ss.cancelTurn()
		}
	default:
		if ss := s.forwardTarget(params); ss != nil {
			ss.forwardNotify(ctx, method, params)
			return
		}
		s.o.Logger.Debug("acp: ignoring notification", "method", method)
	}
}

// serverMethod serves one client → agent request after initialize.
type serverMethod func(s *Server, ctx context.Context, method string, params json.RawMessage) (any, error)

// serverMethodFor is how tai serves an ACP request itself, or nil for the
// rest, which go to the wrapped agent's session when they name one.
func serverMethodFor(method string) serverMethod {
	switch method {
	case acp.MethodAuthenticate:
		return (*Server).serveAuthenticate
	case acp.MethodSessionNew:
		return (*Server).serveNewSession
	case acp.MethodSessionLoad, acp.MethodSessionResume:
		return (*Server).serveLoadSession
	case acp.MethodSessionList:
		return (*Server).serveListSessions
	case acp.MethodSessionClose:
		return (*Server).serveCloseSession
	case acp.MethodSessionPrompt:
		return (*Server).servePrompt
	case acp.MethodSessionSetMode:
		return (*Server).serveSetMode
	case acp.MethodSessionSetConfigOption:
		return (*Server).serveSetConfigOption
	}
	return nil
}

// Arrived implements jsonrpc.Arriver: it notes, in wire order, that an
// initialize came, and which came first.
func (s *Server) Arrived(method string, id jsonrpc.ID) {
	if method == acp.MethodInitialize {
		s.mu.Lock()
		s.initPending++
		if !s.initFirstSet {
			s.initFirst, s.initFirstSet = id, true
		}
		s.mu.Unlock()
	}
}

// initOver notes that an initialize request is over, whatever its outcome.
func (s *Server) initOver() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.initPending > 0 { // 0: served without a Conn's Arrived
		s.initPending--
	}
	close(s.initChanged)
	s.initChanged = make(chan struct{})
}

// awaitInit waits while an initialize that came before this request is
// still being served, and reports whether the connection is initialized.
func (s *Server) awaitInit(ctx context.Context) (bool, error) {
	for {
		s.mu.Lock()
		inited, pending, changed := s.inited, s.initPending, s.initChanged
		s.mu.Unlock()
		if inited || pending == 0 {
			return inited, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// HandleRequest implements jsonrpc.Handler.
func (s *Server) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	<-s.ready
	if method == acp.MethodInitialize {
		return s.initialize(ctx, params)
	}
	// A client that pipelines its requests after initialize has them
	// served in the order it sent them.
	inited, err := s.awaitInit(ctx)
	if err != nil {
		return nil, err
	}
	if !inited {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "initialize first"}
	}
	if serve := serverMethodFor(method); serve != nil {
		return serve(s, ctx, method, params)
	}
	if ss := s.forwardTarget(params); ss != nil {
		return ss.forwardCall(ctx, method, params)
	}
	return nil, jsonrpc.ErrMethodNotFound(method)
}

func (s *Server) serveAuthenticate(context.Context, string, json.RawMessage) (any, error) {
	return acp.AuthenticateResponse{}, nil
}

func (s *Server) serveNewSession(ctx context.Context, _ string, params json.RawMessage) (any, error) {
	var p acp.NewSessionRequest
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	return s.newSession(ctx, p)
}

func (s *Server) serveLoadSession(ctx context.Context, method string, params json.RawMessage) (any, error) {
	var p acp.LoadSessionRequest
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	return s.loadSession(ctx, method, p)
}

func (s *Server) serveListSessions(ctx context.Context, _ string, params json.RawMessage) (any, error) {
	var p acp.ListSessionsRequest
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	return s.listSessions(ctx, p)
}

func (s *Server) serveCloseSession(_ context.Context, _ string, params json.RawMessage) (any, error) {
	var p acp.CloseSessionRequest
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	ss := s.session(p.SessionId)
	if ss == nil {
		return nil, noSession(p.SessionId)
	}
	ss.close()
	return acp.CloseSessionResponse{}, nil
}

func (s *Server) servePrompt(ctx context.Context, _ string, params json.RawMessage) (any, error) {
	var p struct {
		SessionId string             `json:"sessionId"`
		Prompt    []acp.ContentBlock `json:"prompt"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	ss := s.session(p.SessionId)
	if ss == nil {
		return nil, noSession(p.SessionId)
	}
	content, err := promptContent(p.Prompt)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	return ss.prompt(ctx, content)
}

func (s *Server) serveSetMode(ctx context.Context, _ string, params json.RawMessage) (any, error) {
	var p acp.SetSessionModeRequest
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	ss := s.session(p.SessionId)
	if ss == nil {
		return nil, noSession(p.SessionId)
	}
	if err := ss.ctl.SetMode(ctx, p.ModeId); err != nil {
		return nil, driverError(err)
	}
	return acp.SetSessionModeResponse{}, nil
}

func (s *Server) serveSetConfigOption(ctx context.Context, _ string, params json.RawMessage) (any, error) {
	var p struct {
		SessionId string          `json:"sessionId"`
		ConfigId  string          `json:"configId"`
		Value     json.RawMessage `json:"value"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	ss := s.session(p.SessionId)
	if ss == nil {
		return nil, noSession(p.SessionId)
	}
	value, err := configValue(p.Value)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	if err := ss.ctl.SetConfigOption(ctx, p.ConfigId, value); err != nil {
		return nil, driverError(err)
	}
	return map[string]any{"configOptions": configOptions(ss.configNow(), ss.out.editor)}, nil
}

func (s *Server) initialize(ctx context.Context, params json.RawMessage) (_ any, err error) {
	defer s.initOver()
	var p acp.InitializeRequest
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	id, _ := jsonrpc.RequestID(ctx)
	s.mu.Lock()
	if s.inited || s.initStarted || (s.initFirstSet && id != s.initFirst) {
		s.mu.Unlock()
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "initialize was already called"}
	}
	s.clientCaps, s.initStarted = p.ClientCapabilities, true
	s.mu.Unlock()
	defer func() {
		if err != nil { // the client may try again
			s.mu.Lock()
			s.initStarted, s.initFirstSet = false, false
			s.mu.Unlock()
		}
	}()
	// What the wrapped agent can do is only known once it runs: the first
	// session starts now, and the editor's first session/new takes it over.
	warm, err := s.start(ctx, Spec{Cwd: s.o.Cwd}, "")
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.inited, s.warm = true, warm
	s.mu.Unlock()
	caps := warm.started.Capabilities
	res := acp.InitializeResponse{
		ProtocolVersion: ProtocolVersion,
		AgentCapabilities: acp.AgentCapabilities{
			LoadSession: caps.LoadSession,
			PromptCapabilities: acp.PromptCapabilities{
				// Images and audio cannot travel through tai's prompt blocks.
				EmbeddedContext: caps.EmbeddedFiles,
			},
			McpCapabilities: acp.McpCapabilities{Http: caps.MCPHTTP},
			SessionCapabilities: acp.SessionCapabilities{
				// tai ends a run on close; it lists what it has kept when the
				// agent cannot list, and a kept session is only worth listing
				// if it can be taken up again.
				Close: &acp.EmptyObject{},
			},
		},
		AuthMethods: []acp.AuthMethod{},
		AgentInfo:   &acp.Implementation{Name: "tai", Title: "tai: " + s.o.Agent, Version: s.o.Version},
	}
	if caps.ResumeSession || caps.LoadSession {
		res.AgentCapabilities.SessionCapabilities.Resume = &acp.EmptyObject{}
	}
	if caps.ListSessions || ((caps.ResumeSession || caps.LoadSession) && s.o.List != nil) {
		res.AgentCapabilities.SessionCapabilities.List = &acp.EmptyObject{}
	}
	return res, nil
}

// start runs a session and waits until it is ready for prompts.
func (s *Server) start(ctx context.Context, spec Spec, method string) (*session, error) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "tai is shutting down"}
	}
	ss := newSession(s, spec)
	s.live[ss] = struct{}{}
	s.runs.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.runs.Done()
		err := s.o.Run(ss.runCtx, spec, ss.hooks())
		ss.ended(err)
	}()
	select {
	case <-ss.readyCh:
	case <-ss.done:
		ss.wait()
		return nil, startError(method, spec, ss.runErr)
	case <-ctx.Done():
		ss.close()
		return nil, ctx.Err()
	}
	s.mu.Lock()
	s.sessions[ss.id] = ss
	s.mu.Unlock()
	return ss, nil
}

func startError(method string, spec Spec, err error) error {
	if err == nil {
		err = ErrNoWarmSession
	}
	if spec.ResumeID != "" && errors.Is(err, driver.ErrNoSession) {
		return &jsonrpc.Error{Code: jsonrpc.CodeResourceNotFound, Message: fmt.Sprintf("%s: %v", method, err)}
	}
	var auth *driver.AuthRequiredError
	if errors.As(err, &auth) {
		return &jsonrpc.Error{Code: jsonrpc.CodeAuthRequired, Message: err.Error()}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "starting the agent: " + err.Error()}
}

func (s *Server) newSession(ctx context.Context, p acp.NewSessionRequest) (any, error) {
	if err := checkCwd(p.Cwd); err != nil {
		return nil, err
	}
	mcp := mcpServers(p.McpServers)
	s.mu.Lock()
	warm := s.warm
	if warm != nil && filepath.Clean(p.Cwd) == filepath.Clean(warm.spec.Cwd) && len(mcp) == 0 {
		s.warm = nil
		s.mu.Unlock()
		select {
		case <-warm.done:
			// It died waiting: start another.
		default:
			return warm.opened(), nil
		}
	} else {
		s.mu.Unlock()
	}
	if warm != nil {
		// An unused warm session is not worth keeping.
		s.takeWarm(warm)
	}
	ss, err := s.start(ctx, Spec{Cwd: p.Cwd, MCPServers: mcp}, acp.MethodSessionNew)
	if err != nil {
		return nil, err
	}
	return ss.opened(), nil
}

// takeWarm closes the warm session if nobody took it.
func (s *Server) takeWarm(warm *session) {
	s.mu.Lock()
	if s.warm == warm {
		s.warm = nil
		s.mu.Unlock()
		warm.close()
		return
	}
	s.mu.Unlock()
}

func (s *Server) loadSession(ctx context.Context, method string, p acp.LoadSessionRequest) (any, error) {
	if err := checkCwd(p.Cwd); err != nil {
		return nil, err
	}
	if p.SessionId == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "sessionId is required"}
	}
	if ss := s.session(p.SessionId); ss != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("session %s is already open", p.SessionId)}
	}
	s.mu.Lock()
	warm := s.warm
	s.mu.Unlock()
	if warm != nil {
		s.takeWarm(warm)
	}
	ss, err := s.start(ctx, Spec{Cwd: p.Cwd, ResumeID: p.SessionId, Load: method == acp.MethodSessionLoad, MCPServers: mcpServers(p.McpServers)}, method)
	if err != nil {
		return nil, err
	}
	o := ss.opened()
	return map[string]any{"modes": o.Modes, "configOptions": o.ConfigOptions}, nil
}

func (s *Server) listSessions(ctx context.Context, p acp.ListSessionsRequest) (any, error) {
	var list []driver.SessionSummary
	var err error
	s.mu.Lock()
	var lister driver.SessionLister
	for _, ss := range s.sessions {
		if l, ok := ss.ctl.Session().(driver.SessionLister); ok && ss.started.Capabilities.ListSessions {
			lister = l
			break
		}
	}
	s.mu.Unlock()
	if lister == nil && s.o.List == nil {
		return nil, jsonrpc.ErrMethodNotFound(acp.MethodSessionList)
	}
	if lister != nil {
		if list, err = lister.ListSessions(ctx, p.Cwd); err != nil {
			return nil, driverError(err)
		}
	}
	// And the resumable sessions tai kept: an agent may list only the
	// sessions of its own process.
	if s.o.List != nil {
		cwd := p.Cwd
		if cwd == "" {
			cwd = s.o.Cwd
		}
		kept, err := s.o.List(ctx, cwd)
		if err != nil && lister == nil {
			return nil, driverError(err)
		}
		have := map[string]bool{}
		for _, l := range list {
			have[l.ID] = true
		}
		for _, k := range kept {
			if !have[k.ID] {
				list = append(list, k)
			}
		}
	}
	res := acp.ListSessionsResponse{}
	for _, l := range list {
		info := acp.SessionInfo{SessionId: l.ID, Cwd: l.Cwd}
		if l.Title != "" {
			t := l.Title
			info.Title = &t
		}
		if l.UpdatedAt != "" {
			u := l.UpdatedAt
			info.UpdatedAt = &u
		}
		res.Sessions = append(res.Sessions, info)
	}
	return res, nil
}

func (s *Server) session(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

func (s *Server) forget(ss *session) {
	s.mu.Lock()
	if s.sessions[ss.id] == ss {
		delete(s.sessions, ss.id)
	}
	delete(s.live, ss)
	s.mu.Unlock()
}

// closeAll ends every session and waits for their runs.
func (s *Server) closeAll() {
	s.mu.Lock()
	s.closing = true
	all := make([]*session, 0, len(s.live))
	for ss := range s.live {
		all = append(all, ss)
	}
	s.mu.Unlock()
	for _, ss := range all {
		ss.close()
	}
	s.runs.Wait()
}

func (s *Server) clientFS() acp.FileSystemCapability {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clientCaps.Fs
}

// decode reads params, answering bad ones with -32602.
func decode(params json.RawMessage, v any) error {
	if len(params) == 0 || string(params) == "null" {
		params = []byte("{}")
	}
	if err := json.Unmarshal(params, v); err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	return nil
}

func noSession(id string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeResourceNotFound, Message: fmt.Sprintf("no session %q", id)}
}

func checkCwd(cwd string) error {
	if cwd == "" || !filepath.IsAbs(cwd) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("cwd must be an absolute path, not %q", cwd)}
	}
	return nil
}

// driverError maps what a session refused onto JSON-RPC errors.
func driverError(err error) error {
	var re *driver.RemoteError
	switch {
	case errors.As(err, &re):
		return &jsonrpc.Error{Code: re.Code, Message: re.Message, Data: re.Data}
	case errors.Is(err, driver.ErrUnsupported):
		return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: err.Error()}
	case errors.Is(err, driver.ErrBadValue):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	var um *runner.UnknownModeError
	if errors.As(err, &um) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	return err
}

func configValue(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return fmt.Sprint(b), nil
	}
	return "", fmt.Errorf("value must be a string or a boolean, not %s", raw)
}

func mcpServers(l acp.McpServerList) []driver.MCPServer {
	var out []driver.MCPServer
	for _, m := range l {
		switch {
		case m.Stdio != nil:
			d := driver.MCPServer{Name: m.Stdio.Name, Command: m.Stdio.Command, Args: m.Stdio.Args}
			for _, e := range m.Stdio.Env {
				if d.Env == nil {
					d.Env = map[string]string{}
				}
				d.Env[e.Name] = e.Value
			}
			out = append(out, d)
		case m.Http != nil:
			d := driver.MCPServer{Name: m.Http.Name, Type: "http", URL: m.Http.Url}
			for _, h := range m.Http.Headers {
				if d.Headers == nil {
					d.Headers = map[string]string{}
				}
				d.Headers[h.Name] = h.Value
			}
			out = append(out, d)
		case m.Sse != nil:
			d := driver.MCPServer{Name: m.Sse.Name, Type: "sse", URL: m.Sse.Url}
			for _, h := range m.Sse.Headers {
				if d.Headers == nil {
					d.Headers = map[string]string{}
				}
				d.Headers[h.Name] = h.Value
			}
			out = append(out, d)
		}
	}
	return out
}

// promptContent turns the editor's prompt blocks into tai's.
func promptContent(blocks []acp.ContentBlock) ([]driver.Content, error) {
	var out []driver.Content
	for _, b := range blocks {
		switch {
		case b.Text != nil:
			out = append(out, driver.TextContent(b.Text.Text))
		case b.ResourceLink != nil:
			c := driver.Content{Type: "resource_link", URI: b.ResourceLink.Uri, Name: b.ResourceLink.Name}
			if b.ResourceLink.MimeType != nil {
				c.MimeType = *b.ResourceLink.MimeType
			}
			if b.ResourceLink.Size != nil {
				c.Size = *b.ResourceLink.Size
			}
			out = append(out, c)
		case b.Resource != nil && b.Resource.Resource.Text != nil:
			t := b.Resource.Resource.Text
			c := driver.Content{Type: "resource", URI: t.Uri, Text: t.Text, Name: filepath.Base(t.Uri)}
			if t.MimeType != nil {
				c.MimeType = *t.MimeType
			}
			out = append(out, c)
		default:
			return nil, fmt.Errorf("prompt block of type %q is not supported (initialize lists what is)", b.Kind())
		}
	}
	if len(out) == 0 {
		return nil, errors.New("empty prompt")
	}
	return out, nil
}
