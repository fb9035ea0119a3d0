package app

import (
	"bytes"
	"io"

	"github.com/tai-dev/tai/internal/cut"
)

// fitTerminal is where a command's table goes: on a terminal, each line
// cut to its width with "…", so that a wide table does not wrap into a
// staircase of half rows; elsewhere (a pipe, a file) std.Out itself, whole
// lines for scripts. flush writes a last line without its newline.
func fitTerminal(std IO) (w io.Writer, flush func() error) {
	width, ok := termWidth(std.Out)
	if !ok {
		return std.Out, func() error { return nil }
	}
	f := &lineFitter{w: std.Out, width: width}
	return f, f.flush
}

// lineFitter cuts each line written to at most width() display columns.
type lineFitter struct {
	w       io.Writer
	width   func() int
	partial []byte
}

func (f *lineFitter) Write(b []byte) (int, error) {
	f.partial = append(f.partial, b...)
	for {
		i := bytes.IndexByte(f.partial, '\n')
		if i < 0 {
			return len(b), nil
		}
		line := fitLine(string(f.partial[:i]), f.width())
		f.partial = f.partial[i+1:]
		if _, err := io.WriteString(f.w, line+"\n"); err != nil {
			return 0, err
		}
	}
}

func (f *lineFitter) flush() error {
	if len(f.partial) == 0 {
		return nil
	}
	line := fitLine(string(f.partial), f.width())
	f.partial = nil
	_, err := io.WriteString(f.w, line)
	return err
}

// fitLine cuts s to w display columns, its last one "…" when cut. The last
// column is left empty: a line that fills it wraps on some terminals.
func fitLine(s string, w int) string {
	if w <= 1 {
		return s
	}
	return cut.End(s, w-1)
}
