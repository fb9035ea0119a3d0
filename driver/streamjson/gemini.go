package streamjson

import (
	"encoding/json"

	"github.com/tai-dev/tai/driver"
)

// geminiDecoder decodes gemini --output-format stream-json; it keeps no
// state of its own.
type geminiDecoder struct{ *decoder }

func (d geminiDecoder) decode(line []byte, typ, _ string, f *Frame) {
	var l struct {
		SessionID  string          `json:"session_id"`
		Model      string          `json:"model"`
		Role       string          `json:"role"`
		Content    string          `json:"content"`
		ToolName   string          `json:"tool_name"`
		ToolID     string          `json:"tool_id"`
		Parameters json.RawMessage `json:"parameters"`
		Status     string          `json:"status"`
		Output     json.RawMessage `json:"output"`
		Error      json.RawMessage `json:"error"`
		Severity   string          `json:"severity"`
		Message    string          `json:"message"`
		Stats      struct {
			TotalTokens  int64 `json:"total_tokens"`
			InputTokens  int64 `json:"input_tokens"`
			OutputTokens int64 `json:"output_tokens"`
		} `json:"stats"`
	}
	_ = json.Unmarshal(line, &l)
	switch typ {
	case "init":
		f.Init = &Init{SessionID: l.SessionID, Model: l.Model}
	case "message":
		if l.Role == "assistant" {
			f.chunk(driver.RoleAgent, "", l.Content)
		}
	case "tool_use":
		d.upsert(f, l.ToolID, func(tc *driver.ToolCall) {
			toolCall(tc, l.ToolName, l.Parameters)
			tc.Status = "in_progress"
		})
	case "tool_result":
		d.upsert(f, l.ToolID, func(tc *driver.ToolCall) {
			tc.Status = "completed"
			if l.Status == "error" {
				tc.Status = "failed"
			}
			out := l.Output
			if tc.Status == "failed" && len(l.Error) > 0 {
				out = l.Error
			}
			setOutput(tc, out)
		})
	case "error":
		f.errorEvent("agent_"+orDefault(l.Severity, "error"), l.Message)
	case "result":
		res := &Result{Subtype: l.Status, StopReason: driver.StopEndTurn}
		if l.Status != "success" {
			res.IsError, res.StopReason = true, StopError
			var e struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			}
			if json.Unmarshal(l.Error, &e) == nil {
				res.Message = e.Message
			}
		}
		if l.Stats.TotalTokens > 0 || l.Stats.InputTokens > 0 {
			res.Usage = &driver.Usage{InputTokens: l.Stats.InputTokens, OutputTokens: l.Stats.OutputTokens, TotalTokens: l.Stats.TotalTokens}
		}
		f.Result = res
	default:
		f.raw(typ, line)
	}
}

// ---- Codex exec --json ----
