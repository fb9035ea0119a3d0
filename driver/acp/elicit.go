package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/jsonrpc"
	schema "github.com/tai-dev/tai/protocol/acp"
)

// elicit serves elicitation/create: the request goes to the host's
// elicitor, and its answer back to the agent. The events carry the answer
// with secret fields redacted.
func (s *Session) elicit(ctx context.Context, params json.RawMessage) (any, error) {
	var r schema.CreateElicitationRequest
	if err := decode(params, &r); err != nil {
		return nil, err
	}
	id, _ := jsonrpc.RequestID(ctx)
	req := driver.ElicitationRequest{ID: id.String(), Session: s.ID()}
	switch {
	case r.Form != nil:
		req.Mode, req.Message = driver.ElicitForm, r.Form.Message
		req.ToolCallID = r.Form.ToolCallId
		if r.Form.SessionId != "" {
			req.Session = r.Form.SessionId
		}
		fields, err := formFields(r.Form.RequestedSchema)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "elicitation/create: " + err.Error()}
		}
		req.Fields = fields
	case r.Url != nil:
		req.Mode, req.Message, req.URL, req.ElicitationID = driver.ElicitURL, r.Url.Message, r.Url.Url, r.Url.ElicitationId
		req.ToolCallID = r.Url.ToolCallId
		if r.Url.SessionId != "" {
			req.Session = r.Url.SessionId
		}
		if req.URL == "" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "elicitation/create: a url elicitation without a url"}
		}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("elicitation/create: mode %q is not offered (tai offers form and url)", r.Kind())}
	}
	s.emit(driver.Event{Type: driver.EventElicitationAsked, Elicitation: &req})

	// Abandoned with the turn, like a permission request.
	ectx, cancel := withTurn(ctx, s.turn.Load().ctx)
	defer cancel()
	ans, err := s.cfg.Host.Elicitor.Elicit(ectx, req)
	if err != nil {
		s.log.Warn("elicitation failed; answering cancel", "err", err)
		ans = driver.ElicitationAnswer{Action: driver.ElicitCancel, DecidedBy: "cancel", Reason: err.Error()}
	}
	if ectx.Err() != nil && ans.Action == "" {
		ans.Action = driver.ElicitCancel
	}
	ans.RequestID, ans.Mode = req.ID, req.Mode
	shown := ans.RedactedFor(req)
	s.emit(driver.Event{Type: driver.EventElicitationAnswered, ElicitationAnswer: &shown})
	switch ans.Action {
	case driver.ElicitAccept:
		acc := &schema.ElicitationAccepted{}
		if req.Mode == driver.ElicitForm {
			acc.Content = ans.Content
			if acc.Content == nil {
				acc.Content = map[string]any{}
			}
		}
		return schema.CreateElicitationResponse{Accept: acc}, nil
	case driver.ElicitDecline:
		return schema.CreateElicitationResponse{Decline: &schema.ElicitationDeclined{}}, nil
	default:
		return schema.CreateElicitationResponse{Cancel: &schema.ElicitationCancelled{}}, nil
	}
}

// elicitComplete handles elicitation/complete: a URL flow ended.
func (s *Session) elicitComplete(params json.RawMessage) {
	var n schema.CompleteElicitationNotification
	if err := json.Unmarshal(params, &n); err != nil || n.ElicitationId == "" {
		s.log.Warn("bad elicitation/complete", "err", err)
		return
	}
	s.emit(driver.Event{Type: driver.EventElicitationCompleted, ElicitationComplete: &driver.ElicitationComplete{ElicitationID: n.ElicitationId}})
}

// propSchema is the restricted JSON Schema of one form property.
type propSchema struct {
	Type        string   `json:"type"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Enum        []string `json:"enum"`
	EnumNames   []string `json:"enumNames"`
	OneOf       []struct {
		Const string `json:"const"`
		Title string `json:"title"`
	} `json:"oneOf"`
	Items *struct {
		Type  string   `json:"type"`
		Enum  []string `json:"enum"`
		AnyOf []struct {
			Const string `json:"const"`
			Title string `json:"title"`
		} `json:"anyOf"`
	} `json:"items"`
	Default   any      `json:"default"`
	Format    string   `json:"format"`
	MinLength *int     `json:"minLength"`
	MaxLength *int     `json:"maxLength"`
	Minimum   *float64 `json:"minimum"`
	Maximum   *float64 `json:"maximum"`
	Pattern   string   `json:"pattern"`
	WriteOnly bool     `json:"writeOnly"`
}

var fieldTypes = []string{"string", "number", "integer", "boolean", "array"}

// formFields turns a requested schema into fields, sorted by name (JSON
// objects have no order); required ones first.
func formFields(sc schema.ElicitationSchema) ([]driver.ElicitField, error) {
	if sc.Type != "" && sc.Type != "object" {
		return nil, fmt.Errorf("requestedSchema has type %q, not object", sc.Type)
	}
	names := make([]string, 0, len(sc.Properties))
	for n := range sc.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []driver.ElicitField
	for _, n := range names {
		var p propSchema
		if err := json.Unmarshal(sc.Properties[n], &p); err != nil {
			return nil, fmt.Errorf("property %q: %w", n, err)
		}
		if !slices.Contains(fieldTypes, p.Type) {
			return nil, fmt.Errorf("property %q has type %q (a form takes %s)", n, p.Type, strings.Join(fieldTypes, ", "))
		}
		f := driver.ElicitField{Name: n, Title: p.Title, Description: p.Description, Type: p.Type, Default: p.Default,
			Format: p.Format, MinLength: p.MinLength, MaxLength: p.MaxLength, Minimum: p.Minimum, Maximum: p.Maximum,
			Pattern: p.Pattern, Required: slices.Contains(sc.Required, n)}
		f.Enum, f.EnumNames = p.Enum, p.EnumNames
		for _, o := range p.OneOf {
			f.Enum, f.EnumNames = append(f.Enum, o.Const), append(f.EnumNames, o.Title)
		}
		if p.Items != nil {
			f.Enum = append(f.Enum, p.Items.Enum...)
			for _, o := range p.Items.AnyOf {
				f.Enum, f.EnumNames = append(f.Enum, o.Const), append(f.EnumNames, o.Title)
			}
		}
		if len(f.EnumNames) != len(f.Enum) {
			f.EnumNames = nil
		}
		f.Secret = p.Format == "password" || p.WriteOnly || driver.SecretName(n)
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Required && !out[j].Required })
	return out, nil
}
