// Package term is the PTY driver's terminal: a pseudo-terminal running the
// agent's TUI (creack/pty) and the emulator that turns its output into a
// screen (vt10x), plus what vt10x does not track: bracketed paste (DECSET
// 2004), device-attribute queries, UTF-8 split across reads, and the rows
// that scroll off the top of the screen (TakeScrolled).
package term

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/hinshun/vt10x"
)

// Default size. A tall screen (agentapi uses 80x1000) keeps a whole reply
// and the input box visible together, so the transcript diff sees the
// reply without it scrolling away (vt10x keeps no scrollback) and Ink-based
// TUIs, which clear and redraw when their live area outgrows the screen,
// never have to. 200 columns keep prompts, option labels and paths on one
// line, which the echo-stripping and picker parsers rely on; 100 rows (not
// 1000) because Ink and ratatui lay out to the full height and some TUIs
// (opencode) repaint every row on every frame, so rows cost throughput.
const (
	DefaultCols = 200
	DefaultRows = 100
)

// TERM the child sees. vt10x is a port of st, which implements the xterm
// control set these TUIs emit (CSI cursor motion, DECSTBM, SGR 256/true
// colour, alternate screen 1049, mouse modes) and answers the queries they
// send (DSR, CPR, OSC 10/11; DA1 is answered here). "vt100", agentapi's
// choice, is honest but makes Ink and crossterm drop colour and some
// redraw optimisations; st's own "st-256color" is rarely installed, and
// apps that find no terminfo entry degrade further.
const DefaultTERM = "xterm-256color"

// Snapshot is the screen at one instant: text lines (trailing blanks
// trimmed, one entry per row), the cursor, and the modes the driver needs.
type Snapshot struct {
	Lines          []string
	CursorX        int
	CursorY        int
	CursorVisible  bool
	Cols, Rows     int
	AltScreen      bool
	BracketedPaste bool
	AppCursor      bool // DECCKM: arrow keys are sent as ESC O x
}

// Text is the screen as one string, rows joined by newlines, trailing
// blank rows dropped.
func (s Snapshot) Text() string {
	end := len(s.Lines)
	for end > 0 && s.Lines[end-1] == "" {
		end--
	}
	return strings.Join(s.Lines[:end], "\n")
}

// Screen is a terminal emulator fed with a TUI's output. It is safe for
// concurrent use: one goroutine writes, others snapshot.
type Screen struct {
	mu      sync.Mutex
	vt      vt10x.Terminal
	partial []byte // an incomplete UTF-8 sequence held for the next write
	scan    modeScanner
	filter  csiFilter
	replies io.Writer
	scroll  scrollWatch
	line    []byte // scratch for the rows captured
}

// NewScreen returns an emulator of cols x rows. replies receives what the
// terminal answers to the application's queries (cursor position, device
// attributes); nil discards them.
func NewScreen(cols, rows int, replies io.Writer) *Screen {
	if replies == nil {
		replies = io.Discard
	}
	s := &Screen{replies: replies}
	s.scroll.bottom, s.scroll.cols = -1, cols
	s.vt = vt10x.New(vt10x.WithSize(cols, rows), vt10x.WithWriter(lockedWriter{s: s}))
	s.scan.onDA = func() { _, _ = replies.Write([]byte("\x1b[?62;22c")) }
	return s
}

// lockedWriter forwards vt10x's replies. vt10x writes them while holding
// its own lock, inside Write; the reply goes straight to the PTY.
type lockedWriter struct{ s *Screen }

func (w lockedWriter) Write(p []byte) (int, error) { return w.s.replies.Write(p) }

