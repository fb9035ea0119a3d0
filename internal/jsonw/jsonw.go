// Package jsonw writes JSON strings straight to a writer, escaped as
// encoding/json escapes them with SetEscapeHTML(false), without building
// the encoded string first: a 100 MiB message goes out in place.
package jsonw

import (
	"encoding/json"
	"io"
	"unicode/utf8"
)

const hex = "0123456789abcdef"

// safe marks the bytes below utf8.RuneSelf written as they are.
var safe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// Writer is what String writes to (a *bufio.Writer, a *bytes.Buffer).
type Writer interface {
	io.Writer
	io.StringWriter
	io.ByteWriter
}

// String writes s as a quoted JSON string.
func String(w Writer, s string) error {
	_ = w.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		i += PlainPrefix(s[i:])
		if i >= len(s) {
			break
		}
		if c := s[i]; c < utf8.RuneSelf {
			if safe[c] {
				i++
				continue
			}
			if _, err := w.WriteString(s[start:i]); err != nil {
				return err
			}
			switch c {
			case '"', '\\':
				_, _ = w.Write([]byte{'\\', c})
			case '\b':
				_, _ = w.WriteString(`\b`)
			case '\f':
				_, _ = w.WriteString(`\f`)
			case '\n':
				_, _ = w.WriteString(`\n`)
			case '\r':
				_, _ = w.WriteString(`\r`)
			case '\t':
				_, _ = w.WriteString(`\t`)
			default:
				_, _ = w.Write([]byte{'\\', 'u', '0', '0', hex[c>>4], hex[c&0xf]})
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			if _, err := w.WriteString(s[start:i]); err != nil {
				return err
			}
			switch r {
			case utf8.RuneError:
				_, _ = w.WriteString(`\ufffd`)
			case '\u2028':
				_, _ = w.WriteString(`\u2028`)
			default:
				_, _ = w.WriteString(`\u2029`)
			}
			i += size
			start = i
			continue
		}
		i += size
	}
	if _, err := w.WriteString(s[start:]); err != nil {
		return err
	}
	return w.WriteByte('"')
}

// PlainPrefix returns how many leading bytes of s need no attention inside
// a JSON string: printable ASCII other than '"' and '\'. It looks at eight
// bytes at a time, so scanning a long text costs little more than reading
// it.
func PlainPrefix[T string | []byte](s T) int {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		q, b := x^(lo*'"'), x^(lo*'\\')
		if ((x-lo*0x20)&^x|(q-lo)&^q|(b-lo)&^b|x)&hi != 0 {
			break
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return i
		}
	}
	return i
}

// Compact reports whether raw is valid JSON with no space outside its
// strings: what json.Compact would leave as it is, so that a raw value
// can be written as it came.
func Compact(raw []byte) bool {
	in := false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return !in && json.Valid(raw)
}

// Array writes items as a JSON array, each by write, and stops at the
// first error.
func Array[T any](w Writer, items []T, write func(*T) error) error {
	_ = w.WriteByte('[')
	for i := range items {
		if i > 0 {
			_ = w.WriteByte(',')
		}
		if err := write(&items[i]); err != nil {
			return err
		}
	}
	return w.WriteByte(']')
}
