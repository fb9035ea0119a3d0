package streamjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/tai-dev/tai/driver"
)

// StopError is the stop reason of a turn that ended in an error (an API
// error, an error_* result); the turn's error says why.
const StopError = "error"

// Frame is what one line of the agent's output meant: events for tai's
// model, plus the signals the session acts on. Most lines set one field.
type Frame struct {
	Events []driver.Event
	// Init: the agent reported its session (system/init, init,
	// thread.started, the first sessionID).
	Init *Init
	// Mode: the agent confirmed its permission mode.
	Mode string
	// Result: the turn ended.
	Result *Result
	// Control: the agent asks tai something (can_use_tool, ...).
	Control *ControlRequest
	// CancelID: the agent withdrew its control request of that id.
	CancelID string
	// Response: the agent answered a control request of tai's.
	Response *ControlResponse
	// Wrote: files a tool call of the agent's wrote, reported once its
	// result came back without an error. Paths are as the agent gave them
	// (possibly relative to its cwd); the session confines and hashes them.
	Wrote []Written
}

// Written is a file an agent's own tool wrote.
type Written struct {
	Path string `json:"path"`
	// Created: the agent said the file is new (Claude's tool_use_result
	// type "create", codex's change kind "add").
	Created bool `json:"created,omitempty"`
}

// Init is what an agent says about its session.
type Init struct {
	SessionID string
	Model     string
	Mode      string
	Version   string
}

// Result is how a turn ended, as the agent reported it. IsError is the
// truth: Claude reports API errors with subtype "success".
type Result struct {
	StopReason     string // tai's stop reason
	IsError        bool
	Subtype        string
	TerminalReason string
	Message        string
	APIErrorStatus int
	// Usage is this turn's, computed from the agent's cumulative figures
	// where it reports them.
	Usage *driver.Usage
	// SessionCost is the session's cumulative cost (USD), 0 if unknown.
	SessionCost float64
}

// ControlRequest is a request from the agent.
type ControlRequest struct {
	ID      string
	Subtype string
	Request json.RawMessage
}

// ControlResponse answers one of tai's control requests.
type ControlResponse struct {
	ID       string
	OK       bool
	Response json.RawMessage
	Error    string
}

// decoder turns a dialect's lines into Frames. It keeps the state upserts
// need (tool calls by id) and the cumulative usage figures turns are
// computed from. It is not safe for concurrent use.
type decoder struct {
	dialect string
	tools   map[string]*driver.ToolCall
	decided map[string]bool // tool_use ids whose permission tai decided (or a denial was reported)
	// streamed: message ids whose text arrived as stream_event deltas, so
	// the complete assistant block is not emitted twice.
	streamed map[string]bool
	// per-item text already emitted (codex snapshots).
	itemText map[string]string
	// cumulative figures at the last result.
	lastCost   float64
	lastTokens map[string][2]int64
	// opencode sums a turn's steps.
	stepUsage *driver.Usage
	sawInit   bool
	// wrote: tool call ids whose writes were reported; created: the
	// tool id and path (joined by NUL) of files the agent said it created.
	wrote   map[string]bool
	created map[string]bool
	// A child tai's permission.asked frames, until their decisions come.
	childAsked []driver.Event
}

func newDecoder(dialect string) *decoder {
	return &decoder{dialect: dialect, tools: map[string]*driver.ToolCall{}, decided: map[string]bool{},
		streamed: map[string]bool{}, itemText: map[string]string{}, lastTokens: map[string][2]int64{},
		wrote: map[string]bool{}, created: map[string]bool{}}
}

// DecodeLine decodes one line of dialect's output with a fresh decoder. It
// never fails: unknown types and lines that are not JSON come back as raw
// events.
func DecodeLine(dialect string, line []byte) Frame {
	return newDecoder(dialect).decode(line)
}

// decode decodes one line.
func (d *decoder) decode(line []byte) (f Frame) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return f
	}
	var head struct {
		Type    string `json:"type"`
		Subtype string `json:"subtype"`
	}
	if line[0] != '{' || json.Unmarshal(line, &head) != nil {
		text, _ := json.Marshal(string(line))
		f.raw("text", text)
		return f
	}
	switch d.dialect {
	case DialectGemini:
		d.gemini(line, head.Type, &f)
	case DialectCodex:
		d.codex(line, head.Type, &f)
	case DialectOpenCode:
		d.opencode(line, head.Type, &f)
	case DialectTai:
		d.tai(line, head.Type, &f)
	default:
		d.claude(line, head.Type, head.Subtype, &f)
	}
	return f
}

