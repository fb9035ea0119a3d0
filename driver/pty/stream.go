package pty

import (
	"slices"
	"strings"
)

// replyStream streams a turn's reply while the agent writes it. A row goes
// out once it is complete (another row follows it) and reads the same in
// two frames in a row, so a half-drawn row or one the TUI is about to
// rewrite is held back. A reply longer than the screen scrolls its first
// rows off: the rows on screen then continue what went out where they
// overlap it. The end of the turn sends the rest; if the TUI redrew what
// went out (markdown rendered at the end, a row replaced), it sends the
// whole reply again, marked replace, so the message is exactly the final
// screen's.
type replyStream struct {
	id   string
	sent []string // the rows sent so far, each followed by a newline
	prev []string // the complete rows of the last frame
}

// minOverlap is how many rows must match to take a reply as scrolled, not
// redrawn.
const minOverlap = 3

// next takes the reply as the screen shows it now and returns what can go
// out (empty: nothing yet).
func (r *replyStream) next(reply string) string {
	rows := strings.Split(reply, "\n")
	complete := rows[:len(rows)-1]
	n := 0
	for n < len(complete) && n < len(r.prev) && complete[n] == r.prev[n] {
		n++
	}
	r.prev = append(r.prev[:0], complete...)
	rest, ok := r.continuation(complete[:n])
	if !ok || len(rest) == 0 {
		return "" // nothing new, or it diverged: the end of the turn settles it
	}
	r.sent = append(r.sent, rest...)
	return strings.Join(rest, "\n") + "\n"
}

// continuation returns the rows that follow what was sent, if rows go on
// from it: they start with all of it, or (the first ones scrolled off)
// with at least minOverlap of its last rows.
func (r *replyStream) continuation(rows []string) ([]string, bool) {
	n := len(r.sent)
	if len(rows) >= n && slices.Equal(rows[:n], r.sent) {
		return rows[n:], true
	}
	for k := 1; n-k >= minOverlap; k++ {
		tail := r.sent[k:]
		if len(rows) >= len(tail) && slices.Equal(rows[:len(tail)], tail) {
			return rows[len(tail):], true
		}
	}
	return nil, false
}

// final is the chunk that completes the message at the end of the turn:
// the rest of reply, or the whole message to replace what went out.
func (r *replyStream) final(reply string) (text string, replace bool) {
	rest, ok := r.continuation(strings.Split(reply, "\n"))
	switch {
	case !ok:
		return reply, true
	case len(rest) == 0 && len(r.sent) > 0:
		// The reply ends with the last row sent: the message is what went
		// out, without the newline that followed it.
		return strings.Join(r.sent, "\n"), true
	}
	return strings.Join(rest, "\n"), false
}
