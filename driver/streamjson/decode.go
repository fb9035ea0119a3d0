package streamjson

import (
	"bytes"
	"encoding/json"
	"path"
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
	// RateLimit is Claude's rate_limit_info that rejected the turn (an
	// error after a rejected rate_limit_event), nil otherwise.
	RateLimit json.RawMessage `json:",omitempty"`
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
	// format is the dialect's own decoder (from the dialect table), which
	// keeps the state only that dialect needs.
	format  lineDecoder
	tools   map[string]*driver.ToolCall
	decided map[string]bool // tool_use ids whose permission tai decided (or a denial was reported)
	// wrote: tool call ids whose writes were reported; created: the
	// tool id and path (joined by NUL) of files the agent said it created.
	wrote   map[string]bool
	created map[string]bool
}

// lineDecoder decodes one JSON line of a dialect's output, its type and
// subtype already read, into f.
type lineDecoder interface {
	decode(line []byte, typ, subtype string, f *Frame)
}

func newDecoder(dialect string) *decoder {
	d := &decoder{tools: map[string]*driver.ToolCall{}, decided: map[string]bool{}, wrote: map[string]bool{}, created: map[string]bool{}}
	format := newClaude
	if dl, ok := LookupDialect(dialect); ok && dl.format != nil {
		format = dl.format
	}
	d.format = format(d)
	return d
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
	d.format.decode(line, head.Type, head.Subtype, &f)
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
