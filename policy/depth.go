package policy

import "fmt"

// MaxDepth bounds how deeply a policy file may nest arrays and inline
// tables. A real policy nests two or three levels; the TOML decoder's
// cost grows with the square of the nesting (a 30 KB file of nested
// inline tables took 1.5 GiB and 4.6 s), so deeper files are refused
// before they are parsed.
const MaxDepth = 16

// CheckDepth scans TOML text for '[' and '{' nesting deeper than max,
// outside strings and comments, without parsing it. Table headers
// ([a], [[a]]) count as the brackets they are.
func CheckDepth(name string, data []byte, max int) error {
	depth, line := 0, 1
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '\n':
			line++
		case '#':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			i-- // the newline is counted above
		case '"', '\'':
			j, lines := skipString(data, i)
			i, line = j, line+lines
		case '[', '{':
			if depth++; depth > max {
				return &ConfigError{File: name, Line: line, Msg: fmt.Sprintf("arrays and inline tables nest deeper than %d levels", max)}
			}
		case ']', '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}

// skipString returns the index of the last byte of the string starting at
// data[i] (basic or literal, one-line or multi-line) and the newlines in
// it. An unterminated string runs to the end; the parser reports it.
func skipString(data []byte, i int) (end, lines int) {
	q := data[i]
	multi := i+2 < len(data) && data[i+1] == q && data[i+2] == q
	j := i + 1
	if multi {
		j = i + 3
	}
	for ; j < len(data); j++ {
		switch c := data[j]; {
		case c == '\\' && q == '"':
			if j+1 < len(data) && data[j+1] == '\n' {
				lines++
			}
			j++
		case c == '\n':
			lines++
			if !multi {
				return j - 1, lines - 1 // the newline is counted by the caller
			}
		case c == q && !multi:
			return j, lines
		case c == q && j+2 < len(data) && data[j+1] == q && data[j+2] == q:
			// Up to two more quotes may close a multi-line string ("""a"""").
			j += 2
			for j+1 < len(data) && data[j+1] == q {
				j++
			}
			return j, lines
		}
	}
	return len(data) - 1, lines
}
