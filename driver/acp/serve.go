package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/internal/jsonw"
	"github.com/tai-dev/tai/jsonrpc"
	schema "github.com/tai-dev/tai/protocol/acp"
)

// handler serves the agent's side of the connection.
type handler struct{ s *Session }

func (h handler) HandleNotification(ctx context.Context, method string, params json.RawMessage) {
	switch method {
	case schema.MethodSessionUpdate:
		h.s.onUpdate(params)
	case schema.MethodElicitationComplete:
		h.s.elicitComplete(params)
	default:
		// Unknown notifications (extensions such as qwen's
		// qwen/notify/...) must be ignored, unless a proxy's client may
		// know them.
		if p := h.s.cfg.Host.Passthrough; p != nil && !driver.ACPMethod(method) {
			if err := p.NotifyRaw(ctx, method, params); err != nil {
				h.s.log.Debug("passing a notification through", "method", method, "err", err)
			}
			return
		}
		h.s.log.Debug("ignored notification", "method", method)
	}
}

// Borrows lets the reader lend a session/update its line, which the
// decoder copies from (jsonrpc.Borrower): everything else the session
// keeps, or hands on as it came (a passthrough, an elicitation), needs
// the line's own copy.
func (h handler) Borrows(method string, size int) bool {
	return method == schema.MethodSessionUpdate && !h.s.dec.Retains(size)
}

// hostMethod serves one agent → client request: offered says whether tai
// announced it to this agent (else it goes to the passthrough, or is
// unknown).
type hostMethod struct {
	offered func(*Session) bool
	serve   func(s *Session, ctx context.Context, params json.RawMessage) (any, error)
}

func always(*Session) bool          { return true }
func fsOffered(s *Session) bool     { return s.fsOffered }
func termOffered(s *Session) bool   { return s.termOffered }
func elicitOffered(s *Session) bool { return s.cfg.Host.Elicitor != nil }

// hostMethods is the table of requests the agent may send tai.
var hostMethods = map[string]hostMethod{
	schema.MethodSessionRequestPermission: {always, (*Session).requestPermission},
	schema.MethodElicitationCreate:        {elicitOffered, (*Session).elicit},
	schema.MethodFsReadTextFile:           {fsOffered, (*Session).serveReadTextFile},
	schema.MethodFsWriteTextFile:          {fsOffered, (*Session).serveWriteTextFile},
	schema.MethodTerminalCreate:           {termOffered, (*Session).serveCreateTerminal},
	schema.MethodTerminalOutput:           {termOffered, (*Session).serveTerminalOutput},
	schema.MethodTerminalWaitForExit:      {termOffered, (*Session).serveWaitForTerminalExit},
	schema.MethodTerminalKill:             {termOffered, (*Session).serveKillTerminal},
	schema.MethodTerminalRelease:          {termOffered, (*Session).serveReleaseTerminal},
}

func (h handler) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	s := h.s
	if m, ok := hostMethods[method]; ok && m.offered(s) {
		return m.serve(s, ctx, params)
	}
	// Includes fs/terminal and elicitation when not offered,
	// and extension requests such as qwen's craft/drainMidTurnQueue, which
	// a proxy's client may know.
	if p := s.cfg.Host.Passthrough; p != nil && !driver.ACPMethod(method) {
		return p.CallRaw(ctx, method, params)
	}
	return nil, jsonrpc.ErrMethodNotFound(method)
}