// Write feeds output of the application to the emulator. vt10x mangles a
// UTF-8 sequence split across two writes, so an incomplete tail is held
// back until the rest arrives.
func (s *Screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(p)
	s.scan.feed(p)
	buf := s.filter.feed(p)
	if len(s.partial) > 0 {
		buf = append(s.partial, buf...)
		s.partial = nil
	}
	cut := completePrefix(buf)
	if cut < len(buf) {
		s.partial = append([]byte(nil), buf[cut:]...)
	}
	if cut > 0 {
		if err := s.feed(buf[:cut]); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// csiFilter drops the CSI sequences whose leading "<", "=" or ">"
// (private parameter prefixes: XTVERSION "> q", modifyOtherKeys "> 4 m",
// the kitty keyboard protocol's push "> 1 u" and pop "< u") and "? u"
// (the kitty keyboard query) vt10x does not know: it ignores the prefix
// and runs the plain sequence, and a plain "CSI u" restores the saved
// cursor. Claude Code sends "CSI ? u" after its first frame; the cursor
// jumped to the top and every relative redraw after it landed there. None
// of these change what is on screen in a real terminal. A sequence split
// across writes is held until its final byte.
type csiFilter struct {
	pending []byte // ESC, or ESC [ and parameters, not yet passed on
	out     []byte
}

func (f *csiFilter) feed(p []byte) []byte {
	if len(f.pending) == 0 && bytes.IndexByte(p, 0x1b) < 0 {
		return p // most output: text with no escape at all
	}
	f.out = f.out[:0]
	for i := 0; i < len(p); i++ {
		b := p[i]
		if len(f.pending) == 0 && b != 0x1b {
			// Copy the run up to the next escape in one go.
			j := bytes.IndexByte(p[i:], 0x1b)
			if j < 0 {
				j = len(p) - i
			}
			f.out = append(f.out, p[i:i+j]...)
			i += j - 1
			continue
		}
		switch {
		case len(f.pending) == 0:
			if b == 0x1b {
				f.pending = append(f.pending, b)
			} else {
				f.out = append(f.out, b)
			}
		case len(f.pending) == 1:
			if b == '[' {
				f.pending = append(f.pending, b)
				continue
			}
			f.out = append(f.out, f.pending...)
			f.pending = f.pending[:0]
			if b == 0x1b {
				f.pending = append(f.pending, b)
			} else {
				f.out = append(f.out, b)
			}
		default:
			f.pending = append(f.pending, b)
			if b >= 0x40 && b <= 0x7e {
				if !f.drop() {
					f.out = append(f.out, f.pending...)
				}
				f.pending = f.pending[:0]
			} else if b < 0x20 || len(f.pending) > 64 {
				// Not a sequence this filter judges: pass it on as is.
				f.out = append(f.out, f.pending...)
				f.pending = f.pending[:0]
			}
		}
	}
	return f.out
}

// drop says whether the complete sequence in pending is one to drop.
func (f *csiFilter) drop() bool {
	params, final := f.pending[2:len(f.pending)-1], f.pending[len(f.pending)-1]
	if len(params) == 0 {
		return false
	}
	switch params[0] {
	case '<', '=', '>':
		return true
	case '?':
		return final == 'u'
	}
	return false
}

// completePrefix is the length of buf without a trailing incomplete UTF-8
// sequence (at most 3 bytes are held).
func completePrefix(buf []byte) int {
	for i := 1; i <= 3 && i <= len(buf); i++ {
		b := buf[len(buf)-i]
		if b < 0x80 {
			return len(buf)
		}
		if utf8.RuneStart(b) {
			if utf8.FullRune(buf[len(buf)-i:]) {
				return len(buf)
			}
			return len(buf) - i
		}
	}
	return len(buf)
}

// Resize changes the emulated screen size.
func (s *Screen) Resize(cols, rows int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vt.Resize(cols, rows)
	s.scroll.top, s.scroll.bottom = 0, -1 // vt10x resets the region too
	s.scroll.safe, s.scroll.cols = 0, cols
}

// Snapshot returns the current screen.
func (s *Screen) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapshot()
}

func (s *Screen) snapshot() Snapshot {
	s.vt.Lock()
	defer s.vt.Unlock()
	cols, rows := s.vt.Size()
	snap := Snapshot{Cols: cols, Rows: rows, Lines: make([]string, rows)}
	line := make([]rune, 0, cols)
	for y := 0; y < rows; y++ {
		line = line[:0]
		for x := 0; x < cols; x++ {
			c := s.vt.Cell(x, y).Char
			if c == 0 {
				c = ' '
			}
			line = append(line, c)
		}
		snap.Lines[y] = strings.TrimRight(string(line), " ")
	}
	cur := s.vt.Cursor()
	snap.CursorX, snap.CursorY = cur.X, cur.Y
	snap.CursorVisible = s.vt.CursorVisible()
	mode := s.vt.Mode()
	snap.AltScreen = mode&vt10x.ModeAltScreen != 0
	snap.AppCursor = mode&vt10x.ModeAppCursor != 0
	snap.BracketedPaste = s.scan.bracketed
	return snap
}

// BracketedPaste reports whether the application enabled bracketed paste.
func (s *Screen) BracketedPaste() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scan.bracketed
}

// modeScanner watches the raw byte stream for what vt10x ignores: private
// mode 2004 (bracketed paste) set and reset, and DA1 queries (ESC [ c,
// ESC [ 0 c), which crossterm and others use as a sentinel and would
// otherwise wait on. It is a small state machine so that a sequence split
// across reads is still seen.
type modeScanner struct {
	state     int // 0 ground, 1 ESC, 2 CSI
	params    []byte
	bracketed bool
	onDA      func()
}

func (m *modeScanner) feed(p []byte) {
	for _, b := range p {
		switch m.state {
		case 0:
			if b == 0x1b {
				m.state = 1
			}
		case 1:
			if b == '[' {
				m.state, m.params = 2, m.params[:0]
			} else if b != 0x1b {
				m.state = 0
			}
		case 2:
			switch {
			case b >= 0x30 && b <= 0x3f: // parameter bytes: digits ; < = > ?
				if len(m.params) < 64 {
					m.params = append(m.params, b)
				}
			case b >= 0x20 && b <= 0x2f: // intermediates
				m.params = append(m.params[:0], 'x') // not a sequence we track
			case b >= 0x40 && b <= 0x7e:
				m.final(b)
				m.state = 0
			case b == 0x1b:
				m.state = 1
			default:
				m.state = 0
			}
		}
	}
}

func (m *modeScanner) final(b byte) {
	p := string(m.params)
	switch b {
	case 'h', 'l':
		if !strings.HasPrefix(p, "?") {
			return
		}
		for _, a := range strings.Split(p[1:], ";") {
			if a == "2004" {
				m.bracketed = b == 'h'
			}
		}
	case 'c':
		if (p == "" || p == "0") && m.onDA != nil {
			m.onDA()
		}
	}
}
