package driver

import "github.com/tai-dev/tai/internal/jsonw"

// WriteJSON writes d as encoding/json does with SetEscapeHTML(false),
// byte for byte, without reflection: the audit log and the frames write
// one or two of these for every permission an agent asks.
func (d *PermissionDecision) WriteJSON(w jsonw.Writer) {
	str := func(name, v string, omitEmpty, first bool) {
		if v == "" && omitEmpty {
			return
		}
		if !first {
			_ = w.WriteByte(',')
		}
		_ = w.WriteByte('"')
		_, _ = w.WriteString(name)
		_, _ = w.WriteString(`":`)
		_ = jsonw.String(w, v)
	}
	_ = w.WriteByte('{')
	str("request_id", d.RequestID, false, true)
	str("tool_call_id", d.ToolCallID, true, false)
	str("title", d.Title, true, false)
	str("tool_kind", string(d.ToolKind), true, false)
	str("outcome", d.Outcome, false, false)
	str("option_id", d.OptionID, true, false)
	str("option_kind", d.OptionKind, true, false)
	str("verdict", d.Verdict, false, false)
	str("decided_by", string(d.DecidedBy), false, false)
	str("reason", d.Reason, true, false)
	str("via", d.Via, true, false)
	if d.Unrequested {
		_, _ = w.WriteString(`,"unrequested":true`)
	}
	_ = w.WriteByte('}')
}
