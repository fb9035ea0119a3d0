// Package chat is tai's interactive session: a line editor (history, Tab
// completion of slash commands, modes and models) in front of one agent
// session, one turn per line.
package chat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/tai-dev/tai/internal/safetext"
)

// ErrInterrupted is ReadLine's answer to Ctrl-C: the line is dropped.
var ErrInterrupted = errors.New("interrupted")

// Completion is one candidate of a Tab completion.
type Completion struct {
	Text string // what replaces the word being completed
	Hint string // shown next to it: a command's description and input hint
}

// Completer returns the candidates for the word that ends at the cursor,
// and where that word starts in line.
type Completer func(line string) (start int, cands []Completion)

// Editor reads lines from a terminal in raw mode. In and Out are the
// terminal. What others write to the terminal meanwhile (the session's
// header, a mode change, a warning) goes through Above, which prints it
// above the line being typed, as readline does.
type Editor struct {
	In       io.Reader
	Out      io.Writer
	Complete Completer
	// Width is the terminal's width in columns (0: unbounded). A longer
	// line scrolls sideways around the cursor instead of wrapping, which
	// a one-row redraw could not undo.
	Width func() int
	// Raw, if set, puts the terminal in raw mode while a line is typed and
	// returns what restores it.
	Raw     func() (restore func(), err error)
	history []string

	mu      sync.Mutex // the terminal: one writer at a time
	active  *lineState // a copy of the line being typed, as drawn; nil outside ReadLine
	partial []byte     // text written Above while active, its line not ended yet

	// turn is held by the line being typed, or by a Hold (a permission
	// question): one of them has the terminal's input and its last line.
	turn     chan struct{}
	turnOnce sync.Once
}

func (e *Editor) turnCh() chan struct{} {
	e.turnOnce.Do(func() { e.turn = make(chan struct{}, 1) })
	return e.turn
}

