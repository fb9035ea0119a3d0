package streamjson

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/tai-dev/tai/driver"
)

type codexItem struct {
	ID               string `json:"id"`
	Type             string `json:"type"`
	Text             string `json:"text"`
	Command          string `json:"command"`
	AggregatedOutput string `json:"aggregated_output"`
	ExitCode         *int   `json:"exit_code"`
	Status           string `json:"status"`
	Changes          []struct{ Path, Kind string }
	Server           string          `json:"server"`
	Tool             string          `json:"tool"`
	Arguments        json.RawMessage `json:"arguments"`
	Result           json.RawMessage `json:"result"`
	Error            json.RawMessage `json:"error"`
	Query            string          `json:"query"`
	Message          string          `json:"message"`
	Items            []struct {
		Text      string `json:"text"`
		Completed bool   `json:"completed"`
	} `json:"items"`
}

// codexDecoder decodes codex exec --json, keeping the text of each item
// already emitted (codex sends snapshots, not deltas).
type codexDecoder struct {
	*decoder
	itemText map[string]string
}

func (d *codexDecoder) decode(line []byte, typ, _ string, f *Frame) {
	var l struct {
		ThreadID string    `json:"thread_id"`
		Item     codexItem `json:"item"`
		Usage    *struct {
			InputTokens       int64 `json:"input_tokens"`
			CachedInputTokens int64 `json:"cached_input_tokens"`
			OutputTokens      int64 `json:"output_tokens"`
		} `json:"usage"`
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(line, &l)
	switch typ {
	case "thread.started":
		f.Init = &Init{SessionID: l.ThreadID}
	case "turn.started":
		f.emit(driver.Event{Type: driver.EventStatus, Status: &driver.Status{State: "working"}})
	case "item.started", "item.updated", "item.completed":
		d.codexItem(strings.TrimPrefix(typ, "item."), l.Item, f)
	case "turn.completed":
		res := &Result{StopReason: driver.StopEndTurn, Subtype: "completed"}
		if u := l.Usage; u != nil {
			res.Usage = &driver.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.InputTokens + u.OutputTokens}
		}
		f.Result = res
	case "turn.failed":
		f.Result = &Result{StopReason: StopError, IsError: true, Subtype: "failed", Message: l.Error.Message}
	case "error":
		f.errorEvent("agent_error", l.Message)
	default:
		f.raw(typ, line)
	}
}

func (d *codexDecoder) codexItem(phase string, it codexItem, f *Frame) {
	status := map[string]string{"started": "in_progress", "updated": "in_progress", "completed": "completed"}[phase]
	switch it.Type {
	case "agent_message", "reasoning":
		role := driver.RoleAgent
		if it.Type == "reasoning" {
			role = driver.RoleThought
		}
		// Snapshots: emit what is new since the last one.
		prev := d.itemText[it.ID]
		if strings.HasPrefix(it.Text, prev) {
			f.chunk(role, it.ID, it.Text[len(prev):])
		} else {
			f.chunk(role, it.ID, it.Text)
		}
		d.itemText[it.ID] = it.Text
	case "command_execution":
		d.upsert(f, it.ID, func(tc *driver.ToolCall) {
			input, _ := json.Marshal(map[string]string{"command": it.Command})
			toolCall(tc, "command_execution", input)
			tc.Status = status
			if it.Status == "failed" || (it.ExitCode != nil && *it.ExitCode != 0 && phase == "completed") {
				tc.Status = "failed"
			}
			if it.AggregatedOutput != "" {
				tc.Content = []driver.ToolContent{{Type: "text", Text: it.AggregatedOutput}}
			}
		})
	case "file_change":
		d.upsert(f, it.ID, func(tc *driver.ToolCall) {
			input, _ := json.Marshal(map[string]any{"changes": it.Changes})
			toolCall(tc, "file_change", input)
			tc.Locations = nil
			for _, c := range it.Changes {
				tc.Locations = append(tc.Locations, driver.Location{Path: c.Path})
				if c.Kind == "add" {
					d.created[it.ID+"\x00"+c.Path] = true
				}
			}
			if len(it.Changes) > 0 {
				tc.Title = "file_change: " + it.Changes[0].Path
			}
			tc.Status = status
			if it.Status == "failed" {
				tc.Status = "failed"
			}
		})
	case "mcp_tool_call":
		d.upsert(f, it.ID, func(tc *driver.ToolCall) {
			toolCall(tc, it.Server+"/"+it.Tool, it.Arguments)
			tc.Status = status
			if it.Status == "failed" || present(it.Error) {
				tc.Status = "failed"
			}
			if present(it.Result) {
				tc.RawOutput = bytes.Clone(it.Result)
			}
		})
	case "web_search":
		d.upsert(f, it.ID, func(tc *driver.ToolCall) {
			input, _ := json.Marshal(map[string]string{"query": it.Query})
			toolCall(tc, "web_search", input)
			tc.Status = status
		})
	case "todo_list":
		p := &driver.Plan{Entries: []driver.PlanEntry{}}
		for _, x := range it.Items {
			st := "pending"
			if x.Completed {
				st = "completed"
			}
			p.Entries = append(p.Entries, driver.PlanEntry{Content: x.Text, Status: st})
		}
		f.emit(driver.Event{Type: driver.EventPlan, Plan: p})
	case "error":
		f.errorEvent("agent_error", it.Message)
	default:
		f.raw("item/"+it.Type, mustJSON(it))
	}
}

// ---- OpenCode run --format json ----
