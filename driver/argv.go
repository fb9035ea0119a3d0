package driver

import "encoding/json"

// ArgStrings is an argv array from a tool call's raw input as words; an
// element that is not a string (a number, say) is its JSON text, so that
// no word is dropped from what the policy reads or a person is shown.
// Not an array: nil.
func ArgStrings(v any) []string {
	a, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(a))
	for _, x := range a {
		if s, ok := x.(string); ok {
			out = append(out, s)
			continue
		}
		b, _ := json.Marshal(x)
		out = append(out, string(b))
	}
	return out
}