func (s *Session) serveReadTextFile(ctx context.Context, params json.RawMessage) (any, error) {
	var r schema.ReadTextFileRequest
	if err := decode(params, &r); err != nil {
		return nil, err
	}
	// A file's text is held from the read until the reply is written:
	// only so many at once, however many the agent pipelines.
	select {
	case s.reads <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	content, err := s.cfg.Host.Files.ReadTextFile(ctx, r.Path, deref(r.Line), deref(r.Limit))
	if err != nil {
		<-s.reads
		return nil, s.hostError(schema.MethodFsReadTextFile, r.Path, err)
	}
	return &readReply{content: content, done: func() { <-s.reads }}, nil
}

func (s *Session) serveWriteTextFile(ctx context.Context, params json.RawMessage) (any, error) {
	var r schema.WriteTextFileRequest
	if err := decode(params, &r); err != nil {
		return nil, err
	}
	if err := s.cfg.Host.Files.WriteTextFile(ctx, r.Path, r.Content); err != nil {
		return nil, s.hostError(schema.MethodFsWriteTextFile, r.Path, err)
	}
	return schema.WriteTextFileResponse{}, nil
}

func (s *Session) serveCreateTerminal(ctx context.Context, params json.RawMessage) (any, error) {
	var r schema.CreateTerminalRequest
	if err := decode(params, &r); err != nil {
		return nil, err
	}
	req := driver.TerminalRequest{Command: r.Command, Args: r.Args, Cwd: deref(r.Cwd), OutputByteLimit: deref(r.OutputByteLimit)}
	if req.Cwd == "" {
		req.Cwd = s.cfg.Cwd
	}
	if len(r.Env) > 0 {
		req.Env = map[string]string{}
		for _, e := range r.Env {
			req.Env[e.Name] = e.Value
		}
	}
	id, err := s.cfg.Host.Terminals.CreateTerminal(ctx, req)
	if err != nil {
		return nil, s.hostError(schema.MethodTerminalCreate, req.Cwd, err)
	}
	return schema.CreateTerminalResponse{TerminalId: id}, nil
}

func (s *Session) serveTerminalOutput(ctx context.Context, params json.RawMessage) (any, error) {
	var r schema.TerminalOutputRequest
	if err := decode(params, &r); err != nil {
		return nil, err
	}
	out, err := s.cfg.Host.Terminals.TerminalOutput(ctx, r.TerminalId)
	if err != nil {
		return nil, s.hostError(schema.MethodTerminalOutput, r.TerminalId, err)
	}
	resp := schema.TerminalOutputResponse{Output: out.Output, Truncated: out.Truncated}
	if out.Exit != nil {
		resp.ExitStatus = &schema.TerminalExitStatus{ExitCode: out.Exit.ExitCode, Signal: nonEmpty(out.Exit.Signal)}
	}
	return resp, nil
}

func (s *Session) serveWaitForTerminalExit(ctx context.Context, params json.RawMessage) (any, error) {
	var r schema.WaitForTerminalExitRequest
	if err := decode(params, &r); err != nil {
		return nil, err
	}
	st, err := s.cfg.Host.Terminals.WaitForTerminalExit(ctx, r.TerminalId)
	if err != nil {
		return nil, s.hostError(schema.MethodTerminalWaitForExit, r.TerminalId, err)
	}
	return schema.WaitForTerminalExitResponse{ExitCode: st.ExitCode, Signal: nonEmpty(st.Signal)}, nil
}

func (s *Session) serveKillTerminal(ctx context.Context, params json.RawMessage) (any, error) {
	var r schema.KillTerminalRequest
	if err := decode(params, &r); err != nil {
		return nil, err
	}
	if err := s.cfg.Host.Terminals.KillTerminal(ctx, r.TerminalId); err != nil {
		return nil, s.hostError(schema.MethodTerminalKill, r.TerminalId, err)
	}
	return schema.KillTerminalResponse{}, nil
}

func (s *Session) serveReleaseTerminal(ctx context.Context, params json.RawMessage) (any, error) {
	var r schema.ReleaseTerminalRequest
	if err := decode(params, &r); err != nil {
		return nil, err
	}
	if err := s.cfg.Host.Terminals.ReleaseTerminal(ctx, r.TerminalId); err != nil {
		return nil, s.hostError(schema.MethodTerminalRelease, r.TerminalId, err)
	}
	return schema.ReleaseTerminalResponse{}, nil
}

func decode(params json.RawMessage, v any) error {
	return invalidParams(json.Unmarshal(params, v))
}

// invalidParams is a decode error as the agent gets it (nil for none).
func invalidParams(err error) error {
	if err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: " + err.Error()}
	}
	return nil
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// hostError maps a host service failure onto a JSON-RPC error the agent can
// act on, and reports refusals so the user sees them.
func (s *Session) hostError(method, subject string, err error) error {
	switch {
	case errors.Is(err, driver.ErrOutsideWorkspace):
		s.emit(driver.Event{Type: driver.EventError, Error: &driver.ErrorInfo{Code: "outside_workspace",
			Message: fmt.Sprintf("refused %s: %v", method, err)}})
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	case errors.Is(err, driver.ErrDenied), errors.Is(err, driver.ErrProtected), errors.Is(err, driver.ErrSecret),
		errors.Is(err, driver.ErrInvalidPath):
		// The host services reported these (a decision, an error event).
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: err.Error()}
	case errors.Is(err, fs.ErrNotExist):
		return &jsonrpc.Error{Code: jsonrpc.CodeResourceNotFound, Message: fmt.Sprintf("Resource not found: %s (%v)", subject, err)}
	case errors.Is(err, context.Canceled):
		return &jsonrpc.Error{Code: jsonrpc.CodeRequestCancelled, Message: "request cancelled"}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

func (s *Session) requestPermission(ctx context.Context, params json.RawMessage) (any, error) {
	var r schema.RequestPermissionRequest
	if err := invalidParams(schema.DecodeRequestPermission(params, &r)); err != nil {
		return nil, err
	}
	id, _ := jsonrpc.RequestID(ctx)
	// The tool_call that preceded this request has been applied (ordered
	// dispatch), so the stored state fills in what the request omits.
	s.applyMu.Lock()
	tc := driver.ToolCall{ID: r.ToolCall.ToolCallId, Kind: driver.KindOther}
	if known, ok := s.tools[r.ToolCall.ToolCallId]; ok {
		tc = *known
	}
	patchToolCall(&tc, &r.ToolCall)
	s.applyMu.Unlock()
	req := driver.PermissionRequest{ID: id.String(), Session: s.ID(), ToolCall: tc}
	for _, o := range r.Options {
		req.Options = append(req.Options, driver.PermissionOption{ID: o.OptionId, Name: o.Name, Kind: string(o.Kind)})
	}
	// The decision is abandoned when the agent withdraws the request
	// ($/cancel_request) or the turn is cancelled.
	dctx, cancel := withTurn(ctx, s.turn.Load().ctx)
	defer cancel()
	d, err := driver.AskPermission(dctx, s.cfg.Host.Decider, s.emit, req, nil)
	if err != nil {
		s.log.Warn("permission decision failed; answering cancelled", "err", err)
	}
	if d.Outcome == driver.OutcomeCancelled || d.OptionID == "" {
		return schema.CancelPermission(), nil
	}
	res := schema.SelectPermission(d.OptionID)
	if name, _ := s.AgentInfo(); name == "tai" {
		// The agent is a tai (tai acp): who decided travels with the
		// answer, so that its record keeps the provenance.
		res.Meta = map[string]any{"tai": map[string]any{"decidedBy": d.DecidedBy, "reason": d.Reason, "verdict": d.Verdict}}
	}
	return res, nil
}

// CallRaw sends the agent a request tai does not know, unchanged, and
// returns its result as it came.
func (s *Session) CallRaw(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	var out json.RawMessage
	if err := s.call(ctx, method, params, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// NotifyRaw sends the agent a notification tai does not know, unchanged.
func (s *Session) NotifyRaw(ctx context.Context, method string, params json.RawMessage) error {
	return s.conn.Notify(ctx, method, params)
}

// maxReads bounds the file texts held for replies at once.
const maxReads = 2

// readReply is fs/read_text_file's result, written straight to the agent's
// stdin: the text is not encoded in memory a second time.
type readReply struct {
	content string
	done    func()
	once    sync.Once
}

func (r *readReply) WriteJSON(w *bufio.Writer) error {
	_, _ = w.WriteString(`{"content":`)
	if err := jsonw.String(w, r.content); err != nil {
		return err
	}
	return w.WriteByte('}')
}

func (r *readReply) Release() { r.once.Do(r.done) }
