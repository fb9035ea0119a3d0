package driver

import (
	"context"
	"github.com/tai-dev/tai/internal/lazyre"
	"slices"
)

// ElicitMode is how an elicitation asks: a form of typed fields, or a URL
// the user visits (an OAuth-style flow).
type ElicitMode string

// Elicitation modes.
const (
	ElicitForm ElicitMode = "form"
	ElicitURL  ElicitMode = "url"
)

// ElicitAction is the user's answer to an elicitation.
type ElicitAction string

// Elicitation actions, as ACP names them.
const (
	ElicitAccept  ElicitAction = "accept"
	ElicitDecline ElicitAction = "decline"
	ElicitCancel  ElicitAction = "cancel"
)

// ElicitField is one field of a form: a primitive, an enum or a
// multi-select, with its constraints.
type ElicitField struct {
	Name        string   `json:"name"`
	Title       string   `json:"title,omitempty"`
	Description string   `json:"description,omitempty"`
	Type        string   `json:"type"` // string | number | integer | boolean | array
	Enum        []string `json:"enum,omitempty"`
	EnumNames   []string `json:"enum_names,omitempty"`
	Default     any      `json:"default,omitempty"`
	Required    bool     `json:"required,omitempty"`
	Format      string   `json:"format,omitempty"` // email, uri, date, date-time, password
	MinLength   *int     `json:"min_length,omitempty"`
	MaxLength   *int     `json:"max_length,omitempty"`
	Minimum     *float64 `json:"minimum,omitempty"`
	Maximum     *float64 `json:"maximum,omitempty"`
	Pattern     string   `json:"pattern,omitempty"`
	// Secret: the value is never written to events or the audit log
	// (format password, writeOnly, or a name such as password or token).
	Secret bool `json:"secret,omitempty"`
}

// ElicitationRequest is an agent asking the user for input.
type ElicitationRequest struct {
	ID         string        `json:"id"`
	Session    string        `json:"session,omitempty"`
	ToolCallID string        `json:"tool_call_id,omitempty"`
	Mode       ElicitMode    `json:"mode"`
	Message    string        `json:"message"`
	Fields     []ElicitField `json:"fields,omitempty"`
	// URL mode: where the user goes, and the id elicitation/complete names.
	URL           string `json:"url,omitempty"`
	ElicitationID string `json:"elicitation_id,omitempty"`
}

// Field returns the named field.
func (r ElicitationRequest) Field(name string) (ElicitField, bool) {
	i := slices.IndexFunc(r.Fields, func(f ElicitField) bool { return f.Name == name })
	if i < 0 {
		return ElicitField{}, false
	}
	return r.Fields[i], true
}

// ElicitationAnswer is the answer given, with its provenance.
type ElicitationAnswer struct {
	RequestID string         `json:"request_id"`
	Mode      ElicitMode     `json:"mode"`
	Action    ElicitAction   `json:"action"`
	Content   map[string]any `json:"content,omitempty"`
	// Redacted names the secret fields whose values Content hides.
	Redacted  []string `json:"redacted,omitempty"`
	DecidedBy string   `json:"decided_by"` // rule:<id>, answerer, human, parent, default
	Reason    string   `json:"reason,omitempty"`
	// Via is the channel the answer came by when several raced for it:
	// terminal, dashboard (tai top), feed, parent.
	Via string `json:"via,omitempty"`
}

// RedactedValue replaces a secret field's value in events and the audit log.
const RedactedValue = "[REDACTED]"

// RedactedFor returns a copy of a with the values of req's secret fields
// replaced, for events and the audit log. The agent gets a itself.
func (a ElicitationAnswer) RedactedFor(req ElicitationRequest) ElicitationAnswer {
	if len(a.Content) == 0 {
		return a
	}
	out := a
	out.Content = make(map[string]any, len(a.Content))
	out.Redacted = nil
	for k, v := range a.Content {
		f, ok := req.Field(k)
		if (ok && f.Secret) || SecretName(k) {
			out.Content[k] = RedactedValue
			out.Redacted = append(out.Redacted, k)
			continue
		}
		out.Content[k] = v
	}
	slices.Sort(out.Redacted)
	return out
}

var secretName = lazyre.New(`(?i)(pass(word|phrase)?|secret|token|api[_-]?key|credential|private[_-]?key|otp|pin)`)

// SecretName reports whether a field name says it holds a secret.
func SecretName(name string) bool { return secretName().MatchString(name) }

// ElicitationComplete says a URL elicitation finished out of band.
type ElicitationComplete struct {
	ElicitationID string `json:"elicitation_id"`
}

// Elicitor answers elicitations. Drivers offer elicitation only when the
// host has one; it returns an answer whatever happens (decline when nobody
// can answer), and an error only when the run must stop.
type Elicitor interface {
	Elicit(ctx context.Context, req ElicitationRequest) (ElicitationAnswer, error)
}
