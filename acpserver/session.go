package acpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/jsonrpc"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/protocol/acp"
)

// session is one editor session: one run of the wrapped agent.
type session struct {
	srv        *Server
	spec       Spec
	runCtx     context.Context
	stopRun    context.CancelFunc
	turns      chan []driver.Content
	interrupts chan struct{}
	readyCh    chan struct{} // closed once the run hands over its session
	done       chan struct{} // closed when the run has ended
	closeOnce  sync.Once
	closing    chan struct{} // closed first by close: no more turns
	sendMu     sync.RWMutex  // held by senders on turns, so that close never closes it under one

	// Set before readyCh is closed, read-only after.
	id      string
	started driver.SessionStarted
	ctl     Control

	runErr error // set before done is closed

	mu     sync.Mutex
	turn   chan driver.TurnEnded // the prompt waiting for its turn's end
	out    updater
	mode   string
	config []driver.ConfigOption
	seen   bool // session.started arrived
}

func newSession(s *Server, spec Spec) *session {
	ctx, cancel := context.WithCancel(s.ctx)
	// A loaded session's replay comes before its start: it is known by the
	// id the editor asked for.
	return &session{srv: s, spec: spec, id: spec.ResumeID, runCtx: ctx, stopRun: cancel, turns: make(chan []driver.Content),
		interrupts: make(chan struct{}, 1), readyCh: make(chan struct{}), done: make(chan struct{}), closing: make(chan struct{}),
		// s.mu is held: the editor's capabilities are read as they were
		// when it initialized.
		out: updater{tools: map[string]bool{}, messages: map[string]string{}, editor: s.clientCaps.Session, log: s.o.Logger}}
}

func (ss *session) hooks() Hooks {
	h := Hooks{Sink: sink{ss}, Turns: ss.turns, Interrupts: ss.interrupts, Prompter: editor{ss},
		OnSession: ss.onSession, Passthrough: editorPassthrough{ss}}
	if fs := ss.srv.clientFS(); fs.ReadTextFile && fs.WriteTextFile {
		h.Files = editorFiles{ss}
	}
	h.Elicitor = ss.elicitor()
	return h
}

func (ss *session) onSession(c Control) {
	ss.mu.Lock()
	ss.ctl = c
	if ss.id == "" {
		ss.id = c.Session().ID()
	}
	ss.mu.Unlock()
	close(ss.readyCh)
}

// ended records how the run ended.
func (ss *session) ended(err error) {
	ss.runErr = err
	close(ss.done)
	ss.srv.forget(ss)
	ss.srv.o.Logger.Debug("acp: session run ended", "session", ss.id, "err", err)
}

func (ss *session) wait() { <-ss.done }

// close ends the session: the running turn is cancelled, the run ends and
// the agent is gone when it returns.
func (ss *session) close() {
	ss.closeOnce.Do(func() {
		close(ss.closing)
		ss.cancelTurn()
		ss.sendMu.Lock()
		close(ss.turns)
		ss.sendMu.Unlock()
	})
	select {
	case <-ss.done:
		return
	case <-ss.srv.ctx.Done():
		ss.stopRun()
	}
	<-ss.done
}

// cancelTurn interrupts the running turn, if any. An interrupt with no
// turn running would linger and stop the next one.
func (ss *session) cancelTurn() {
	ss.mu.Lock()
	running := ss.turn != nil
	ss.mu.Unlock()
	if !running {
		return
	}
	select {
	case ss.interrupts <- struct{}{}:
	default:
	}
}

