package acp

import (
	"bytes"

	"github.com/tai-dev/tai/internal/jsonw"
)

// PermissionOptionKind hints what picking an option means. Open enum; the
// client must still echo an OptionId it was offered.
type PermissionOptionKind string

// Permission option kinds.
const (
	PermissionAllowOnce    PermissionOptionKind = "allow_once"
	PermissionAllowAlways  PermissionOptionKind = "allow_always"
	PermissionRejectOnce   PermissionOptionKind = "reject_once"
	PermissionRejectAlways PermissionOptionKind = "reject_always"
)

// PermissionOption is one choice offered to the user.
type PermissionOption struct {
	OptionId string               `json:"optionId"`
	Name     string               `json:"name"`
	Kind     PermissionOptionKind `json:"kind"`
	Meta     map[string]any       `json:"_meta,omitempty"`
}

// RequestPermissionRequest (session/request_permission) asks the client to
// approve a tool call. ToolCall usually refers to a call already announced
// by a tool_call update.
type RequestPermissionRequest struct {
	SessionId string             `json:"sessionId"`
	ToolCall  ToolCallUpdate     `json:"toolCall"`
	Options   []PermissionOption `json:"options"`
	Meta      map[string]any     `json:"_meta,omitempty"`
}

// MarshalJSON writes options as [] when nil.
func (r RequestPermissionRequest) MarshalJSON() ([]byte, error) {
	type plain RequestPermissionRequest
	p := plain(r)
	p.Options = orEmpty(p.Options)
	return Marshal(p)
}

// FindOption returns the first offered option of the given kind.
func (r RequestPermissionRequest) FindOption(kind PermissionOptionKind) (PermissionOption, bool) {
	for _, o := range r.Options {
		if o.Kind == kind {
			return o, true
		}
	}
	return PermissionOption{}, false
}

// RequestPermissionResponse answers a permission request.
type RequestPermissionResponse struct {
	Outcome RequestPermissionOutcome `json:"outcome"`
	Meta    map[string]any           `json:"_meta,omitempty"`
}

// RequestPermissionOutcome discriminator values (the "outcome" key).
const (
	OutcomeSelected  = "selected"
	OutcomeCancelled = "cancelled"
)

// RequestPermissionOutcome is selected{optionId} or cancelled, discriminated
// by "outcome". Exactly one field is set; see the package doc.
//
// Cancelled is only for a turn being cancelled: agents treat it as aborting
// the whole turn. To deny, select a reject_* option.
type RequestPermissionOutcome struct {
	Selected  *SelectedPermissionOutcome
	Cancelled *CancelledPermissionOutcome
	Unknown   *UnknownVariant
}

// SelectedPermissionOutcome names the chosen option.
type SelectedPermissionOutcome struct {
	OptionId string         `json:"optionId"`
	Meta     map[string]any `json:"_meta,omitempty"`
}

// CancelledPermissionOutcome reports that the turn was cancelled.
type CancelledPermissionOutcome struct {
	Meta map[string]any `json:"_meta,omitempty"`
}

// Kind returns "selected", "cancelled", the unknown value, or "" when empty.
func (o RequestPermissionOutcome) Kind() string {
	switch {
	case o.Selected != nil:
		return OutcomeSelected
	case o.Cancelled != nil:
		return OutcomeCancelled
	case o.Unknown != nil:
		return o.Unknown.Kind
	}
	return ""
}

// MarshalJSON implements json.Marshaler.
func (o RequestPermissionOutcome) MarshalJSON() ([]byte, error) {
	switch variantCount(o.Selected != nil, o.Cancelled != nil, o.Unknown != nil) {
	case 0:
		return jsonNull, nil
	case 1:
	default:
		return nil, tooMany("RequestPermissionOutcome")
	}
	switch {
	case o.Selected != nil:
		return withTag("outcome", OutcomeSelected, o.Selected)
	case o.Cancelled != nil:
		return withTag("outcome", OutcomeCancelled, o.Cancelled)
	}
	return o.Unknown.MarshalJSON()
}

// UnmarshalJSON implements json.Unmarshaler.
func (o *RequestPermissionOutcome) UnmarshalJSON(data []byte) error {
	*o = RequestPermissionOutcome{}
	if isNull(data) {
		return nil
	}
	tag, ok, err := peekTagFast(data, "outcome")
	if err != nil {
		return err
	}
	if ok {
		switch tag {
		case OutcomeSelected:
			return decodeInto(data, &o.Selected)
		case OutcomeCancelled:
			return decodeInto(data, &o.Cancelled)
		}
	}
	o.Unknown = newUnknown(tag, data)
	return nil
}

// WriteResult writes r as its reply's result (jsonrpc.ResultWriter) when
// it is a plain selection or cancellation, the answer to nearly every
// permission request; it reports false for anything with _meta or an
// unknown outcome, which encoding/json writes.
func (r RequestPermissionResponse) WriteResult(buf *bytes.Buffer) bool {
	o := r.Outcome
	switch {
	case r.Meta != nil || variantCount(o.Selected != nil, o.Cancelled != nil, o.Unknown != nil) != 1:
		return false
	case o.Selected != nil && o.Selected.Meta == nil:
		buf.WriteString(`{"outcome":{"outcome":"selected","optionId":`)
		_ = jsonw.String(buf, o.Selected.OptionId)
		buf.WriteString(`}}`)
		return true
	case o.Cancelled != nil && o.Cancelled.Meta == nil:
		buf.WriteString(`{"outcome":{"outcome":"cancelled"}}`)
		return true
	}
	return false
}

// SelectPermission answers with the given offered option.
func SelectPermission(optionID string) RequestPermissionResponse {
	return RequestPermissionResponse{Outcome: RequestPermissionOutcome{
		Selected: &SelectedPermissionOutcome{OptionId: optionID},
	}}
}

// CancelPermission answers with the cancelled outcome; use it only while
// cancelling the turn.
func CancelPermission() RequestPermissionResponse {
	return RequestPermissionResponse{Outcome: RequestPermissionOutcome{
		Cancelled: &CancelledPermissionOutcome{},
	}}
}
