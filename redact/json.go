package redact

import (
	"encoding/json"
	"strings"
)

// JSON returns a redacted copy of v; v itself is not modified.
//
// It walks maps and slices. A value under a key that looks secret (see
// [LooksSecret]) becomes "[REDACTED]", as does the "value" of an object whose
// "name" looks secret — the MCP env/headers shape
// {"name":"GITHUB_TOKEN","value":"..."}. null, booleans and empty strings are
// left alone since they carry no secret. Every other string gets the pattern
// and literal treatment of [Redactor.Bytes].
//
// Values other than map[string]any, []any and JSON scalars (structs, typed
// maps and slices, json.RawMessage) are first converted through
// encoding/json, so the result consists of map[string]any, []any, string,
// json.Number, float64, bool and nil. A value that cannot be encoded becomes
// "[REDACTED]" rather than risk leaking it.
func (r *Redactor) JSON(v any) any {
	if r == nil {
		return v
	}
	w := walker{r: r, deep: true, copy: true}
	return w.walk(v)
}

type walker struct {
	r       *Redactor
	deep    bool // apply patterns and literals to strings and numbers
	copy    bool // never mutate the input
	changed bool
}

func (w *walker) walk(v any) any {
	switch x := v.(type) {
	case nil, bool, float64:
		return v
	case json.Number:
		if w.deep {
			// A literal (e.g. a numeric PIN from the environment) can be a number.
			if s := w.r.textString(string(x)); s != string(x) {
				w.changed = true
				return Replacement
			}
		}
		return v
	case string:
		if w.deep {
			if s := w.r.textString(x); s != x {
				w.changed = true
				return s
			}
		}
		return v
	case map[string]any:
		m := x
		if w.copy {
			m = make(map[string]any, len(x))
		}
		pairSecret := false
		if name, ok := x["name"].(string); ok && LooksSecret(name) {
			_, pairSecret = x["value"]
		}
		for k, val := range x {
			if LooksSecret(k) || (pairSecret && k == "value") {
				m[k] = w.redactValue(val)
				continue
			}
			m[k] = w.walk(val)
		}
		return m
	case []any:
		s := x
		if w.copy {
			s = make([]any, len(x))
		}
		for i, val := range x {
			s[i] = w.walk(val)
		}
		return s
	default:
		// Structs, typed maps, RawMessage, ints...: normalize via JSON.
		b, err := json.Marshal(v)
		if err != nil {
			w.changed = true
			return Replacement
		}
		var g any
		if err := unmarshalNumber(b, &g); err != nil {
			w.changed = true
			return Replacement
		}
		inner := walker{r: w.r, deep: w.deep} // g is ours: mutate in place
		g = inner.walk(g)
		w.changed = w.changed || inner.changed
		return g
	}
}

// redactValue replaces a value that sits under a secret-looking key.
func (w *walker) redactValue(v any) any {
	switch x := v.(type) {
	case nil, bool:
		return v
	case string:
		if x == "" || x == Replacement {
			return v
		}
	}
	w.changed = true
	return Replacement
}

func unmarshalNumber(b []byte, v *any) error {
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	return d.Decode(v)
}
