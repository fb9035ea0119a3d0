package acp

import "encoding/json"

// Elicitation modes (the "mode" key of elicitation/create).
const (
	ElicitationModeForm = "form"
	ElicitationModeUrl  = "url"
)

// CreateElicitationRequest (elicitation/create) asks the user for input,
// discriminated by "mode". Exactly one field is set; see the package doc.
// A client answers a mode it did not advertise with ErrorInvalidParams.
type CreateElicitationRequest struct {
	Form    *FormElicitation
	Url     *UrlElicitation
	Unknown *UnknownVariant
}

// ElicitationScope ties an elicitation either to a session (optionally a
// tool call) or to an in-flight request. It is flattened into the request.
type ElicitationScope struct {
	SessionId  string `json:"sessionId,omitempty"`
	ToolCallId string `json:"toolCallId,omitempty"`
	// RequestId is a JSON-RPC id (number or string), kept raw.
	RequestId json.RawMessage `json:"requestId,omitempty"`
}

// FormElicitation has the client render a form from RequestedSchema. It must
// not be used to ask for secrets.
type FormElicitation struct {
	ElicitationScope
	Message         string            `json:"message"`
	RequestedSchema ElicitationSchema `json:"requestedSchema"`
	Meta            map[string]any    `json:"_meta,omitempty"`
}

// UrlElicitation sends the user to Url (OAuth-style flows); the agent later
// sends elicitation/complete with the same ElicitationId.
type UrlElicitation struct {
	ElicitationScope
	Message       string         `json:"message"`
	ElicitationId string         `json:"elicitationId"`
	Url           string         `json:"url"`
	Meta          map[string]any `json:"_meta,omitempty"`
}

// ElicitationSchema is the restricted JSON Schema of a form: an object of
// primitive, enum and multi-select properties. Property schemas are kept raw
// since they are a union of their own that only a form renderer interprets.
type ElicitationSchema struct {
	Type        string                     `json:"type"`
	Title       *string                    `json:"title,omitempty"`
	Description *string                    `json:"description,omitempty"`
	Properties  map[string]json.RawMessage `json:"properties,omitempty"`
	Required    []string                   `json:"required,omitempty"`
	Meta        map[string]any             `json:"_meta,omitempty"`
}

// MarshalJSON defaults Type to "object", the only value v1 allows.
func (s ElicitationSchema) MarshalJSON() ([]byte, error) {
	type plain ElicitationSchema
	p := plain(s)
	if p.Type == "" {
		p.Type = "object"
	}
	return Marshal(p)
}

// Kind returns "form", "url", the unknown mode, or "" when empty.
func (r CreateElicitationRequest) Kind() string {
	switch {
	case r.Form != nil:
		return ElicitationModeForm
	case r.Url != nil:
		return ElicitationModeUrl
	case r.Unknown != nil:
		return r.Unknown.Kind
	}
	return ""
}

// MarshalJSON implements json.Marshaler.
func (r CreateElicitationRequest) MarshalJSON() ([]byte, error) {
	switch variantCount(r.Form != nil, r.Url != nil, r.Unknown != nil) {
	case 0:
		return jsonNull, nil
	case 1:
	default:
		return nil, tooMany("CreateElicitationRequest")
	}
	switch {
	case r.Form != nil:
		return withTag("mode", ElicitationModeForm, r.Form)
	case r.Url != nil:
		return withTag("mode", ElicitationModeUrl, r.Url)
	}
	return r.Unknown.MarshalJSON()
}

// UnmarshalJSON implements json.Unmarshaler.
func (r *CreateElicitationRequest) UnmarshalJSON(data []byte) error {
	*r = CreateElicitationRequest{}
	if isNull(data) {
		return nil
	}
	tag, ok, err := peekTagFast(data, "mode")
	if err != nil {
		return err
	}
	if ok {
		switch tag {
		case ElicitationModeForm:
			return decodeInto(data, &r.Form)
		case ElicitationModeUrl:
			return decodeInto(data, &r.Url)
		}
	}
	r.Unknown = newUnknown(tag, data)
	return nil
}

// Elicitation actions (the "action" key of the response).
const (
	ElicitationAccept  = "accept"
	ElicitationDecline = "decline"
	ElicitationCancel  = "cancel"
)

// CreateElicitationResponse is the user's answer, discriminated by
// "action". Exactly one field is set; see the package doc.
type CreateElicitationResponse struct {
	Accept  *ElicitationAccepted
	Decline *ElicitationDeclined
	Cancel  *ElicitationCancelled
	Unknown *UnknownVariant
}

// ElicitationAccepted carries the form values: strings, numbers, booleans
// or string arrays keyed by property name. URL mode accepts without content.
type ElicitationAccepted struct {
	Content map[string]any `json:"content,omitempty"`
	Meta    map[string]any `json:"_meta,omitempty"`
}

// ElicitationDeclined means the user said no.
type ElicitationDeclined struct {
	Meta map[string]any `json:"_meta,omitempty"`
}

// ElicitationCancelled means the request was dismissed without a choice.
type ElicitationCancelled struct {
	Meta map[string]any `json:"_meta,omitempty"`
}

// Kind returns the action, the unknown value, or "" when empty.
func (r CreateElicitationResponse) Kind() string {
	switch {
	case r.Accept != nil:
		return ElicitationAccept
	case r.Decline != nil:
		return ElicitationDecline
	case r.Cancel != nil:
		return ElicitationCancel
	case r.Unknown != nil:
		return r.Unknown.Kind
	}
	return ""
}

// MarshalJSON implements json.Marshaler.
func (r CreateElicitationResponse) MarshalJSON() ([]byte, error) {
	switch variantCount(r.Accept != nil, r.Decline != nil, r.Cancel != nil, r.Unknown != nil) {
	case 0:
		return jsonNull, nil
	case 1:
	default:
		return nil, tooMany("CreateElicitationResponse")
	}
	switch {
	case r.Accept != nil:
		return withTag("action", ElicitationAccept, r.Accept)
	case r.Decline != nil:
		return withTag("action", ElicitationDecline, r.Decline)
	case r.Cancel != nil:
		return withTag("action", ElicitationCancel, r.Cancel)
	}
	return r.Unknown.MarshalJSON()
}

// UnmarshalJSON implements json.Unmarshaler.
func (r *CreateElicitationResponse) UnmarshalJSON(data []byte) error {
	*r = CreateElicitationResponse{}
	if isNull(data) {
		return nil
	}
	tag, ok, err := peekTagFast(data, "action")
	if err != nil {
		return err
	}
	if ok {
		switch tag {
		case ElicitationAccept:
			return decodeInto(data, &r.Accept)
		case ElicitationDecline:
			return decodeInto(data, &r.Decline)
		case ElicitationCancel:
			return decodeInto(data, &r.Cancel)
		}
	}
	r.Unknown = newUnknown(tag, data)
	return nil
}

// CompleteElicitationNotification (elicitation/complete) tells the client a
// URL elicitation finished out of band.
type CompleteElicitationNotification struct {
	ElicitationId string         `json:"elicitationId"`
	Meta          map[string]any `json:"_meta,omitempty"`
}
