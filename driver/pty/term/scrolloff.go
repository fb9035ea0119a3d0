package term

import (
	"unicode/utf8"

	"github.com/hinshun/vt10x"
)

// Scrolled is what left the top of the main screen between two calls of
// TakeScrolled: the rows a real terminal would have put in its
// scrollback, oldest first, and where the app erased the whole screen.
type Scrolled struct {
	Rows []string
	// Erases are positions in Rows (0..len(Rows)) at which the whole
	// screen was erased (ED 2, ED 0 from the home position, RIS). The rows
	// after one are the app drawing afresh, and often again what it had
	// drawn before: faketui and Ink (Claude Code, gemini) clear the screen
	// and repaint their whole transcript once it outgrows the screen, so
	// those rows leave the top once per repaint.
	Erases []int
	// Dropped is how many rows were dropped unread, oldest first, because
	// nobody took them (maxScrolled).
	Dropped int
}

// maxScrolled bounds the rows kept between two TakeScrolled calls (a
// Screen nobody reads must not grow without end).
const maxScrolled = 10000

// TakeScrolled returns the rows that scrolled off since the last call and
// forgets them.
func (s *Screen) TakeScrolled() Scrolled {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.takeScrolled()
}

// Take is Snapshot and TakeScrolled at one instant: the rows returned
// are exactly those that left the screen before the snapshot, none of
// them still on it.
func (s *Screen) Take() (Snapshot, Scrolled) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapshot(), s.takeScrolled()
}

func (s *Screen) takeScrolled() Scrolled {
	w := &s.scroll
	out := Scrolled{Rows: w.rows, Erases: w.erases, Dropped: w.dropped}
	w.rows, w.erases, w.dropped = nil, nil, 0
	return out
}

// scrollWatch follows the byte stream vt10x gets, as vt10x's own parser
// does (st's states: ground, ESC, CSI, a string, the ESC that may end
// it, and the one byte after ESC ( or ESC #), to find where a row leaves
// the top of the screen: a line feed (LF, VT, FF, IND, NEL) with the
// cursor on the bottom margin, or SU (CSI n S), while the scroll region
// (DECSTBM, which vt10x does not expose) is the whole screen. A region
// that is not the whole screen is an app scrolling a pane (codex's
// history above its viewport, a status row kept below), whose rows are
// not the screen's history. vt10x has no left and right margins, so a
// region is always full width. Rows that leave the alternate screen are
// not kept, as in xterm: an app there owns the screen and redraws it
// rather than letting it scroll (ratatui, opencode), and when it does
// scroll the whole screen its header and footer rows would go too; the
// driver's frame diff reads those apps. Auto-wrap at the bottom right
// corner also scrolls; no TUI the driver knows lets a row wrap (they lay
// out to the width), and the frame diff still sees those.
type scrollWatch struct {
	state  uint8
	params [16]byte
	np     int
	// top and bottom are the region's margins, 0-based; bottom -1 is the
	// last row (the default, whatever the size).
	top, bottom int
	// safe is how many more line feeds cannot scroll the whole main
	// screen: the cursor was looked at, and only line feeds, CR, BS, text
	// and sequences that leave the cursor where it is (colours, erasing)
	// came since. Each line feed counts two rows: one for a wrap of the
	// text before it, which, shorter than a row (lineText) and with no
	// move to the right (tab, CUF, CHA), wraps at most once. Those line
	// feeds go to vt10x with the text around them in one write.
	safe     int
	lineText int // printable bytes since the last line feed
	cols     int
	exact    bool // look at every line feed (tests: the reference)

	rows    []string
	erases  []int
	dropped int
}

const (
	swGround = iota
	swEsc
	swCSI
	swStr    // OSC, DCS, APC, PM: a line feed here is text
	swStrEsc // ESC inside a string: ST, or a new sequence
	swSkip   // the designator after ESC ( or the byte after ESC #
)

