package builtin

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/tai-dev/tai/protocol/acp"
)

// ElicitFormStep asks the client to fill in a form (elicitation/create,
// mode form). Schema is the requested schema: properties and required.
type ElicitFormStep struct {
	Message string         `yaml:"message"`
	Schema  map[string]any `yaml:"schema"`
}

// ElicitURLStep asks the client to send the user to URL (mode url); once
// accepted, Complete sends elicitation/complete.
type ElicitURLStep struct {
	Message  string `yaml:"message"`
	URL      string `yaml:"url"`
	Complete bool   `yaml:"complete"`
}

func (s *ElicitFormStep) validate() error {
	if s.Message == "" {
		return fmt.Errorf("message is required")
	}
	props, ok := s.Schema["properties"].(map[string]any)
	if !ok || len(props) == 0 {
		return fmt.Errorf("schema.properties is required: a mapping of field name to its schema")
	}
	return nil
}

func (s *ElicitURLStep) validate() error {
	if s.Message == "" || s.URL == "" {
		return fmt.Errorf("message and url are required")
	}
	return nil
}

// elicitForm plays an elicit_form step and says what came back.
func (t *turn) elicitForm(st *ElicitFormStep) error {
	if t.a.caps().Elicitation.Form == nil {
		return t.say("The client offers no form elicitation; going on without it.\n\n")
	}
	var sc acp.ElicitationSchema
	b, err := json.Marshal(yamlToJSON(st.Schema))
	if err != nil {
		return fmt.Errorf("elicit_form schema: %w", err)
	}
	if err := json.Unmarshal(b, &sc); err != nil {
		return fmt.Errorf("elicit_form schema: %w", err)
	}
	req := acp.CreateElicitationRequest{Form: &acp.FormElicitation{
		ElicitationScope: acp.ElicitationScope{SessionId: t.s.id}, Message: st.Message, RequestedSchema: sc,
	}}
	var resp acp.CreateElicitationResponse
	if err := t.call(acp.MethodElicitationCreate, req, &resp); err != nil {
		if clientError(err) {
			return t.say(fmt.Sprintf("Elicitation failed: %s.\n\n", errText(err)))
		}
		return err
	}
	switch {
	case resp.Accept != nil:
		return t.say(fmt.Sprintf("Elicitation accepted: %s.\n\n", describeContent(resp.Accept.Content, sc)))
	case resp.Decline != nil:
		return t.say("Elicitation declined.\n\n")
	default:
		return t.say("Elicitation cancelled.\n\n")
	}
}

// describeContent lists the answers, hiding secret ones (format password
// or writeOnly) as their length.
func describeContent(c map[string]any, sc acp.ElicitationSchema) string {
	if len(c) == 0 {
		return "no fields"
	}
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		var p struct {
			Format    string `json:"format"`
			WriteOnly bool   `json:"writeOnly"`
		}
		_ = json.Unmarshal(sc.Properties[k], &p)
		v, _ := json.Marshal(c[k])
		if p.Format == "password" || p.WriteOnly {
			v = []byte(fmt.Sprintf("<secret, %d chars>", len(fmt.Sprint(c[k]))))
		}
		parts = append(parts, k+"="+string(v))
	}
	return strings.Join(parts, ", ")
}

func (t *turn) elicitURL(st *ElicitURLStep) error {
	if t.a.caps().Elicitation.Url == nil {
		return t.say("The client offers no URL elicitation; going on without it.\n\n")
	}
	id := t.s.nextID("elicitation")
	req := acp.CreateElicitationRequest{Url: &acp.UrlElicitation{
		ElicitationScope: acp.ElicitationScope{SessionId: t.s.id}, Message: st.Message, ElicitationId: id, Url: st.URL,
	}}
	var resp acp.CreateElicitationResponse
	if err := t.call(acp.MethodElicitationCreate, req, &resp); err != nil {
		if clientError(err) {
			return t.say(fmt.Sprintf("Elicitation failed: %s.\n\n", errText(err)))
		}
		return err
	}
	switch {
	case resp.Accept != nil:
		if st.Complete {
			if err := t.a.conn.Notify(t.ctx, acp.MethodElicitationComplete, acp.CompleteElicitationNotification{ElicitationId: id}); err != nil {
				return err
			}
		}
		return t.say(fmt.Sprintf("URL elicitation %s accepted.\n\n", id))
	case resp.Decline != nil:
		return t.say(fmt.Sprintf("URL elicitation %s declined.\n\n", id))
	default:
		return t.say(fmt.Sprintf("URL elicitation %s cancelled.\n\n", id))
	}
}

// yamlToJSON turns YAML-decoded maps (map[string]any already with yaml.v3)
// into JSON-marshalable values.
func yamlToJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = yamlToJSON(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = yamlToJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = yamlToJSON(e)
		}
		return out
	}
	return v
}