// opened is the answer to session/new.
func (ss *session) opened() acp.NewSessionResponse {
	res := acp.NewSessionResponse{SessionId: ss.id}
	ss.mu.Lock()
	mode, config := ss.mode, ss.config
	ss.mu.Unlock()
	if len(ss.started.Modes) > 0 {
		st := &acp.SessionModeState{CurrentModeId: mode}
		for _, m := range ss.started.Modes {
			sm := acp.SessionMode{Id: m.ID, Name: m.Name}
			if sm.Name == "" {
				sm.Name = m.ID
			}
			if m.Description != "" {
				d := m.Description
				sm.Description = &d
			}
			st.AvailableModes = append(st.AvailableModes, sm)
		}
		res.Modes = st
	}
	if len(config) > 0 {
		b, _ := json.Marshal(configOptions(config, ss.out.editor))
		_ = json.Unmarshal(b, &res.ConfigOptions)
	}
	return res
}

func (ss *session) configNow() []driver.ConfigOption {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.config
}

// promptResponse is session/prompt's answer.
type promptResponse struct {
	StopReason string     `json:"stopReason"`
	Usage      *acp.Usage `json:"usage,omitempty"`
}

// prompt runs one turn and answers with its stop reason, after every
// update of the turn has been sent.
func (ss *session) prompt(ctx context.Context, content []driver.Content) (any, error) {
	end := make(chan driver.TurnEnded, 1)
	ss.mu.Lock()
	if ss.turn != nil {
		ss.mu.Unlock()
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "a turn is already running in this session"}
	}
	ss.turn = end
	ss.out.newTurn()
	ss.mu.Unlock()
	defer func() {
		ss.mu.Lock()
		ss.turn = nil
		ss.mu.Unlock()
	}()
	select { // a cancel that came after the last turn ended is stale
	case <-ss.interrupts:
	default:
	}
	if err := ss.send(ctx, content); err != nil {
		return nil, err
	}
	stopping := ctx.Done()
	for {
		select {
		case te := <-end:
			res := promptResponse{StopReason: te.StopReason}
			if u := te.Usage; u != nil && (u.InputTokens > 0 || u.OutputTokens > 0 || u.TotalTokens > 0) {
				res.Usage = &acp.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens}
				if res.Usage.TotalTokens == 0 {
					res.Usage.TotalTokens = u.InputTokens + u.OutputTokens
				}
			}
			return res, nil
		case <-ss.done:
			select {
			case te := <-end:
				return promptResponse{StopReason: te.StopReason}, nil
			default:
			}
			return nil, ss.deadError()
		case <-stopping:
			// The editor gave up on the request: stop the turn, and answer
			// once it has stopped.
			stopping = nil
			select {
			case ss.interrupts <- struct{}{}:
			default:
			}
		}
	}
}

// send hands the run a turn, unless the session is closing.
func (ss *session) send(ctx context.Context, content []driver.Content) error {
	ss.sendMu.RLock()
	defer ss.sendMu.RUnlock()
	select {
	case <-ss.closing:
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "the session is closed"}
	default:
	}
	select {
	case ss.turns <- content:
		return nil
	case <-ss.closing:
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "the session is closed"}
	case <-ss.done:
		return ss.deadError()
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (ss *session) deadError() error {
	msg := "the agent's session ended"
	if ss.runErr != nil {
		msg += ": " + ss.runErr.Error()
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}
}

// sink turns the run's events into session/update notifications, written
// as they come, so that they precede the prompt's answer.
type sink struct{ ss *session }

func (k sink) Emit(ev driver.Event) {
	ss := k.ss
	ss.mu.Lock()
	switch ev.Type {
	case driver.EventSessionStarted:
		if ev.Started != nil {
			ss.started = *ev.Started
			ss.mode = ev.Started.CurrentMode
			ss.config = ev.Started.Config
			ss.out.rawOK = ev.Started.Driver == driver.ACP
		}
		if ev.Session != "" {
			ss.id = ev.Session
		}
		ss.seen = true
	case driver.EventModeChanged:
		if ev.Mode != nil {
			ss.mode = ev.Mode.ID
		}
	case driver.EventConfigOptions:
		ss.config = ev.Config
	case driver.EventTurnEnded:
		if ss.turn != nil && ev.Turn != nil {
			select {
			case ss.turn <- *ev.Turn:
			default:
			}
		}
	}
	id := ss.id
	updates := ss.out.updates(ev)
	ss.mu.Unlock()
	if id == "" {
		return
	}
	for _, u := range updates {
		if err := ss.srv.conn.Notify(ss.srv.ctx, acp.MethodSessionUpdate, updateParams{SessionID: id, Update: u}); err != nil {
			ss.srv.o.Logger.Debug("acp: session/update not sent", "err", err)
			return
		}
	}
}

