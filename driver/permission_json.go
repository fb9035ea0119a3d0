package driver

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"

	"github.com/tai-dev/tai/internal/jsonw"
)

// The events every permission writes (to the audit log, the feed, a
// stream-json reader) and the tool calls a flood is made of write their
// own JSON: byte for byte what encoding/json writes with
// SetEscapeHTML(false), without reflection.

// object writes an object's members, each one separated from the one
// before it.
type object struct {
	w     jsonw.Writer
	first bool
}

func openObject(w jsonw.Writer) object {
	_ = w.WriteByte('{')
	return object{w: w, first: true}
}

func (o *object) name(n string) {
	if !o.first {
		_ = o.w.WriteByte(',')
	}
	o.first = false
	_ = o.w.WriteByte('"')
	_, _ = o.w.WriteString(n)
	_, _ = o.w.WriteString(`":`)
}

// str writes a string member; omitEmpty leaves out an empty one.
func (o *object) str(n, v string, omitEmpty bool) {
	if v == "" && omitEmpty {
		return
	}
	o.name(n)
	_ = jsonw.String(o.w, v)
}

// raw writes an omitempty json.RawMessage member, compacted as
// encoding/json does; a value that is not JSON is its error too.
func (o *object) raw(n string, v json.RawMessage) error {
	if len(v) == 0 {
		return nil
	}
	o.name(n)
	if jsonw.Compact(v) {
		_, err := o.w.Write(v)
		return err
	}
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return &json.MarshalerError{Type: rawMessageType, Err: err}
	}
	_, err := o.w.Write(b.Bytes())
	return err
}

func (o *object) close() error { return o.w.WriteByte('}') }

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// WriteJSON writes d as encoding/json does with SetEscapeHTML(false).
func (d *PermissionDecision) WriteJSON(w jsonw.Writer) {
	o := openObject(w)
	o.str("request_id", d.RequestID, false)
	o.str("tool_call_id", d.ToolCallID, true)
	o.str("title", d.Title, true)
	o.str("tool_kind", string(d.ToolKind), true)
	o.str("outcome", d.Outcome, false)
	o.str("option_id", d.OptionID, true)
	o.str("option_kind", d.OptionKind, true)
	o.str("verdict", d.Verdict, false)
	o.str("decided_by", string(d.DecidedBy), false)
	o.str("reason", d.Reason, true)
	o.str("via", d.Via, true)
	if d.Unrequested {
		o.name("unrequested")
		_, _ = w.WriteString("true")
	}
	_ = o.close()
}

// WriteJSON writes r as encoding/json does with SetEscapeHTML(false); it
// fails, as encoding/json does, on a raw input or output that is not JSON.
func (r *PermissionRequest) WriteJSON(w jsonw.Writer) error {
	o := openObject(w)
	o.str("id", r.ID, false)
	o.str("session", r.Session, true)
	o.name("tool_call")
	if err := r.ToolCall.WriteJSON(w); err != nil {
		return err
	}
	o.name("options")
	if r.Options == nil {
		_, _ = w.WriteString("null")
	} else {
		_ = jsonw.Array(w, r.Options, func(op *PermissionOption) error {
			oo := openObject(w)
			oo.str("id", op.ID, false)
			oo.str("name", op.Name, false)
			oo.str("kind", op.Kind, false)
			return oo.close()
		})
	}
	if r.Unrequested {
		o.name("unrequested")
		_, _ = w.WriteString("true")
	}
	return o.close()
}

// WriteJSON writes tc as encoding/json does with SetEscapeHTML(false); it
// fails, as encoding/json does, on a raw value that is not JSON.
func (tc *ToolCall) WriteJSON(w jsonw.Writer) error {
	o := openObject(w)
	o.str("id", tc.ID, false)
	o.str("title", tc.Title, true)
	o.str("kind", string(tc.Kind), true)
	o.str("status", tc.Status, true)
	o.str("name", tc.Name, true)
	if len(tc.Locations) > 0 {
		o.name("locations")
		_ = jsonw.Array(w, tc.Locations, func(l *Location) error {
			lo := openObject(w)
			lo.str("path", l.Path, false)
			if l.Line != 0 {
				lo.name("line")
				_, _ = w.WriteString(strconv.Itoa(l.Line))
			}
			return lo.close()
		})
	}
	if len(tc.Content) > 0 {
		o.name("content")
		err := jsonw.Array(w, tc.Content, func(c *ToolContent) error {
			co := openObject(w)
			co.str("type", c.Type, false)
			co.str("text", c.Text, true)
			co.str("path", c.Path, true)
			if c.OldText != nil {
				co.str("old_text", *c.OldText, false)
			}
			co.str("new_text", c.NewText, true)
			co.str("terminal_id", c.TerminalID, true)
			if err := co.raw("raw", c.Raw); err != nil {
				return err
			}
			return co.close()
		})
		if err != nil {
			return err
		}
	}
	if err := o.raw("raw_input", tc.RawInput); err != nil {
		return err
	}
	if err := o.raw("raw_output", tc.RawOutput); err != nil {
		return err
	}
	return o.close()
}
