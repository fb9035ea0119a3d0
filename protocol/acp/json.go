package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// UnknownVariant is a union member this package does not recognise. It is
// kept rather than rejected because ACP adds variants without a version bump,
// and a client that drops or mis-types them corrupts its session state.
type UnknownVariant struct {
	// Kind is the discriminator value as received; "" when it was missing or
	// not a string.
	Kind string
	// Raw is the whole object exactly as received.
	Raw json.RawMessage
}

// MarshalJSON returns Raw verbatim so the variant can be relayed unchanged.
func (u UnknownVariant) MarshalJSON() ([]byte, error) {
	if len(u.Raw) == 0 {
		return nil, errors.New("acp: UnknownVariant with empty Raw")
	}
	return u.Raw, nil
}

func newUnknown(kind string, data []byte) *UnknownVariant {
	// Copy: encoding/json may hand us a slice of a buffer it reuses.
	return &UnknownVariant{Kind: kind, Raw: bytes.Clone(data)}
}

// Marshal encodes v for the wire without HTML escaping. encoding/json's
// Marshal rewrites '<', '>' and '&' inside MarshalJSON output, which would
// break the byte-for-byte relay of unknown variants.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// DecodeResult decodes a JSON-RPC result into v, treating an absent or null
// result as the zero value. Agents answer session/load (and sometimes other
// empty-bodied methods) with "result": null even though the schema says {}.
func DecodeResult(raw json.RawMessage, v any) error {
	if isNull(raw) {
		return nil
	}
	return json.Unmarshal(raw, v)
}

func isNull(data []byte) bool {
	data = bytes.TrimSpace(data)
	return len(data) == 0 || string(data) == "null"
}

// peekTag reads the discriminator key of a JSON object. present reports
// whether the key exists with a string value; a non-string tag counts as
// absent-but-not-missing, which callers treat as unknown.
func peekTag(data []byte, key string) (tag string, present bool, fields map[string]json.RawMessage, err error) {
	if err := json.Unmarshal(data, &fields); err != nil {
		return "", false, nil, err
	}
	if fields == nil {
		return "", false, nil, errors.New("acp: expected a JSON object")
	}
	raw, ok := fields[key]
	if !ok {
		return "", false, fields, nil
	}
	if err := json.Unmarshal(raw, &tag); err != nil {
		return "", false, fields, nil
	}
	return tag, true, fields, nil
}

// withTag marshals v (which must encode as an object) and puts key:tag first.
// Variant structs carry no discriminator field of their own, so one struct
// (e.g. ContentChunk) can serve several variants.
func withTag(key, tag string, v any) ([]byte, error) {
	body, err := Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(body) < 2 || body[0] != '{' {
		return nil, fmt.Errorf("acp: variant %q did not encode as an object", tag)
	}
	k, _ := json.Marshal(key)
	t, _ := json.Marshal(tag)
	out := make([]byte, 0, len(body)+len(k)+len(t)+2)
	out = append(out, '{')
	out = append(out, k...)
	out = append(out, ':')
	out = append(out, t...)
	if string(body) != "{}" {
		out = append(out, ',')
	}
	return append(out, body[1:]...), nil
}

// variantCount is how union MarshalJSON methods refuse ambiguous values.
func variantCount(set ...bool) int {
	n := 0
	for _, s := range set {
		if s {
			n++
		}
	}
	return n
}

func tooMany(union string) error {
	return fmt.Errorf("acp: %s has more than one variant set", union)
}

var jsonNull = []byte("null")

// decodeSkipInvalid decodes a JSON array, dropping items that are null, fail
// to decode, or fail valid. It mirrors the schema's
// x-deserialize-skip-invalid-items: one malformed command or option from an
// agent should not cost the client the whole update.
func decodeSkipInvalid[T any](data []byte, valid func(*T) bool) ([]T, error) {
	if isNull(data) {
		return nil, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, err
	}
	out := make([]T, 0, len(raws))
	for _, r := range raws {
		if isNull(r) {
			continue
		}
		var v T
		if err := json.Unmarshal(r, &v); err != nil {
			continue
		}
		if valid != nil && !valid(&v) {
			continue
		}
		out = append(out, v)
	}
	return out, nil
}

// marshalList encodes a required array, writing [] for nil because peers
// reject null where the schema requires an array.
func marshalList[T any](s []T) ([]byte, error) {
	if s == nil {
		return []byte("[]"), nil
	}
	return Marshal([]T(s))
}

// orEmpty substitutes an empty slice for nil so required arrays encode as [].
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Nullable is a field where absent, null and a value mean three different
// things, as in session_info_update (omitted = unchanged, null = clear).
// Use it with the `omitzero` tag so that the zero value is left out.
type Nullable[T any] struct {
	// Set reports that the field was present on the wire (value or null).
	Set bool
	// Null reports that the field was present and null. Only meaningful when
	// Set is true.
	Null bool
	// Value holds the value when Set && !Null.
	Value T
}

// Some returns a Nullable holding v.
func Some[T any](v T) Nullable[T] { return Nullable[T]{Set: true, Value: v} }

// Null returns a Nullable that encodes as JSON null (clear the field).
func Null[T any]() Nullable[T] { return Nullable[T]{Set: true, Null: true} }

// IsZero reports that the field is absent; `omitzero` consults it.
func (n Nullable[T]) IsZero() bool { return !n.Set }

// Get returns the value and whether there is one (present and not null).
func (n Nullable[T]) Get() (T, bool) { return n.Value, n.Set && !n.Null }

// MarshalJSON writes null or the value. An absent Nullable should be omitted
// by the `omitzero` tag; if it is not, null is the closest encoding.
func (n Nullable[T]) MarshalJSON() ([]byte, error) {
	if !n.Set || n.Null {
		return jsonNull, nil
	}
	return Marshal(n.Value)
}

// UnmarshalJSON is only called when the key is present, which is how absence
// is told apart from null.
func (n *Nullable[T]) UnmarshalJSON(data []byte) error {
	var zero T
	if isNull(data) {
		*n = Nullable[T]{Set: true, Null: true}
		return nil
	}
	v := zero
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*n = Nullable[T]{Set: true, Value: v}
	return nil
}