// feed writes p to vt10x, stopping before each byte that may scroll the
// screen to keep the row it pushes off. Text runs with no control byte
// go to vt10x whole.
func (s *Screen) feed(p []byte) error {
	w := &s.scroll
	last := 0
	for i := 0; i < len(p); i++ {
		b := p[i]
		if w.state == swGround && b >= 0x20 {
			// Skip the printable run in one go.
			j := i + 1
			for j < len(p) && p[j] >= 0x20 {
				j++
			}
			if w.lineText += j - i; w.lineText >= w.cols {
				w.safe = 0 // it may wrap more than once
			}
			i = j - 1
			continue
		}
		if w.state == swStr {
			switch b {
			case 0x1b:
				w.state = swStrEsc
			case 0x07:
				w.state = swGround
			}
			continue
		}
		if b < 0x20 || b == 0x7f {
			// vt10x runs the control codes in every state but a string.
			if err := s.control(b, p, &last, i); err != nil {
				return err
			}
			continue
		}
		switch w.state {
		case swStrEsc:
			w.state = swGround
		case swSkip:
			w.state = swGround
		case swEsc:
			if err := s.escape(b, p, &last, i); err != nil {
				return err
			}
		case swCSI:
			if w.np < len(w.params) {
				w.params[w.np] = b
			}
			w.np++
			if b >= 0x40 && b <= 0x7e || w.np >= 256 {
				w.state = swGround
				if err := s.csi(b, p, &last, i); err != nil {
					return err
				}
			}
		default:
			// Ground, a non-control byte the fast path did not take
			// (an ESC ) designator's byte, printed by vt10x).
		}
	}
	return s.flush(p, &last, len(p))
}

// control acts on the control code p[i] (b): a line feed that may scroll
// keeps the row it pushes off.
func (s *Screen) control(b byte, p []byte, last *int, i int) error {
	w := &s.scroll
	switch b {
	case '\n', '\v', '\f':
		w.lineText = 0
		if w.safe > 0 {
			w.safe--
			return nil
		}
		if err := s.flush(p, last, i); err != nil {
			return err
		}
		s.lineFeed()
	case 0x1b:
		w.state, w.np = swEsc, 0
	case '\t':
		w.safe = 0
	case 0x18, 0x1a:
		w.np = 0
	}
	return nil
}

// escape acts on the byte p[i] (b) after an ESC.
func (s *Screen) escape(b byte, p []byte, last *int, i int) error {
	w := &s.scroll
	w.state = swGround
	switch b {
	case '[':
		w.state = swCSI
	case 'P', '_', '^', ']', 'k':
		w.state = swStr
	case '(', '#':
		w.state = swSkip
	case ')', '*', '+', '7', '=', '>', 'M', '\\', 'H':
		// No move down.
	case 'D', 'E': // IND, NEL
		if err := s.flush(p, last, i); err != nil {
			return err
		}
		w.safe = 0
		s.lineFeed()
	case 'c': // RIS: the main screen, erased
		w.top, w.bottom, w.safe = 0, -1, 0
		w.erase()
	default: // DECRC and the rest: the cursor may be anywhere
		w.safe = 0
	}
	return nil
}

// flush writes p[*last:i] to vt10x.
func (s *Screen) flush(p []byte, last *int, i int) error {
	if i > *last {
		if _, err := s.vt.Write(p[*last:i]); err != nil {
			return err
		}
		*last = i
	}
	return nil
}

// csi acts on a complete CSI sequence whose final byte is p[i].
func (s *Screen) csi(final byte, p []byte, last *int, i int) error {
	w := &s.scroll
	if w.np > len(w.params) {
		return nil // long: colours and the like, none of the ones watched
	}
	params := w.params[:w.np-1] // without the final byte
	priv := len(params) > 0 && params[0] == '?'
	if priv {
		params = params[1:]
	}
	switch final {
	case 'm', 'K', 'X', 'P', '@', 'D', 'c', 'n', 'q', 's', 't', 'J', 'S':
		// Colours, erasing, a move left: the cursor stays on its row,
		// no further right.
	case 'h', 'l':
		if priv {
			w.safe = 0 // the alternate screen, origin mode
		}
	default:
		w.safe = 0
	}
	switch final {
	case 'S': // SU
		n := csiArg(params, 0, 1)
		if err := s.flush(p, last, i); err != nil {
			return err
		}
		s.scrollUp(n)
	case 'r': // DECSTBM
		if priv {
			return nil
		}
		_, rows := s.vt.Size()
		top, bottom := csiArg(params, 0, 1)-1, csiArg(params, 1, rows)-1
		top, bottom = max(0, min(top, rows-1)), max(0, min(bottom, rows-1))
		if top > bottom {
			top, bottom = bottom, top
		}
		if bottom == rows-1 {
			bottom = -1
		}
		w.top, w.bottom = top, bottom
	case 'J': // ED
		arg := csiArg(params, 0, 0)
		if arg != 0 && arg != 2 {
			return nil
		}
		if err := s.flush(p, last, i); err != nil {
			return err
		}
		s.vt.Lock()
		cur, alt := s.vt.Cursor(), s.vt.Mode()&vt10x.ModeAltScreen != 0
		s.vt.Unlock()
		if !alt && (arg == 2 || cur.X == 0 && cur.Y == 0) {
			w.erase()
		}
	}
	return nil
}