func (f *Frame) emit(ev driver.Event) { f.Events = append(f.Events, ev) }

func (f *Frame) raw(kind string, data []byte) {
	f.emit(driver.Event{Type: driver.EventRaw, Raw: &driver.RawUpdate{Kind: driver.RawKind(kind), Data: json.RawMessage(bytes.Clone(data))}})
}

func (f *Frame) chunk(role driver.Role, id, text string) {
	if text == "" {
		return
	}
	f.emit(driver.Event{Type: driver.EventMessage, Message: &driver.MessageChunk{Role: role, MessageID: id, Text: text}})
}

func (f *Frame) errorEvent(code, msg string) {
	f.emit(driver.Event{Type: driver.EventError, Error: &driver.ErrorInfo{Code: code, Message: msg}})
}

// denied records a denial the agent made or reports (not one tai decided):
// it counts like tai's own, so a run with one exits 5.
func (d *decoder) denied(f *Frame, toolUseID, tool, reason string) {
	if toolUseID != "" && d.decided[toolUseID] {
		return
	}
	if toolUseID != "" {
		d.decided[toolUseID] = true
	}
	dec := &driver.PermissionDecision{RequestID: toolUseID, ToolCallID: toolUseID, Title: tool, Outcome: driver.OutcomeSelected,
		Verdict: driver.VerdictDeny, DecidedBy: "agent", Reason: reason}
	if tc, ok := d.tools[toolUseID]; ok {
		dec.Title, dec.ToolKind = tc.Title, tc.Kind
	} else {
		dec.ToolKind = toolKind(tool)
	}
	f.emit(driver.Event{Type: driver.EventPermissionDecided, Decision: dec})
}

// upsert applies a change to the tool call id and emits its full state.
func (d *decoder) upsert(f *Frame, id string, change func(*driver.ToolCall)) {
	tc, ok := d.tools[id]
	if !ok {
		tc = &driver.ToolCall{ID: id, Kind: driver.KindOther}
		d.tools[id] = tc
	}
	change(tc)
	c := *tc
	c.Locations = append([]driver.Location(nil), tc.Locations...)
	c.Content = append([]driver.ToolContent(nil), tc.Content...)
	f.emit(driver.Event{Type: driver.EventToolCall, ToolCall: &c})
	// Every dialect's write tools (Write, Edit, write_file, replace, edit,
	// write, file_change...) are of kind edit and name their files as
	// locations; a completed one wrote them. A failed or denied call never
	// gets here, and each call is reported once, however often it is
	// upserted after.
	if c.Status == "completed" && c.Kind == driver.KindEdit && !d.wrote[id] && len(c.Locations) > 0 {
		d.wrote[id] = true
		for _, l := range c.Locations {
			f.Wrote = append(f.Wrote, Written{Path: l.Path, Created: d.created[id+"\x00"+l.Path]})
		}
	}
}

// toolCall fills a tool call's name, kind, title, locations and input.
func toolCall(tc *driver.ToolCall, name string, input json.RawMessage) {
	tc.Name = name
	tc.Kind = toolKind(name)
	if present(input) {
		tc.RawInput = bytes.Clone(input)
	}
	var args map[string]any
	_ = json.Unmarshal(input, &args)
	tc.Locations = nil
	for _, k := range []string{"file_path", "filePath", "absolute_path", "notebook_path", "path"} {
		if p, ok := args[k].(string); ok && p != "" {
			tc.Locations = append(tc.Locations, driver.Location{Path: p})
			break
		}
	}
	tc.Title = name
	for _, k := range []string{"command", "cmd", "file_path", "filePath", "absolute_path", "path", "pattern", "url", "query", "description"} {
		if v, ok := args[k].(string); ok && v != "" {
			tc.Title = name + ": " + firstLine(v)
			break
		}
	}
}

