package modelserver

import (
	"encoding/json"
	"math"
	"strings"
)

// synthesize returns a value that satisfies the common parts of a JSON
// schema (or a Gemini OpenAPI-style schema with upper-case types). Agents
// ask for structured output in side requests (gemini's next-speaker check
// and model router); a plausible value keeps them moving without a script
// turn. A nil schema yields an empty object (OpenAI json_object mode).
func synthesize(schema any) any {
	if schema == nil {
		return newObject()
	}
	return synth(schema, schema, 0)
}

func synth(s, root any, depth int) any {
	o, ok := s.(*object)
	if !ok || depth > 32 {
		return nil
	}
	if ref := o.str("$ref"); ref != "" {
		if target := resolveRef(root, ref); target != nil {
			return synth(target, root, depth+1)
		}
		return nil
	}
	if v, ok := o.get("const"); ok {
		return v
	}
	if e, ok := o.get("enum"); ok {
		if arr, ok := e.([]any); ok && len(arr) > 0 {
			return arr[0]
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if arr, ok := o.vals[k].([]any); ok {
			for _, alt := range arr {
				if ao, ok := alt.(*object); ok && schemaType(ao) != "null" {
					return synth(alt, root, depth+1)
				}
			}
			if len(arr) > 0 {
				return synth(arr[0], root, depth+1)
			}
		}
	}
	if arr, ok := o.vals["allOf"].([]any); ok && len(arr) > 0 {
		merged := newObject()
		for _, part := range arr {
			po, ok := synth(part, root, depth+1).(*object)
			if !ok {
				return synth(arr[0], root, depth+1)
			}
			for _, k := range po.keys {
				merged.set(k, po.vals[k])
			}
		}
		return merged
	}

	switch schemaType(o) {
	case "object":
		out := newObject()
		props, _ := o.vals["properties"].(*object)
		if props == nil {
			return out
		}
		keys := props.keys
		// Gemini's propertyOrdering states the order the model should use.
		if order, err := asStrings(o.vals["propertyOrdering"]); err == nil && len(order) > 0 {
			keys = append(order, without(props.keys, order)...)
		}
		for _, k := range keys {
			if p, ok := props.get(k); ok {
				out.set(k, synth(p, root, depth+1))
			}
		}
		return out
	case "array":
		n := max(1, intField(o, "minItems"))
		out := make([]any, 0, n)
		prefix, _ := o.vals["prefixItems"].([]any)
		for i := 0; i < n || i < len(prefix); i++ {
			if i < len(prefix) {
				out = append(out, synth(prefix[i], root, depth+1))
				continue
			}
			items, ok := o.vals["items"]
			if !ok {
				out = append(out, "ok")
				continue
			}
			out = append(out, synth(items, root, depth+1))
		}
		return out
	case "integer":
		return int64(math.Ceil(lowerBound(o)))
	case "number":
		return lowerBound(o)
	case "boolean":
		return false
	case "null":
		return nil
	}
	return synthString(o)
}

// schemaType returns the lower-cased type, the first non-null one of a type
// list, or one inferred from the keywords present.
func schemaType(o *object) string {
	switch t := o.vals["type"].(type) {
	case string:
		return strings.ToLower(t)
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok && strings.ToLower(s) != "null" {
				return strings.ToLower(s)
			}
		}
		return "null"
	}
	switch {
	case o.vals["properties"] != nil:
		return "object"
	case o.vals["items"] != nil || o.vals["prefixItems"] != nil:
		return "array"
	}
	return "string"
}

func synthString(o *object) string {
	s := "ok"
	switch o.str("format") {
	case "date-time":
		s = "1970-01-01T00:00:00Z"
	case "date":
		s = "1970-01-01"
	case "time":
		s = "00:00:00Z"
	case "email":
		s = "user@example.com"
	case "uri", "url":
		s = "https://example.com/"
	case "uuid":
		s = "00000000-0000-0000-0000-000000000000"
	}
	if n := intField(o, "minLength"); len(s) < n {
		s += strings.Repeat("k", n-len(s))
	}
	if m, ok := numField(o, "maxLength"); ok && m >= 0 && len(s) > int(m) {
		s = s[:int(m)]
	}
	return s
}

// lowerBound is 0 unless the schema's minimum excludes it.
func lowerBound(o *object) float64 {
	v := 0.0
	if m, ok := numField(o, "minimum"); ok && m > v {
		v = m
	}
	if m, ok := numField(o, "exclusiveMinimum"); ok && m >= v {
		v = m + 1
	}
	if m, ok := numField(o, "maximum"); ok && m < v {
		v = m
	}
	return v
}

func numField(o *object, k string) (float64, bool) {
	switch n := o.vals[k].(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case string: // Gemini sends int64 fields such as minItems as strings
		f, err := json.Number(n).Float64()
		return f, err == nil
	}
	return 0, false
}

func intField(o *object, k string) int {
	f, _ := numField(o, k)
	return int(f)
}

// resolveRef follows a local JSON pointer such as "#/$defs/Item".
func resolveRef(root any, ref string) any {
	if !strings.HasPrefix(ref, "#") {
		return nil
	}
	cur := root
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#"), "/") {
		if part == "" {
			continue
		}
		part = strings.NewReplacer("~1", "/", "~0", "~").Replace(part)
		o, ok := cur.(*object)
		if !ok {
			return nil
		}
		if cur, ok = o.get(part); !ok {
			return nil
		}
	}
	return cur
}

func without(all, drop []string) []string {
	var out []string
	for _, k := range all {
		found := false
		for _, d := range drop {
			found = found || d == k
		}
		if !found {
			out = append(out, k)
		}
	}
	return out
}