// csiArg is vt10x's reading of parameter i: numbers separated by ';',
// up to the first that is not one; def when absent.
func csiArg(params []byte, i, def int) int {
	for k := 0; ; k++ {
		j := 0
		for j < len(params) && params[j] != ';' {
			j++
		}
		field := params[:j]
		if len(field) == 0 {
			return def // vt10x stops at an empty or non-numeric field
		}
		v := 0
		for _, c := range field {
			if c < '0' || c > '9' {
				return def
			}
			v = v*10 + int(c-'0')
			if v > 1<<20 {
				v = 1 << 20
			}
		}
		if k == i {
			return v
		}
		if j == len(params) {
			return def
		}
		params = params[j+1:]
	}
}

// erase marks that the whole main screen was erased here.
func (w *scrollWatch) erase() {
	if n := len(w.erases); n == 0 || w.erases[n-1] != len(w.rows) {
		w.erases = append(w.erases, len(w.rows))
	}
}

// lineFeed keeps the top row if the line feed about to run scrolls the
// whole main screen, and counts the line feeds after it that cannot.
func (s *Screen) lineFeed() {
	s.vt.Lock()
	defer s.vt.Unlock()
	_, rows := s.vt.Size()
	w := &s.scroll
	if !s.fullRegion(rows) {
		// Nothing scrolls off until a sequence changes the region or
		// the screen (and resets safe).
		if !w.exact {
			w.safe = 1 << 30
		}
		return
	}
	y := s.vt.Cursor().Y
	if y == rows-1 {
		s.keep(0, 1)
		return
	}
	// After this one the cursor is on row y+1; a line feed scrolls only
	// from the last row, and each moves it at most two rows.
	if !w.exact {
		w.safe = max(0, (rows-2-(y+1))/2)
	}
}

// scrollUp keeps the n top rows if SU scrolls the whole main screen.
func (s *Screen) scrollUp(n int) {
	s.vt.Lock()
	defer s.vt.Unlock()
	_, rows := s.vt.Size()
	if !s.fullRegion(rows) {
		return
	}
	s.keep(0, min(n, rows))
}

// fullRegion says whether a scroll now moves the whole main screen
// (under the vt lock).
func (s *Screen) fullRegion(rows int) bool {
	w := &s.scroll
	return w.top == 0 && (w.bottom < 0 || w.bottom == rows-1) && s.vt.Mode()&vt10x.ModeAltScreen == 0
}

// keep appends rows y..y+n-1 as text (under the vt lock).
func (s *Screen) keep(y, n int) {
	cols, _ := s.vt.Size()
	w := &s.scroll
	for ; n > 0; n, y = n-1, y+1 {
		s.line = s.line[:0]
		end := 0 // the length without trailing blanks
		for x := 0; x < cols; x++ {
			c := s.vt.Cell(x, y).Char
			if c == 0 || c == ' ' {
				s.line = append(s.line, ' ')
				continue
			}
			s.line = utf8.AppendRune(s.line, c)
			end = len(s.line)
		}
		if len(w.rows) >= maxScrolled {
			over := maxScrolled / 2
			w.rows = append(w.rows[:0], w.rows[over:]...)
			w.dropped += over
			k := 0
			for _, e := range w.erases {
				if e >= over {
					w.erases[k] = e - over
					k++
				}
			}
			w.erases = w.erases[:k]
		}
		w.rows = append(w.rows, string(s.line[:end]))
	}
}
