package jsonrpc

import (
	"encoding/json"
	"fmt"

	"github.com/tai-dev/tai/internal/jsonw"
)

// maxDepth is how deeply values may nest; encoding/json's own limit.
const maxDepth = 10000

// syntaxError is a line that is not JSON.
type syntaxError struct {
	msg string
	off int
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at offset %d: %s", e.off, e.msg)
}

// parseEnvelope validates msg (one JSON object) in a single pass and takes
// the envelope's members from it: params, result and error are sub-slices
// of msg, so msg must stay untouched while they are in use. It agrees with
// encoding/json: a later duplicate member wins and names match ASCII
// case-insensitively when no member matches exactly.
func parseEnvelope(msg []byte, env *envelope) error {
	i := skipSpace(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return &syntaxError{"expected an object", i}
	}
	i = skipSpace(msg, i+1)
	if i < len(msg) && msg[i] == '}' {
		return trailing(msg, i+1)
	}
	for {
		if i >= len(msg) || msg[i] != '"' {
			return &syntaxError{"expected a member name", i}
		}
		ks := i
		ke, escaped, err := skipString(msg, i)
		if err != nil {
			return err
		}
		i = skipSpace(msg, ke)
		if i >= len(msg) || msg[i] != ':' {
			return &syntaxError{"expected ':'", i}
		}
		i = skipSpace(msg, i+1)
		vs := i
		ve, err := skipValue(msg, i, 1)
		if err != nil {
			return err
		}
		key := msg[ks+1 : ke-1]
		if escaped {
			var s string
			if json.Unmarshal(msg[ks:ke], &s) == nil {
				key = []byte(s)
			}
		}
		env.set(key, msg[vs:ve])
		i = skipSpace(msg, ve)
		if i >= len(msg) {
			return &syntaxError{"unexpected end of object", i}
		}
		switch msg[i] {
		case ',':
			i = skipSpace(msg, i+1)
		case '}':
			return trailing(msg, i+1)
		default:
			return &syntaxError{"expected ',' or '}'", i}
		}
	}
}

// set stores one member. The field decoders never fail, as with
// json.Unmarshal into the envelope.
func (env *envelope) set(key, val []byte) {
	field := func(name string) bool { return string(key) == name || foldEq(key, name) }
	switch {
	case field("jsonrpc"):
		_ = env.JSONRPC.UnmarshalJSON(val)
	case field("id"):
		env.ID = wireID(val)
	case field("method"):
		env.Method = methodName{}
		_ = env.Method.UnmarshalJSON(val)
	case field("params"):
		env.Params = rawOrNil(val)
	case field("result"):
		env.Result = rawOrNil(val)
	case field("error"):
		env.Error = rawOrNil(val)
	}
}

// rawOrNil mirrors json.RawMessage decoding: null is kept as the text
// "null" (a RawMessage receives it verbatim).
func rawOrNil(val []byte) json.RawMessage { return json.RawMessage(val) }

// foldEq compares ASCII case-insensitively against a lower-case name.
func foldEq(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

func trailing(b []byte, i int) error {
	if i = skipSpace(b, i); i != len(b) {
		return &syntaxError{"data after the object", i}
	}
	return nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipValue validates the value at b[i] and returns its end.
func skipValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return 0, &syntaxError{"unexpected end of input", i}
	}
	switch c := b[i]; {
	case c == '"':
		end, _, err := skipString(b, i)
		return end, err
	case c == '{':
		if depth > maxDepth {
			return 0, &syntaxError{"nested too deeply", i}
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1, nil
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return 0, &syntaxError{"expected a member name", i}
			}
			end, _, err := skipString(b, i)
			if err != nil {
				return 0, err
			}
			i = skipSpace(b, end)
			if i >= len(b) || b[i] != ':' {
				return 0, &syntaxError{"expected ':'", i}
			}
			if i, err = skipValue(b, skipSpace(b, i+1), depth+1); err != nil {
				return 0, err
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return 0, &syntaxError{"unexpected end of object", i}
			}
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
			case '}':
				return i + 1, nil
			default:
				return 0, &syntaxError{"expected ',' or '}'", i}
			}
		}
	case c == '[':
		if depth > maxDepth {
			return 0, &syntaxError{"nested too deeply", i}
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, nil
		}
		for {
			var err error
			if i, err = skipValue(b, i, depth+1); err != nil {
				return 0, err
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return 0, &syntaxError{"unexpected end of array", i}
			}
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
			case ']':
				return i + 1, nil
			default:
				return 0, &syntaxError{"expected ',' or ']'", i}
			}
		}
	case c == '-' || '0' <= c && c <= '9':
		return skipNumber(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	}
	return 0, &syntaxError{fmt.Sprintf("invalid character %q", b[i]), i}
}

func literal(b []byte, i int, lit string) (int, error) {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit), nil
	}
	return 0, &syntaxError{"invalid literal", i}
}

// skipString validates the string starting at the quote b[i] and returns
// the index after its closing quote and whether it holds escapes. Invalid
// UTF-8 is accepted, as encoding/json accepts it.
func skipString(b []byte, i int) (end int, escaped bool, err error) {
	for j := i + 1; j < len(b); j++ {
		if j-i > 16 { // a long string: skip its plain stretches word by word
			if j += jsonw.PlainPrefix(b[j:]); j >= len(b) {
				break
			}
		}
		switch c := b[j]; {
		case c == '"':
			return j + 1, escaped, nil
		case c == '\\':
			escaped = true
			j++
			if j >= len(b) {
				return 0, false, &syntaxError{"unterminated string", i}
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-j < 5 || !isHex(b[j+1]) || !isHex(b[j+2]) || !isHex(b[j+3]) || !isHex(b[j+4]) {
					return 0, false, &syntaxError{"invalid \\u escape", j}
				}
				j += 4
			default:
				return 0, false, &syntaxError{"invalid escape", j}
			}
		case c < 0x20:
			return 0, false, &syntaxError{"control character in string", j}
		}
	}
	return 0, false, &syntaxError{"unterminated string", i}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func skipNumber(b []byte, i int) (int, error) {
	start := i
	if b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return 0, &syntaxError{"invalid number", start}
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return 0, &syntaxError{"invalid number", start}
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return 0, &syntaxError{"invalid number", start}
		}
	}
	return i, nil
}