// editor is the human behind the editor, asked through
// session/request_permission.
type editor struct{ ss *session }

// Where is how the decision's reason names the place of the answer.
func (editor) Where() string { return "in the editor (ACP session/request_permission)" }

// ErrEditorCancelled: the editor answered a permission request cancelled.
var ErrEditorCancelled = errors.New("the editor cancelled the permission request")

func (e editor) Ask(ctx context.Context, req driver.PermissionRequest) (policy.Answer, error) {
	a, _, err := e.AskRelayed(ctx, req)
	return a, err
}

// AskRelayed asks the editor; when the editor is a tai, its answer says
// who decided there (_meta.tai), and that provenance is kept.
func (e editor) AskRelayed(ctx context.Context, req driver.PermissionRequest) (policy.Answer, *policy.Relayed, error) {
	ss := e.ss
	opts := editorOptions(req.Options)
	params := map[string]any{"sessionId": ss.id, "toolCall": toolCallUpdate(req.ToolCall), "options": opts}
	var res acp.RequestPermissionResponse
	if err := ss.srv.conn.Call(ctx, acp.MethodSessionRequestPermission, params, &res); err != nil {
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) {
			// The editor answered, with an error: a refusal of this
			// request, not the end of the turn.
			return policy.DenyOnce, nil, &policy.Refusal{Err: fmt.Errorf("the editor: %w", err)}
		}
		return policy.DenyOnce, nil, fmt.Errorf("asking the editor: %w", err)
	}
	rel := relayed(res.Meta)
	sel := res.Outcome.Selected
	if sel == nil {
		return policy.DenyOnce, nil, ErrEditorCancelled
	}
	for _, o := range opts {
		if o["optionId"] != sel.OptionId {
			continue
		}
		switch o["kind"] {
		case driver.OptionAllowOnce:
			return policy.AllowOnce, rel, nil
		case driver.OptionAllowAlways:
			return policy.AllowAlways, rel, nil
		case driver.OptionRejectAlways:
			return policy.DenyAlways, rel, nil
		default:
			return policy.DenyOnce, rel, nil
		}
	}
	return policy.DenyOnce, nil, fmt.Errorf("the editor chose option %q, which was not offered", sel.OptionId)
}

// relayed reads the provenance a tai in front sends with its answers.
func relayed(meta map[string]any) *policy.Relayed {
	t, ok := meta["tai"].(map[string]any)
	if !ok {
		return nil
	}
	by, _ := t["decidedBy"].(string)
	if by == "" {
		return nil
	}
	reason, _ := t["reason"].(string)
	return &policy.Relayed{By: by, Reason: reason}
}

// editorOptions are the agent's options the editor can tell apart by kind;
// the policy maps the editor's kind back onto the agent's option. An
// allow and a reject are always among them.
func editorOptions(agent []driver.PermissionOption) []map[string]string {
	var out []map[string]string
	have := map[string]bool{}
	for _, o := range agent {
		switch o.Kind {
		case driver.OptionAllowOnce, driver.OptionAllowAlways, driver.OptionRejectOnce, driver.OptionRejectAlways:
		default:
			continue
		}
		if have[o.Kind] {
			continue
		}
		have[o.Kind] = true
		name := o.Name
		if name == "" {
			name = o.Kind
		}
		out = append(out, map[string]string{"optionId": o.Kind, "name": name, "kind": o.Kind})
	}
	if !have[driver.OptionAllowOnce] && !have[driver.OptionAllowAlways] {
		out = append(out, map[string]string{"optionId": driver.OptionAllowOnce, "name": "Allow", "kind": driver.OptionAllowOnce})
	}
	if !have[driver.OptionRejectOnce] && !have[driver.OptionRejectAlways] {
		out = append(out, map[string]string{"optionId": driver.OptionRejectOnce, "name": "Reject", "kind": driver.OptionRejectOnce})
	}
	return out
}

