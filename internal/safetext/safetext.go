// Package safetext makes a string from an agent safe to show on a
// terminal: what a person sees is what the string holds. Control
// characters (C0, DEL, C1: the start of every escape sequence), bidi
// overrides and isolates, invisible format characters (zero-width spaces,
// word joiners, tag characters) and bytes that are not UTF-8 are shown
// escaped in a visible form (\x1b, \u202e, \xff), never passed to the
// terminal, which would act on them: clear a line, move the cursor over
// text, reorder it, or hide it.
package safetext

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Line returns s safe to show within one line: newlines, carriage
// returns and tabs are escaped too.
func Line(s string) string { return clean(s, false) }

// Text returns s safe to show as text that may span lines (an agent's
// message, a diff, a tool's output): newlines and tabs are kept, a CRLF
// becomes a newline, everything else Line escapes is escaped.
func Text(s string) string { return clean(s, true) }

// hidden reports the runes a terminal acts on or does not show: controls,
// line and paragraph separators, and format characters other than the
// zero-width (non-)joiner, which emoji sequences and several scripts need
// and which hide nothing.
func hidden(r rune) bool {
	switch {
	case r < 0x20 || r == 0x7f:
		return true
	case r < 0x80:
		return false
	case r == 0x200c || r == 0x200d:
		return false
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

func clean(s string, multiline bool) string {
	// Most strings are plain: return them without allocating.
	i := 0
	for i < len(s) {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		if multiline && (c == '\n' || c == '\t') {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			break
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || hidden(r) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(hex2(s[i]))
		case multiline && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case multiline && r == '\r' && strings.HasPrefix(s[i+1:], "\n"):
			// A CRLF line end: the newline that follows is kept.
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case hidden(r) && r < utf8.RuneSelf:
			b.WriteString(`\x`)
			b.WriteString(hex2(byte(r)))
		case hidden(r):
			// \u202e, \U000e0041: Go's own spelling of the rune.
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&0xf]})
}
