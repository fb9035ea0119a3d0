package streamjson

import (
	"encoding/json"
	"strings"

	"github.com/tai-dev/tai/driver"
)

// openCodeDecoder decodes opencode run --format json, keeping the sum of
// a turn's steps' usage and whether the session was announced.
type openCodeDecoder struct {
	*decoder
	stepUsage *driver.Usage
	sawInit   bool
}

// openCodeLine is one line of opencode's output.
type openCodeLine struct {
	SessionID string `json:"sessionID"`
	Part      struct {
		ID     string          `json:"id"`
		Text   string          `json:"text"`
		Tool   string          `json:"tool"`
		CallID string          `json:"callID"`
		Reason string          `json:"reason"`
		Cost   float64         `json:"cost"`
		State  json.RawMessage `json:"state"`
		Tokens struct {
			Input     int64 `json:"input"`
			Output    int64 `json:"output"`
			Reasoning int64 `json:"reasoning"`
			Cache     struct {
				Read  int64 `json:"read"`
				Write int64 `json:"write"`
			} `json:"cache"`
		} `json:"tokens"`
	} `json:"part"`
	Error    json.RawMessage `json:"error"`
	Rejected []struct {
		Permission string `json:"permission"`
		Type       string `json:"type"`
		CallID     string `json:"callID"`
		Title      string `json:"title"`
	} `json:"rejected"`
}

func (d *openCodeDecoder) decode(line []byte, typ, _ string, f *Frame) {
	var l openCodeLine
	_ = json.Unmarshal(line, &l)
	if !d.sawInit && l.SessionID != "" {
		d.sawInit = true
		f.Init = &Init{SessionID: l.SessionID}
	}
	switch typ {
	case "step_start":
	case "text":
		f.chunk(driver.RoleAgent, l.Part.ID, l.Part.Text)
	case "reasoning":
		f.chunk(driver.RoleThought, l.Part.ID, l.Part.Text)
	case "tool_use":
		d.toolUse(&l, f)
	case "step_finish":
		d.stepFinish(&l, f)
	case "error":
		msg := contentText(l.Error)
		if msg == "" {
			var e struct {
				Name string `json:"name"`
				Data struct {
					Message string `json:"message"`
				} `json:"data"`
			}
			_ = json.Unmarshal(l.Error, &e)
			msg = strings.TrimSpace(e.Name + ": " + e.Data.Message)
		}
		f.errorEvent("agent_error", msg)
		f.Result = &Result{StopReason: StopError, IsError: true, Subtype: "error", Message: msg}
	case "done":
		for _, r := range l.Rejected {
			d.denied(f, r.CallID, orDefault(r.Permission, r.Type), "auto-rejected by opencode: "+r.Title)
		}
	default:
		f.raw(typ, line)
	}
}

// toolUse upserts a tool call from its state.
func (d *openCodeDecoder) toolUse(l *openCodeLine, f *Frame) {
	var st struct {
		Status string          `json:"status"`
		Input  json.RawMessage `json:"input"`
		Output json.RawMessage `json:"output"`
		Error  json.RawMessage `json:"error"`
		Title  string          `json:"title"`
	}
	_ = json.Unmarshal(l.Part.State, &st)
	defer func() {
		// opencode run cannot ask: a permission set to "ask" is
		// rejected on the spot (and one set to "deny" refused by
		// rule); the tool call fails with that text and the run
		// stops. It is the CLI's own denial.
		if msg := errorText(st.Error); st.Status == "error" && isOpenCodeRejection(msg) {
			d.denied(f, l.Part.CallID, l.Part.Tool, "rejected by opencode: "+msg)
		}
	}()
	d.upsert(f, l.Part.CallID, func(tc *driver.ToolCall) {
		toolCall(tc, l.Part.Tool, st.Input)
		if st.Title != "" {
			tc.Title = l.Part.Tool + ": " + st.Title
		}
		tc.Status = map[string]string{"completed": "completed", "error": "failed", "running": "in_progress"}[st.Status]
		out := st.Output
		if st.Status == "error" {
			out = st.Error
		}
		setOutput(tc, out)
	})
}

// stepFinish adds a step's usage to the turn's; a step that does not end
// in tool calls ends the turn.
func (d *openCodeDecoder) stepFinish(l *openCodeLine, f *Frame) {
	t := l.Part.Tokens
	if d.stepUsage == nil {
		d.stepUsage = &driver.Usage{}
	}
	u := d.stepUsage
	u.InputTokens += t.Input + t.Cache.Read + t.Cache.Write
	u.OutputTokens += t.Output + t.Reasoning
	u.TotalTokens = u.InputTokens + u.OutputTokens
	if l.Part.Cost > 0 {
		u.CostAmount += l.Part.Cost
		u.Currency = "USD"
	}
	if l.Part.Reason != "tool-calls" {
		c := *u
		f.Result = &Result{StopReason: driver.StopEndTurn, Subtype: l.Part.Reason, Usage: &c}
		if l.Part.Reason == "length" {
			f.Result.StopReason = driver.StopMaxTokens
		}
	}
}

// isOpenCodeRejection: the error opencode gives a tool call its
// permission rules refused (1.18: "The user rejected permission to use
// this specific tool call.", "The user has specified a rule which prevents
// you from using this specific tool call.").
func isOpenCodeRejection(msg string) bool {
	return strings.Contains(msg, "rejected permission") || strings.Contains(msg, "specified a rule which prevents")
}
