package pty

import (
	"strings"

	"github.com/tai-dev/tai/driver/pty/term"
)

// maxScrollback bounds the rows kept (tmux's default history-limit is
// 2000; an agent's transcript is worth more).
const maxScrollback = 10000

// scrollback keeps the transcript rows that scroll off the top of the
// screen, which the emulator's screen drops: with them, the record of a
// session that ran longer than a screen is whole, and so is a reply.
//
// Two sources feed it. The emulator (term.Screen.TakeScrolled) keeps each
// row a line feed pushes off the top of the main screen, however rarely
// the screen is read; that is the whole story for TUIs that print and
// let the terminal scroll (Ink's static output, a shell). TUIs that
// scroll by drawing their rows one higher (ratatui in the alternate
// screen, codex's pane over its viewport) scroll nothing off, and for
// them each frame's transcript is compared with the previous one: when
// the new one starts with the old one's tail, the rows that went off the
// top are kept. A read after which the emulator reported rows takes them
// and not the diff, which would see the same shift again; the diff works
// only between two reads with nothing scrolled off in between.
//
// A TUI that erases the screen and repaints its whole transcript (Ink
// once its output outgrows the screen, faketui) pushes the same rows off
// again at each repaint. The rows after an erase are set against what is
// kept: once the first three that are not blank are in, they are looked
// for in the kept rows, and where they match, the repaint's rows are
// taken as that history again and only those past its end are added. A
// repaint that differs from what was kept (a row rewritten) is kept from
// where it differs on: a row twice rather than a row lost.
type scrollback struct {
	prev    []string
	lines   []string
	dropped int // rows beyond maxScrollback, oldest first

	// A repaint: its rows not yet placed (pending), or the index, dropped
	// rows counted, of the kept row its next row repeats (replay >= 0).
	repainting bool
	pending    []string
	pendText   int // the pending rows that are not blank
	replay     int
}

// take adds the rows the emulator saw leave the top since the last read.
func (b *scrollback) take(sc term.Scrolled) {
	e := 0
	for i, row := range sc.Rows {
		for e < len(sc.Erases) && sc.Erases[e] == i {
			b.erased()
			e++
		}
		b.row(row)
	}
	if e < len(sc.Erases) {
		b.erased()
	}
}

// erased starts a repaint.
func (b *scrollback) erased() {
	b.settle()
	b.repainting, b.pending, b.pendText, b.replay = true, b.pending[:0], 0, -1
}

func (b *scrollback) row(r string) {
	switch {
	case !b.repainting:
		b.add(r)
	case b.replay >= 0:
		if k := b.replay - b.dropped; k >= 0 && k < len(b.lines) && b.lines[k] == r {
			b.replay++
			return
		}
		b.repainting = false // past the history, or it differs from here on
		b.add(r)
	default:
		b.pending = append(b.pending, r)
		if strings.TrimSpace(r) != "" {
			b.pendText++
		}
		if b.pendText >= repaintMatch {
			b.place(repaintMatch)
		}
	}
}

// repaintMatch is how many rows that are not blank place a repaint.
const repaintMatch = 3

// settle places a repaint's rows still pending (at the end of a turn and
// of the session, or at the next erase), on fewer rows if need be.
func (b *scrollback) settle() {
	if b.repainting && b.replay < 0 && len(b.pending) > 0 {
		b.place(1)
	}
}

// place finds the pending rows of a repaint in the kept rows: the first
// place where they (or the kept rows' end) match, on at least need rows
// that are not blank (fewer if the repaint has fewer). Unmatched, they
// are new.
func (b *scrollback) place(need int) {
	seg := b.pending
	need = max(1, min(need, b.pendText))
	for k := range b.lines {
		if b.lines[k] != seg[0] {
			continue
		}
		o := min(len(seg), len(b.lines)-k)
		if !equalLines(b.lines[k:k+o], seg[:o]) || nonBlank(seg[:o]) < need {
			continue
		}
		b.pending, b.pendText = b.pending[:0], 0
		if o < len(seg) {
			b.repainting = false
			for _, r := range seg[o:] {
				b.add(r)
			}
			return
		}
		b.replay = b.dropped + k + o
		return
	}
	b.repainting = false
	for _, r := range seg {
		b.add(r)
	}
	b.pending, b.pendText = b.pending[:0], 0
}

func nonBlank(rows []string) int {
	n := 0
	for _, r := range rows {
		if strings.TrimSpace(r) != "" {
			n++
		}
	}
	return n
}

func (b *scrollback) add(rows ...string) {
	b.lines = append(b.lines, rows...)
	if over := len(b.lines) - maxScrollback; over > 0 {
		b.lines = append(b.lines[:0:0], b.lines[over:]...)
		b.dropped += over
	}
}

// observe takes a frame's transcript; scrolled says the emulator reported
// rows since the last frame (which then account for any shift).
func (b *scrollback) observe(cur []string, scrolled bool) {
	cur = trimBlankTail(cur)
	prev := b.prev
	b.prev = append(b.prev[:0:0], cur...)
	if scrolled {
		return
	}
	if k := scrolledBy(prev, cur); k > 0 {
		b.add(prev[:k]...)
	}
}

// scrolledBy is by how many rows cur is prev moved up: the smallest k for
// which prev[k:] reappears at the top of cur. The rows at the bottom may
// have changed meanwhile (a line still streaming, a spinner), so half of
// the remaining rows matching in a row, and at least two that are not
// blank, is enough; k = 0 (the top unmoved) is tried first.
func scrolledBy(prev, cur []string) int {
	for k := 0; k < len(prev); k++ {
		rest := prev[k:]
		n, text := 0, 0
		for n < len(rest) && n < len(cur) && rest[n] == cur[n] {
			if strings.TrimSpace(rest[n]) != "" {
				text++
			}
			n++
		}
		if text >= 2 && 2*n >= len(rest) {
			return k
		}
	}
	return 0
}

func trimBlankTail(lines []string) []string {
	end := len(lines)
	for end > 0 && strings.TrimSpace(lines[end-1]) == "" {
		end--
	}
	return lines[:end]
}

// total is how many rows have scrolled off so far, dropped ones included.
func (b *scrollback) total() int { return b.dropped + len(b.lines) }

// since is the rows that scrolled off after total was n (as many of them
// as are kept).
func (b *scrollback) since(n int) []string {
	k := n - b.dropped
	if k < 0 {
		k = 0
	}
	if k > len(b.lines) {
		return nil
	}
	return b.lines[k:]
}
