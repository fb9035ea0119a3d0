package streamjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/tai-dev/tai/driver"
)

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

// claudeDecoder decodes Claude Code's format, which qwen, cursor and amp
// share, keeping what only it needs: the message ids whose text arrived
// as stream_event deltas (so the complete assistant block is not emitted
// twice), and the cumulative cost and tokens at the last result, from
// which each turn's are computed.
type claudeDecoder struct {
	*decoder
	streamed   map[string]bool
	lastCost   float64
	lastTokens map[string][2]int64
	// rejected is the rate_limit_info of the last rate_limit_event that
	// said "rejected" (nil once one allows again): a turn that then ends
	// on an error ended on that limit, which says when it resets.
	rejected json.RawMessage
}

func newClaude(d *decoder) lineDecoder {
	return &claudeDecoder{decoder: d, streamed: map[string]bool{}, lastTokens: map[string][2]int64{}}
}

func (d *claudeDecoder) decode(line []byte, typ, subtype string, f *Frame) {
	var l claudeLine
	_ = json.Unmarshal(line, &l)
	switch typ {
	case "system":
		d.claudeSystem(line, subtype, &l, f)
	case "assistant":
		d.assistant(&l, f)
	case "user":
		d.user(&l, f)
	case "stream_event":
		d.streamEvent(&l, f)
	case "tool_call": // cursor
		d.cursorTool(subtype, &l, f)
	case "result":
		d.result(line, f)
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
	case "rate_limit_event":
		d.rateLimitEvent(line)
		f.raw(typ, line)
	default:
		f.raw(typ, line)
	}
}

// rateLimitEvent keeps a rejected rate_limit_info for the turn's result.
func (d *claudeDecoder) rateLimitEvent(line []byte) {
	var ev struct {
		Info json.RawMessage `json:"rate_limit_info"`
	}
	_ = json.Unmarshal(line, &ev)
	var info struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(ev.Info, &info)
	switch info.Status {
	case "rejected":
		d.rejected = bytes.Clone(ev.Info)
	case "allowed", "allowed_warning":
		d.rejected = nil
	}
}

// assistant is a complete assistant message: text and thinking (unless
// they came as deltas already), tool uses, or Claude's synthetic message
// for a failed API call.
func (d *claudeDecoder) assistant(l *claudeLine, f *Frame) {
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
}

// user is a user message: the results of tool uses (a plain text is our
// own prompt echoed, or a synthetic note).
func (d *claudeDecoder) user(l *claudeLine, f *Frame) {
	var m struct {
		Content json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(l.Message, &m)
	var blocks []block
	if json.Unmarshal(m.Content, &blocks) != nil {
		return
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
}

// streamEvent is a partial message's SSE event: text and thinking deltas
// are chunks; the other events are framing, and the complete blocks follow.
func (d *claudeDecoder) streamEvent(l *claudeLine, f *Frame) {
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
	if ev.Type != "content_block_delta" {
		return
	}
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

// result ends the turn, with its usage.
func (d *claudeDecoder) result(line []byte, f *Frame) {
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
}

func (d *claudeDecoder) claudeSystem(line []byte, subtype string, l *claudeLine, f *Frame) {
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

func (d *claudeDecoder) claudeResult(line []byte, f *Frame) *Result {
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
	if res.IsError {
		res.RateLimit = d.rejected
	}

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

func (d *claudeDecoder) noteCumulative(m map[string]modelUsage) {
	for k, mu := range m {
		d.lastTokens[k] = [2]int64{mu.InputTokens + mu.CacheReadInputTokens + mu.CacheCreationInputTokens, mu.OutputTokens}
	}
}

func (d *claudeDecoder) deltaUsage(m map[string]modelUsage) *driver.Usage {
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