// Hold takes the terminal for a question that reads its own answer (a
// permission asked between turns): it waits until the line being typed
// is entered, and ReadLine waits for release. A question must not be
// written over the prompt, nor its answer keys go into the line.
func (e *Editor) Hold(ctx context.Context) (release func(), err error) {
	select {
	case e.turnCh() <- struct{}{}:
		var once sync.Once
		return func() { once.Do(func() { <-e.turnCh() }) }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Above returns a writer for text that w (the same terminal as Out) shows
// while a line may be typed. Outside ReadLine it writes through. During
// it, each whole line is printed above the prompt: the prompt line is
// cleared, the text written with \r\n (raw mode does not add the \r), and
// the prompt and what was typed redrawn. The end of a line not yet ended
// waits for its newline, or for the line being typed to be entered.
func (e *Editor) Above(w io.Writer) io.Writer { return aboveWriter{e: e, w: w} }

type aboveWriter struct {
	e *Editor
	w io.Writer
}

func (a aboveWriter) Write(b []byte) (int, error) {
	e := a.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.active == nil {
		return a.w.Write(b)
	}
	e.partial = append(e.partial, b...)
	i := bytes.LastIndexByte(e.partial, '\n')
	if i < 0 {
		return len(b), nil
	}
	lines := e.partial[:i+1]
	text := bytes.ReplaceAll(bytes.ReplaceAll(lines, []byte("\r\n"), []byte("\n")), []byte("\n"), []byte("\r\n"))
	e.partial = append([]byte(nil), e.partial[i+1:]...)
	if _, err := io.WriteString(e.Out, "\r\x1b[K"); err != nil {
		return 0, err
	}
	if _, err := a.w.Write(text); err != nil {
		return 0, err
	}
	e.redraw(e.active)
	return len(b), nil
}

// History returns the lines entered so far, oldest first.
func (e *Editor) History() []string { return append([]string(nil), e.history...) }

type lineState struct {
	prompt  string
	buf     []rune
	pos     int
	restore func() // raw mode off
}

// draw redraws the line, holding the terminal. Above redraws the copy it
// keeps: st is ReadLine's, edited without the lock.
func (e *Editor) draw(st *lineState) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.active = &lineState{prompt: st.prompt, buf: append([]rune(nil), st.buf...), pos: st.pos}
	e.redraw(e.active)
}

// write writes s to the terminal, holding it.
func (e *Editor) write(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	io.WriteString(e.Out, s)
}

// begin makes st the line being typed: raw mode on, the prompt drawn.
func (e *Editor) begin(st *lineState) error {
	e.turnCh() <- struct{}{} // released by end
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.Raw != nil {
		restore, err := e.Raw()
		if err != nil {
			<-e.turnCh()
			return err
		}
		st.restore = restore
	}
	e.active = &lineState{prompt: st.prompt}
	e.redraw(e.active)
	return nil
}

// end ends the line being typed with s (its newline): text held for the
// end of its line is written after it, then raw mode is off.
func (e *Editor) end(st *lineState, s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	io.WriteString(e.Out, s)
	if len(e.partial) > 0 {
		e.Out.Write(bytes.ReplaceAll(e.partial, []byte("\n"), []byte("\r\n")))
		e.partial = nil
	}
	e.active = nil
	if st.restore != nil {
		st.restore()
	}
	<-e.turnCh()
}

// redraw draws the line; the caller holds e.mu.
func (e *Editor) redraw(st *lineState) {
	// \r, prompt, the line, clear to the end, then the cursor back.
	var b strings.Builder
	buf, pos := st.buf, st.pos
	if e.Width != nil {
		if room := e.Width() - utf8.RuneCountInString(st.prompt) - 1; room > 8 && len(buf) > room {
			start := max(0, min(pos-room/2, len(buf)-room))
			buf, pos = buf[start:start+room], pos-start
		}
	}
	b.WriteString("\r" + st.prompt + string(buf) + "\x1b[K")
	if back := len(buf) - pos; back > 0 {
		fmt.Fprintf(&b, "\x1b[%dD", back)
	}
	io.WriteString(e.Out, b.String())
}

// ReadLine reads one line. Ctrl-D on an empty line is io.EOF; Ctrl-C is
// ErrInterrupted.
func (e *Editor) ReadLine(prompt string) (string, error) {
	st := &lineState{prompt: prompt}
	hist := len(e.history) // index into history; len = the new line
	var saved []rune
	if err := e.begin(st); err != nil {
		return "", err
	}
	ended := false
	defer func() {
		if !ended {
			e.end(st, "")
		}
	}()
	finish := func(s string) {
		ended = true
		e.end(st, s)
	}
	var pending []byte
	one := make([]byte, 1)
	readByte := func() (byte, error) {
		if len(pending) > 0 {
			c := pending[0]
			pending = pending[1:]
			return c, nil
		}
		n, err := e.In.Read(one)
		if n == 0 && err == nil {
			err = io.ErrNoProgress
		}
		return one[0], err
	}
	lastTab := false
	for {
		c, err := readByte()
		if err != nil {
			return "", err
		}
		tab := false
		switch c {
		case '\r', '\n':
			finish("\r\n")
			line := string(st.buf)
			if strings.TrimSpace(line) != "" && (len(e.history) == 0 || e.history[len(e.history)-1] != line) {
				e.history = append(e.history, line)
			}
			return line, nil
		case 3: // Ctrl-C
			finish("^C\r\n")
			return "", ErrInterrupted
		case 4: // Ctrl-D
			if len(st.buf) == 0 {
				finish("\r\n")
				return "", io.EOF
			}
			if st.pos < len(st.buf) {
				st.buf = append(st.buf[:st.pos], st.buf[st.pos+1:]...)
			}
		case 1: // Ctrl-A
			st.pos = 0
		case 5: // Ctrl-E
			st.pos = len(st.buf)
		case 21: // Ctrl-U
			st.buf, st.pos = st.buf[st.pos:], 0
		case 11: // Ctrl-K
			st.buf = st.buf[:st.pos]
		case 127, 8: // Backspace
			if st.pos > 0 {
				st.buf = append(st.buf[:st.pos-1], st.buf[st.pos:]...)
				st.pos--
			}
		case '\t':
			tab = true
			e.complete(st, lastTab)
		case 27: // an escape sequence: arrows, Home, End, Delete
			b1, err := readByte()
			if err != nil {
				return "", err
			}
			if b1 != '[' && b1 != 'O' {
				break
			}
			b2, err := readByte()
			if err != nil {
				return "", err
			}
			switch b2 {
			case 'A', 'B': // history up, down
				if hist == len(e.history) {
					saved = append([]rune(nil), st.buf...)
				}
				if b2 == 'A' && hist > 0 {
					hist--
				} else if b2 == 'B' && hist < len(e.history) {
					hist++
				}
				if hist == len(e.history) {
					st.buf = append([]rune(nil), saved...)
				} else {
					st.buf = []rune(e.history[hist])
				}
				st.pos = len(st.buf)
			case 'C':
				st.pos = min(st.pos+1, len(st.buf))
			case 'D':
				st.pos = max(st.pos-1, 0)
			case 'H':
				st.pos = 0
			case 'F':
				st.pos = len(st.buf)
			case '3':
				if t, _ := readByte(); t == '~' && st.pos < len(st.buf) {
					st.buf = append(st.buf[:st.pos], st.buf[st.pos+1:]...)
				}
			}
		default:
			if c < 32 {
				break
			}
			// A UTF-8 sequence: collect its bytes.
			seq := []byte{c}
			for !utf8.FullRune(seq) && len(seq) < utf8.UTFMax {
				n, err := readByte()
				if err != nil {
					return "", err
				}
				seq = append(seq, n)
			}
			r, _ := utf8.DecodeRune(seq)
			st.buf = append(st.buf[:st.pos], append([]rune{r}, st.buf[st.pos:]...)...)
			st.pos++
		}
		lastTab = tab
		e.draw(st)
	}
}

// complete completes the word before the cursor: the one candidate, or
// the candidates' common prefix; a second Tab lists them with their hints.
func (e *Editor) complete(st *lineState, list bool) {
	if e.Complete == nil {
		return
	}
	line := string(st.buf[:st.pos])
	start, cands := e.Complete(line)
	cands = safeCompletions(cands)
	if len(cands) == 0 || start < 0 || start > len(line) {
		return
	}
	word := []rune(line[start:])
	prefix := cands[0].Text
	for _, c := range cands[1:] {
		prefix = commonPrefix(prefix, c.Text)
	}
	if len(cands) == 1 {
		prefix += " "
	}
	rest := append([]rune(nil), st.buf[st.pos:]...)
	head := append([]rune(nil), st.buf[:st.pos-len(word)]...)
	if p := []rune(prefix); len(p) >= len(word) {
		st.buf = append(append(head, p...), rest...)
		st.pos = len(head) + len(p)
	}
	if len(cands) > 1 || cands[0].Hint != "" {
		if len(cands) == 1 || list || len([]rune(prefix)) == len(word) {
			var b strings.Builder
			b.WriteString("\r\n")
			for _, c := range cands {
				fmt.Fprintf(&b, "  %s", c.Text)
				if c.Hint != "" {
					fmt.Fprintf(&b, "  — %s", c.Hint)
				}
				b.WriteString("\r\n")
			}
			e.write(b.String())
		}
	}
}

// safeCompletions escapes the candidates: their names and hints are the
// agent's (its commands, modes and models), and a name goes into the line
// the editor redraws. What is typed and sent is then what was shown.
func safeCompletions(cands []Completion) []Completion {
	out := make([]Completion, len(cands))
	for i, c := range cands {
		out[i] = Completion{Text: safetext.Line(c.Text), Hint: safetext.Line(c.Hint)}
	}
	return out
}

func commonPrefix(a, b string) string {
	ra, rb := []rune(a), []rune(b)
	n := 0
	for n < len(ra) && n < len(rb) && ra[n] == rb[n] {
		n++
	}
	return string(ra[:n])
}
