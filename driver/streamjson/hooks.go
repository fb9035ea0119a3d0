package streamjson

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/tai-dev/tai/driver"
)

// Vetoer is what a Host.Decider may also offer: a check of a tool call
// that never asks anyone and only ever denies (tai's built-in floor, deny
// rules, remembered "always deny"). policy.Engine implements it. The
// driver runs it from a PreToolUse hook on every tool call, because Claude
// runs the tools its own settings allow (permissions.allow, acceptEdits)
// without sending can_use_tool, and tai's floor must hold for those too.
// ok false means "no objection": the CLI's can_use_tool, if it sends one,
// still goes to Decide, so nobody is asked twice.
type Vetoer interface {
	Veto(ctx context.Context, req driver.PermissionRequest) (d driver.PermissionDecision, ok bool)
}

// Hook callback ids tai registers in initialize. The CLI sends them back
// in hook_callback requests.
const (
	hookPreToolUse = "tai_pre_tool_use"
	hookStop       = "tai_stop"
)

// hooks is the initialize request's hook registration: PreToolUse on every
// tool (matcher null) when the decider can veto, and Stop.
// Claude 2.1.332 calls them back; qwen 0.24 answers
// can_handle_hook_callback false and ignores them.
func (s *Session) hooks() map[string]any {
	h := map[string]any{
		"Stop": []map[string]any{{"matcher": nil, "hookCallbackIds": []string{hookStop}}},
	}
	if _, ok := s.l.Host.Decider.(Vetoer); ok {
		h["PreToolUse"] = []map[string]any{{"matcher": nil, "hookCallbackIds": []string{hookPreToolUse}}}
	}
	return h
}

// hookInput is the input of a hook_callback (Claude 2.1.332):
//
//	{"subtype":"hook_callback","callback_id":"tai_pre_tool_use","tool_use_id":"call_2",
//	 "input":{"session_id":…,"transcript_path":…,"cwd":…,"permission_mode":"default",
//	          "hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{…},"tool_use_id":"call_2"}}
//
// and for Stop "hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":….
type hookInput struct {
	CallbackID string `json:"callback_id"`
	ToolUseID  string `json:"tool_use_id"`
	Input      struct {
		SessionID      string          `json:"session_id"`
		TranscriptPath string          `json:"transcript_path"`
		Cwd            string          `json:"cwd"`
		PermissionMode string          `json:"permission_mode"`
		HookEventName  string          `json:"hook_event_name"`
		ToolName       string          `json:"tool_name"`
		ToolInput      json.RawMessage `json:"tool_input"`
		ToolUseID      string          `json:"tool_use_id"`
		StopHookActive bool            `json:"stop_hook_active"`
	} `json:"input"`
}

// hookCallback answers a hook_callback with the hook's output. An empty
// object lets the CLI go on as it would have.
func (s *Session) hookCallback(c ControlRequest) (map[string]any, error) {
	var h hookInput
	if err := json.Unmarshal(c.Request, &h); err != nil {
		return nil, fmt.Errorf("hook_callback: %w", err)
	}
	switch h.CallbackID {
	case hookPreToolUse:
		return s.preToolUse(c.ID, h), nil
	case hookStop:
		s.emit(driver.Event{Type: driver.EventAgentStop, AgentStop: &driver.AgentStop{SessionID: h.Input.SessionID,
			TranscriptPath: h.Input.TranscriptPath, Cwd: h.Input.Cwd, PermissionMode: h.Input.PermissionMode,
			StopHookActive: h.Input.StopHookActive}})
		return map[string]any{}, nil
	}
	return nil, fmt.Errorf("hook_callback: tai registered no callback %q", h.CallbackID)
}

// preToolUse vetoes a tool call tai's policy refuses outright. Only a deny
// is enforced here; anything else is left to the CLI (and to can_use_tool,
// if the CLI asks).
func (s *Session) preToolUse(reqID string, h hookInput) map[string]any {
	v, ok := s.l.Host.Decider.(Vetoer)
	if !ok {
		return map[string]any{}
	}
	useID := orDefault(h.Input.ToolUseID, h.ToolUseID)
	input := h.Input.ToolInput
	if len(input) == 0 || string(input) == "null" {
		input = json.RawMessage(`{}`)
	}
	s.mu.Lock()
	tc := driver.ToolCall{ID: orDefault(useID, reqID)}
	if known, ok := s.dec.tools[useID]; ok {
		tc = *known
	}
	toolCall(&tc, h.Input.ToolName, input)
	tc.Status = "pending"
	id, ctx := s.id, s.turnCtx
	s.mu.Unlock()

	req := driver.PermissionRequest{ID: reqID, Session: id, ToolCall: tc, Options: permOptions}
	d, veto := v.Veto(ctx, req)
	if !veto {
		return map[string]any{}
	}
	if d.RequestID == "" {
		d.RequestID = req.ID
	}
	if d.ToolCallID == "" {
		d.ToolCallID = tc.ID
	}
	// The CLI lists the call again in result.permission_denials: it is
	// this decision, not a second denial.
	s.mu.Lock()
	if useID != "" {
		s.dec.decided[useID] = true
	}
	s.mu.Unlock()
	s.emit(driver.Event{Type: driver.EventPermissionDecided, Decision: &d})
	return map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": denyMessage(d)}}
}

// denyMessage is what the agent (and so the model) is told about a
// denial: the reason and who decided.
func denyMessage(d driver.PermissionDecision) string {
	msg := "tai's policy denied this"
	if d.Reason != "" {
		msg += ": " + d.Reason
	}
	if d.DecidedBy != "" {
		msg += " (decided by " + string(d.DecidedBy) + ")"
	}
	return msg
}

// writeRecorder is the host service that records a file the agent wrote
// with its own tools: confined to the workspace and hashed there, like the
// writes tai makes for ACP agents (host.Services).
type writeRecorder interface {
	RecordWrite(ctx context.Context, path string, created bool) error
}

// recordWrites reports the files the agent's own tools wrote, as they are
// right after the tool's result. Files outside the workspace are not
// reported (tai's floor denies writing there); a path that no longer exists
// (a codex delete) wrote nothing.
func (s *Session) recordWrites(ws []Written) {
	rec, ok := s.l.Host.Files.(writeRecorder)
	if !ok || s.l.Cwd == "" {
		return
	}
	for _, w := range ws {
		p := w.Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(s.l.Cwd, p)
		}
		if err := rec.RecordWrite(context.Background(), p, w.Created); err != nil {
			s.log.Debug("the agent's write is not reported", "path", p, "err", err)
		}
	}
}
