package pty

import (
	"slices"
	"strings"
)

// replyStream streams a turn's reply while the agent writes it. A row goes
// out once it is complete (another row follows it) and reads the same in
// two frames in a row, so a half-drawn row or one the TUI is about to
// rewrite is held back. The end of the turn sends the rest; if the TUI
// redrew what went out (markdown rendered at the end, a row replaced), it
// sends the whole reply again, marked replace, so the message is exactly
// the final screen's.
type replyStream struct {
	id   string
	sent string   // the text sent so far
	prev []string // the complete rows of the last frame
}

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
	if n == 0 {
		return ""
	}
	stable := strings.Join(complete[:n], "\n") + "\n"
	if len(stable) <= len(r.sent) || !strings.HasPrefix(stable, r.sent) {
		return "" // nothing new, or it diverged: the end of the turn settles it
	}
	delta := stable[len(r.sent):]
	r.sent = stable
	return delta
}

// final is the chunk that completes the message at the end of the turn:
// the rest of reply, or all of it to replace what went out. A reply longer
// than the screen has scrolled its first rows off by then: if what went
// out ends with at least minOverlap rows the final screen starts with,
// those rows are one and the same, and only what follows them is new.
func (r *replyStream) final(reply string) (text string, replace bool) {
	if strings.HasPrefix(reply, r.sent) {
		return reply[len(r.sent):], false
	}
	sent := strings.Split(strings.TrimSuffix(r.sent, "\n"), "\n")
	rows := strings.Split(reply, "\n")
	for k := 1; len(sent)-k >= minOverlap; k++ {
		tail := sent[k:]
		if len(tail) < len(rows) && slices.Equal(rows[:len(tail)], tail) {
			return strings.Join(rows[len(tail):], "\n"), false
		}
	}
	return reply, true
}

// minOverlap is how many rows must match to take a reply as scrolled, not
// redrawn.
const minOverlap = 3
