package acpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/elicit"
	"github.com/tai-dev/tai/protocol/acp"
)

// elicitor is the inner agent's elicitations put to the editor with
// elicitation/create, in the modes the editor advertised; nil when it
// advertised none. A call withdrawn (another channel answered first) is
// cancelled with $/cancel_request, as asks are.
func (ss *session) elicitor() elicit.Answerer {
	c := ss.srv.clientElicitation()
	if c.Form == nil && c.Url == nil {
		return nil
	}
	return editorElicitor{ss: ss, form: c.Form != nil, url: c.Url != nil}
}

func (s *Server) clientElicitation() acp.ElicitationCapabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clientCaps.Elicitation
}

type editorElicitor struct {
	ss        *session
	form, url bool
}

// Offers says whether the editor shows elicitations of this mode.
func (e editorElicitor) Offers(m driver.ElicitMode) bool {
	return m == driver.ElicitForm && e.form || m == driver.ElicitURL && e.url
}

// Answer implements elicit.Answerer: a mode the editor lacks passes.
func (e editorElicitor) Answer(ctx context.Context, req driver.ElicitationRequest) (driver.ElicitationAnswer, error) {
	ss := e.ss
	scope := acp.ElicitationScope{SessionId: ss.id, ToolCallId: req.ToolCallID}
	var params acp.CreateElicitationRequest
	switch {
	case req.Mode == driver.ElicitForm && e.form:
		params.Form = &acp.FormElicitation{ElicitationScope: scope, Message: req.Message, RequestedSchema: requestedSchema(req.Fields)}
	case req.Mode == driver.ElicitURL && e.url:
		params.Url = &acp.UrlElicitation{ElicitationScope: scope, Message: req.Message, ElicitationId: req.ElicitationID, Url: req.URL}
	default:
		return driver.ElicitationAnswer{}, elicit.ErrPass
	}
	var res acp.CreateElicitationResponse
	if err := ss.srv.conn.Call(ctx, acp.MethodElicitationCreate, params, &res); err != nil {
		return driver.ElicitationAnswer{}, fmt.Errorf("asking the editor: %w", err)
	}
	ans := driver.ElicitationAnswer{DecidedBy: elicit.ByHuman, Via: string(ask.ViaEditor), Reason: "answered in the editor (ACP elicitation/create)"}
	switch {
	case res.Accept != nil:
		ans.Action, ans.Content = driver.ElicitAccept, res.Accept.Content
	case res.Decline != nil:
		ans.Action = driver.ElicitDecline
	case res.Cancel != nil:
		ans.Action = driver.ElicitCancel
	default:
		return driver.ElicitationAnswer{}, fmt.Errorf("the editor answered elicitation/create with action %q", res.Kind())
	}
	return ans, nil
}

// requestedSchema is the form's fields as ACP's restricted JSON Schema.
func requestedSchema(fields []driver.ElicitField) acp.ElicitationSchema {
	sc := acp.ElicitationSchema{Type: "object", Properties: map[string]json.RawMessage{}}
	for _, f := range fields {
		p := map[string]any{"type": f.Type}
		set := func(k string, v any, ok bool) {
			if ok {
				p[k] = v
			}
		}
		set("title", f.Title, f.Title != "")
		set("description", f.Description, f.Description != "")
		set("default", f.Default, f.Default != nil)
		set("format", f.Format, f.Format != "")
		set("pattern", f.Pattern, f.Pattern != "")
		set("minLength", f.MinLength, f.MinLength != nil)
		set("maxLength", f.MaxLength, f.MaxLength != nil)
		set("minimum", f.Minimum, f.Minimum != nil)
		set("maximum", f.Maximum, f.Maximum != nil)
		set("writeOnly", true, f.Secret)
		if len(f.Enum) > 0 {
			var titled []map[string]string
			if len(f.EnumNames) == len(f.Enum) {
				for i, v := range f.Enum {
					titled = append(titled, map[string]string{"const": v, "title": f.EnumNames[i]})
				}
			}
			switch {
			case f.Type == "array" && titled != nil:
				p["items"] = map[string]any{"anyOf": titled}
			case f.Type == "array":
				p["items"] = map[string]any{"type": "string", "enum": f.Enum}
			case titled != nil:
				p["oneOf"] = titled
			default:
				p["enum"] = f.Enum
			}
		}
		b, _ := json.Marshal(p) // plain values: cannot fail
		sc.Properties[f.Name] = b
		if f.Required {
			sc.Required = append(sc.Required, f.Name)
		}
	}
	return sc
}
