package terminal

import (
	"sync"
	"unicode/utf8"
)

// outputBuffer keeps the last limit bytes written to it. When it overflows
// it drops bytes from the front, advancing the cut to the next UTF-8 rune
// start so that a multi-byte character is never split (valid UTF-8 input
// stays valid). It is safe for concurrent use.
//
// Storage is one slice whose live data is buf[off:]. Dropping is just
// advancing off; the dead prefix is compacted away only once it is at least
// as large as the live data, so each byte is copied O(1) times amortized and
// capacity stays within a small multiple of limit.
type outputBuffer struct {
	mu        sync.Mutex
	limit     int
	buf       []byte
	off       int
	truncated bool
}

func newOutputBuffer(limit int) *outputBuffer {
	if limit <= 0 {
		panic("terminal: output buffer limit must be positive")
	}
	return &outputBuffer{limit: limit}
}

// Write implements io.Writer; it never fails.
func (b *outputBuffer) Write(p []byte) (int, error) {
	n := len(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(p) >= b.limit {
		// Only a tail of p survives; skip copying the rest.
		cut := len(p) - b.limit
		if cut > 0 || len(b.buf) > b.off {
			b.truncated = true
		}
		if b.truncated {
			cut = runeStart(p, cut)
		}
		b.buf = append(b.buf[:0], p[cut:]...)
		b.off = 0
		return n, nil
	}
	if live := len(b.buf) - b.off; b.off > 0 && b.off >= live {
		copy(b.buf, b.buf[b.off:])
		b.buf = b.buf[:live]
		b.off = 0
	}
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.off - b.limit; over > 0 {
		b.off += over
		b.truncated = true
	}
	if b.truncated {
		// Also drops continuation bytes arriving after their lead byte
		// was cut by an earlier write.
		b.off = runeStart(b.buf, b.off)
	}
	return n, nil
}

// runeStart returns the first index >= i that does not fall inside a
// multi-byte rune. At most utf8.UTFMax-1 continuation bytes are skipped, so
// invalid input cannot make it drop more than that.
func runeStart(p []byte, i int) int {
	for n := 0; n < utf8.UTFMax-1 && i < len(p) && !utf8.RuneStart(p[i]); n++ {
		i++
	}
	return i
}

// snapshot returns the kept output and whether anything was dropped. With
// trimPartial, an incomplete rune at the very end (its remaining bytes not
// read from the pipe yet) is left out so a running command's output is
// never reported with a broken last character.
func (b *outputBuffer) snapshot(trimPartial bool) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	live := b.buf[b.off:]
	if trimPartial {
		live = live[:len(live)-partialSuffix(live)]
	}
	return string(live), b.truncated
}

// partialSuffix returns the length of an incomplete (but so far valid)
// multi-byte sequence at the end of p, or 0.
func partialSuffix(p []byte) int {
	for i := 1; i < utf8.UTFMax && i <= len(p); i++ {
		c := p[len(p)-i]
		if !utf8.RuneStart(c) {
			continue
		}
		if c >= utf8.RuneSelf && !utf8.FullRune(p[len(p)-i:]) {
			return i
		}
		return 0
	}
	return 0
}
