package streamjson

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/tai-dev/tai/driver"
)

func (d *decoder) cursorTool(subtype string, l *claudeLine, f *Frame) {
	for key, raw := range l.ToolCall {
		var tc struct {
			Args   json.RawMessage `json:"args"`
			Result json.RawMessage `json:"result"`
		}
		_ = json.Unmarshal(raw, &tc)
		name := strings.TrimSuffix(key, "ToolCall")
		d.upsert(f, l.CallID, func(c *driver.ToolCall) {
			toolCall(c, name, tc.Args)
			c.Kind = cursorKind(name)
			c.Status = "in_progress"
			if subtype == "completed" {
				c.Status = "completed"
				if bytes.Contains(tc.Result, []byte(`"error"`)) || bytes.Contains(tc.Result, []byte(`"rejected"`)) {
					c.Status = "failed"
				}
				if len(tc.Result) > 0 {
					c.RawOutput = bytes.Clone(tc.Result)
				}
			}
		})
		return
	}
	f.raw("tool_call/"+subtype, mustJSON(l))
}

func cursorKind(name string) driver.ToolKind {
	switch name {
	case "read", "ls":
		return driver.KindRead
	case "write", "edit", "delete":
		return driver.KindEdit
	case "shell":
		return driver.KindExecute
	case "grep", "glob":
		return driver.KindSearch
	}
	return toolKind(name)
}
