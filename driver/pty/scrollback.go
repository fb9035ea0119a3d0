package pty

import "strings"

// maxScrollback bounds the rows kept (tmux's default history-limit is
// 2000; an agent's transcript is worth more).
const maxScrollback = 10000

// scrollback keeps the transcript rows that scroll off the top of the
// screen, which the emulator drops: with them, the record of a session
// that ran longer than a screen is whole. It compares each frame's
// transcript with the previous one and, when the new one starts with the
// old one's tail, keeps the rows that went off the top.
type scrollback struct {
	prev    []string
	lines   []string
	dropped int // rows beyond maxScrollback, oldest first
}

func (b *scrollback) observe(cur []string) {
	cur = trimBlankTail(cur)
	prev := b.prev
	b.prev = append(b.prev[:0:0], cur...)
	if k := scrolledBy(prev, cur); k > 0 {
		b.lines = append(b.lines, prev[:k]...)
		if over := len(b.lines) - maxScrollback; over > 0 {
			b.lines = append(b.lines[:0:0], b.lines[over:]...)
			b.dropped += over
		}
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