// present: a JSON value that says something (not absent, not null).
func present(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// setOutput records a tool's output: raw, and as text content when it
// reads as text.
func setOutput(tc *driver.ToolCall, out json.RawMessage) {
	if !present(out) {
		return
	}
	tc.RawOutput = bytes.Clone(out)
	if text := contentText(out); text != "" {
		tc.Content = []driver.ToolContent{{Type: "text", Text: text}}
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// toolKind maps tool names of every dialect onto tai's kinds.
func toolKind(name string) driver.ToolKind {
	switch strings.ToLower(name) {
	case "read", "read_file", "read_many_files", "view", "notebookread", "ls", "list_directory", "list":
		return driver.KindRead
	case "write", "edit", "multiedit", "notebookedit", "write_file", "replace", "edit_file", "create", "create_file", "apply_patch", "patch", "file_change":
		return driver.KindEdit
	case "bash", "run_shell_command", "shell", "exec_command", "command_execution", "killshell", "bashoutput":
		return driver.KindExecute
	case "glob", "grep", "search_file_content", "grep_search", "codebase_search", "find":
		return driver.KindSearch
	case "webfetch", "websearch", "web_fetch", "google_web_search", "web_search", "fetch":
		return driver.KindFetch
	case "exitplanmode", "exit_plan_mode", "enterplanmode":
		return driver.KindSwitchMode
	case "todowrite", "todo_write", "think":
		return driver.KindThink
	}
	return driver.KindOther
}

// ---- Claude envelope: claude, qwen, amp, cursor ----

type claudeLine struct {
	SessionID string          `json:"session_id"`
	Message   json.RawMessage `json:"message"`
	Event     json.RawMessage `json:"event"`
	Error     json.RawMessage `json:"error"`
	// system
	Model          string `json:"model"`
	PermissionMode string `json:"permissionMode"`
	PermissionSnk  string `json:"permission_mode"` // qwen
	Version        string `json:"claude_code_version"`
	QwenVersion    string `json:"qwen_code_version"`
	Status         any    `json:"status"`
	ToolName       string `json:"tool_name"`
	ToolUseID      string `json:"tool_use_id"`
	Msg            string `json:"message_text"`
	Attempt        int    `json:"attempt"`
	ErrorStatus    any    `json:"error_status"`
	APIMessageID   string `json:"api_message_id"`
	// user
	ToolUseResult json.RawMessage `json:"tool_use_result"`
	// control
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
	Response  struct {
		Subtype   string          `json:"subtype"`
		RequestID string          `json:"request_id"`
		Response  json.RawMessage `json:"response"`
		Error     string          `json:"error"`
	} `json:"response"`
	// cursor tool_call
	CallID   string                     `json:"call_id"`
	ToolCall map[string]json.RawMessage `json:"tool_call"`
}

type anthropicMessage struct {
	ID      string  `json:"id"`
	Model   string  `json:"model"`
	Content []block `json:"content"`
}

// block is an Anthropic content block.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func (d *decoder) claude(line []byte, typ, subtype string, f *Frame) {
	var l claudeLine
	_ = json.Unmarshal(line, &l)
	switch typ {
	case "system":
		d.claudeSystem(line, subtype, &l, f)
	case "assistant":
		var m anthropicMessage
		_ = json.Unmarshal(l.Message, &m)
		var apiErr string
		_ = json.Unmarshal(l.Error, &apiErr)
		for _, b := range m.Content {
			switch b.Type {
			case "text":
				if apiErr != "" || m.Model == "<synthetic>" && strings.HasPrefix(b.Text, "API Error") {
					// Claude's synthetic message for a failed API call:
					// an error, not the agent speaking.
					f.errorEvent("api_error", b.Text)
					continue
				}
				if !d.streamed[m.ID] {
					f.chunk(driver.RoleAgent, m.ID, b.Text)
				}
			case "thinking":
				if !d.streamed[m.ID] {
					f.chunk(driver.RoleThought, m.ID, b.Thinking)
				}
			case "tool_use", "server_tool_use":
				d.upsert(f, b.ID, func(tc *driver.ToolCall) {
					toolCall(tc, b.Name, b.Input)
					tc.Status = "pending"
				})
			default:
				f.raw("assistant/"+b.Type, mustJSON(b))
			}
		}
	case "user":
		var m struct {
			Content json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(l.Message, &m)
		var blocks []block
		if json.Unmarshal(m.Content, &blocks) != nil {
			return // a plain user text (our own prompt echoed, a synthetic note)
		}
		var res struct {
			Type     string `json:"type"`
			FilePath string `json:"filePath"`
		}
		_ = json.Unmarshal(l.ToolUseResult, &res)
		for _, b := range blocks {
			if b.Type != "tool_result" {
				continue
			}
			if res.Type == "create" && res.FilePath != "" && !b.IsError {
				d.created[b.ToolUseID+"\x00"+res.FilePath] = true
			}
			d.upsert(f, b.ToolUseID, func(tc *driver.ToolCall) {
				tc.Status = "completed"
				if b.IsError {
					tc.Status = "failed"
				}
				if text := contentText(b.Content); text != "" {
					tc.Content = []driver.ToolContent{{Type: "text", Text: text}}
				}
				if present(l.ToolUseResult) {
					tc.RawOutput = bytes.Clone(l.ToolUseResult)
				} else if len(b.Content) > 0 {
					tc.RawOutput = bytes.Clone(b.Content)
				}
			})
		}
	case "stream_event":
		var ev struct {
			Type    string `json:"type"`
			Message struct {
				ID string `json:"id"`
			} `json:"message"`
			Delta struct {
				Type     string `json:"type"`
				Text     string `json:"text"`
				Thinking string `json:"thinking"`
			} `json:"delta"`
		}
		_ = json.Unmarshal(l.Event, &ev)
		if ev.Type == "content_block_delta" {
			id := l.APIMessageID
			switch ev.Delta.Type {
			case "text_delta":
				d.streamed[id] = id != ""
				f.chunk(driver.RoleAgent, id, ev.Delta.Text)
			case "thinking_delta":
				d.streamed[id] = id != ""
				f.chunk(driver.RoleThought, id, ev.Delta.Thinking)
			}
		}
		// The other SSE events are framing; the complete blocks follow.
	case "tool_call": // cursor
		d.cursorTool(subtype, &l, f)
	case "result":
		f.Result = d.claudeResult(line, f)
		if r := f.Result; r.Usage != nil || r.SessionCost > 0 {
			u := &driver.Usage{}
			if r.SessionCost > 0 {
				u.CostAmount, u.Currency = r.SessionCost, "USD"
			}
			if r.Usage != nil {
				u.InputTokens, u.OutputTokens, u.TotalTokens = r.Usage.InputTokens, r.Usage.OutputTokens, r.Usage.TotalTokens
			}
			f.emit(driver.Event{Type: driver.EventUsage, Usage: u})
		}
	case "control_request":
		var r struct {
			Subtype string `json:"subtype"`
		}
		_ = json.Unmarshal(l.Request, &r)
		f.Control = &ControlRequest{ID: l.RequestID, Subtype: r.Subtype, Request: bytes.Clone(l.Request)}
	case "control_response":
		f.Response = &ControlResponse{ID: l.Response.RequestID, OK: l.Response.Subtype == "success",
			Response: bytes.Clone(l.Response.Response), Error: l.Response.Error}
	case "control_cancel_request":
		f.CancelID = l.RequestID
	case "keep_alive":
	default:
		f.raw(typ, line)
	}
}

func (d *decoder) claudeSystem(line []byte, subtype string, l *claudeLine, f *Frame) {
	mode := l.PermissionMode
	if mode == "" {
		mode = l.PermissionSnk
	}
	switch subtype {
	case "init":
		v := l.Version
		if v == "" {
			v = l.QwenVersion
		}
		f.Init = &Init{SessionID: l.SessionID, Model: l.Model, Mode: mode, Version: v}
		f.Mode = mode
	case "status":
		f.Mode = mode
		if s, ok := l.Status.(string); ok && s != "" {
			f.emit(driver.Event{Type: driver.EventStatus, Status: &driver.Status{State: "working"}})
		}
	case "api_retry":
		var r struct {
			Attempt    int    `json:"attempt"`
			MaxRetries int    `json:"max_retries"`
			Error      string `json:"error"`
		}
		_ = json.Unmarshal(line, &r)
		f.errorEvent("api_retry", fmt.Sprintf("API request failed (%s); retry %d of %d", r.Error, r.Attempt, r.MaxRetries))
	case "permission_denied":
		var r struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(line, &r)
		d.denied(f, l.ToolUseID, l.ToolName, r.Message)
	default:
		f.raw("system/"+subtype, line)
	}
}

type modelUsage struct {
	InputTokens              int64   `json:"inputTokens"`
	OutputTokens             int64   `json:"outputTokens"`
	CacheReadInputTokens     int64   `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int64   `json:"cacheCreationInputTokens"`
	CostUSD                  float64 `json:"costUSD"`
}

func (d *decoder) claudeResult(line []byte, f *Frame) *Result {
	var r struct {
		Subtype        string          `json:"subtype"`
		IsError        bool            `json:"is_error"`
		Result         string          `json:"result"`
		StopReason     string          `json:"stop_reason"`
		TerminalReason string          `json:"terminal_reason"`
		TotalCostUSD   float64         `json:"total_cost_usd"`
		APIErrorStatus *int            `json:"api_error_status"`
		Errors         []string        `json:"errors"`
		Error          json.RawMessage `json:"error"`
		Usage          *struct {
			InputTokens              int64 `json:"input_tokens"`
			OutputTokens             int64 `json:"output_tokens"`
			CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
			CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
			TotalTokens              int64 `json:"total_tokens"`
		} `json:"usage"`
		ModelUsage map[string]modelUsage `json:"modelUsage"`
		SinceLast  map[string]modelUsage `json:"model_usage_since_last_result"`
		Denials    []struct {
			ToolName  string `json:"tool_name"`
			ToolUseID string `json:"tool_use_id"`
		} `json:"permission_denials"`
	}
	_ = json.Unmarshal(line, &r)
	res := &Result{IsError: r.IsError, Subtype: r.Subtype, TerminalReason: r.TerminalReason, Message: r.Result, SessionCost: r.TotalCostUSD}
	if r.APIErrorStatus != nil {
		res.APIErrorStatus = *r.APIErrorStatus
	}
	if res.IsError && len(r.Errors) > 0 {
		res.Message = strings.Join(r.Errors, "; ")
	}
	if msg := errorText(r.Error); msg != "" {
		res.Message = msg
	}
	if strings.HasPrefix(r.Subtype, "error") && !r.IsError {
		res.IsError = true // an error_* subtype is never a success
	}
	res.StopReason = claudeStop(r.Subtype, r.TerminalReason, r.StopReason, res.IsError)

	// Per-turn usage: the CLI's own per-result figures when it has them,
	// else the difference of its cumulative ones, else the turn's main
	// loop usage.
	switch {
	case len(r.SinceLast) > 0:
		res.Usage = sumUsage(r.SinceLast)
		d.noteCumulative(r.ModelUsage)
	case len(r.ModelUsage) > 0:
		res.Usage = d.deltaUsage(r.ModelUsage)
	case r.Usage != nil:
		in := r.Usage.InputTokens + r.Usage.CacheReadInputTokens + r.Usage.CacheCreationInputTokens
		res.Usage = &driver.Usage{InputTokens: in, OutputTokens: r.Usage.OutputTokens, TotalTokens: in + r.Usage.OutputTokens}
	}
	if r.TotalCostUSD > 0 && res.Usage != nil {
		res.Usage.CostAmount, res.Usage.Currency = r.TotalCostUSD-d.lastCost, "USD"
		d.lastCost = r.TotalCostUSD
	}
	for _, den := range r.Denials {
		d.denied(f, den.ToolUseID, den.ToolName, "denied by the agent ("+den.ToolName+")")
	}
	return res
}

func claudeStop(subtype, terminal, stop string, isError bool) string {
	switch {
	case subtype == "error_max_turns" || terminal == "max_turns":
		return driver.StopMaxTurnRequests
	case strings.HasPrefix(terminal, "aborted") || terminal == "interrupted" || terminal == "cancelled":
		return driver.StopCancelled
	case isError:
		return StopError
	case stop == "max_tokens":
		return driver.StopMaxTokens
	case stop == "refusal":
		return driver.StopRefusal
	}
	return driver.StopEndTurn
}

func sumUsage(m map[string]modelUsage) *driver.Usage {
	u := &driver.Usage{}
	for _, mu := range m {
		u.InputTokens += mu.InputTokens + mu.CacheReadInputTokens + mu.CacheCreationInputTokens
		u.OutputTokens += mu.OutputTokens
	}
	u.TotalTokens = u.InputTokens + u.OutputTokens
	return u
}

func (d *decoder) noteCumulative(m map[string]modelUsage) {
	for k, mu := range m {
		d.lastTokens[k] = [2]int64{mu.InputTokens + mu.CacheReadInputTokens + mu.CacheCreationInputTokens, mu.OutputTokens}
	}
}

func (d *decoder) deltaUsage(m map[string]modelUsage) *driver.Usage {
	u := &driver.Usage{}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		mu := m[k]
		in := mu.InputTokens + mu.CacheReadInputTokens + mu.CacheCreationInputTokens
		prev := d.lastTokens[k]
		u.InputTokens += in - prev[0]
		u.OutputTokens += mu.OutputTokens - prev[1]
		d.lastTokens[k] = [2]int64{in, mu.OutputTokens}
	}
	u.TotalTokens = u.InputTokens + u.OutputTokens
	return u
}

// contentText is the text of a tool_result's content: a string or blocks.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []block
	if json.Unmarshal(raw, &blocks) == nil {
		var b strings.Builder
		for _, x := range blocks {
			b.WriteString(x.Text)
		}
		return b.String()
	}
	return ""
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// ---- Gemini CLI ----

// errorText is the message of an error given as a string or as
// {type, message}.
func errorText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var e struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(raw, &e)
	return e.Message
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// base is the command's name without directory or extension.
func base(p string) string {
	return strings.TrimSuffix(path.Base(p), ".js")
}