// editorFiles serves the agent's file requests from the editor's buffers,
// once tai's host services have confined and checked them.
type editorFiles struct{ ss *session }

func (f editorFiles) ReadTextFile(ctx context.Context, path string, line, limit int) (string, error) {
	p := map[string]any{"sessionId": f.ss.id, "path": path}
	if line > 0 {
		p["line"] = line
	}
	if limit > 0 {
		p["limit"] = limit
	}
	var res acp.ReadTextFileResponse
	if err := f.ss.srv.conn.Call(ctx, acp.MethodFsReadTextFile, p, &res); err != nil {
		return "", fmt.Errorf("the editor's %s: %w", acp.MethodFsReadTextFile, err)
	}
	return res.Content, nil
}

func (f editorFiles) WriteTextFile(ctx context.Context, path, content string) error {
	p := map[string]any{"sessionId": f.ss.id, "path": path, "content": content}
	if err := f.ss.srv.conn.Call(ctx, acp.MethodFsWriteTextFile, p, nil); err != nil {
		return fmt.Errorf("the editor's %s: %w", acp.MethodFsWriteTextFile, err)
	}
	return nil
}

// RawConn is a live session whose agent speaks JSON-RPC (the ACP driver):
// what tai does not know passes through it unchanged.
type RawConn interface {
	CallRaw(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	NotifyRaw(ctx context.Context, method string, params json.RawMessage) error
}

// forwardTarget is the session an unknown message is for: the one its
// sessionId names, else the only one open, if its agent speaks JSON-RPC.
func (s *Server) forwardTarget(params json.RawMessage) *session {
	var p struct {
		SessionId string `json:"sessionId"`
	}
	_ = json.Unmarshal(params, &p)
	s.mu.Lock()
	defer s.mu.Unlock()
	var ss *session
	if p.SessionId != "" {
		ss = s.sessions[p.SessionId]
	} else if len(s.sessions) == 1 {
		for _, only := range s.sessions {
			ss = only
		}
	}
	if ss == nil {
		return nil
	}
	if _, ok := ss.ctl.Session().(RawConn); !ok {
		return nil
	}
	return ss
}

func (ss *session) forwardCall(ctx context.Context, method string, params json.RawMessage) (any, error) {
	res, err := ss.ctl.Session().(RawConn).CallRaw(ctx, method, params)
	if err != nil {
		var re *driver.RemoteError
		if errors.As(err, &re) {
			return nil, &jsonrpc.Error{Code: re.Code, Message: re.Message, Data: re.Data}
		}
		return nil, err
	}
	return res, nil
}

func (ss *session) forwardNotify(ctx context.Context, method string, params json.RawMessage) {
	if err := ss.ctl.Session().(RawConn).NotifyRaw(ctx, method, params); err != nil {
		ss.srv.o.Logger.Debug("acp: forwarding a notification", "method", method, "err", err)
	}
}

// editorPassthrough hands the agent's extension messages to the editor
// unchanged: the session ids are the agent's own.
type editorPassthrough struct{ ss *session }

func (p editorPassthrough) CallRaw(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	var out json.RawMessage
	if err := p.ss.srv.conn.Call(ctx, method, params, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func (p editorPassthrough) NotifyRaw(ctx context.Context, method string, params json.RawMessage) error {
	return p.ss.srv.conn.Notify(ctx, method, params)
}
