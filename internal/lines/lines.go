// Package lines splits a byte stream (an agent's stdout, a parent's stdin)
// into lines of bounded length, without ever buffering a longer line
// whole: the protocols tai speaks are one JSON value per line, and a
// broken or hostile peer must not make tai allocate without end.
package lines

import (
	"bufio"
	"io"
	"strings"
	"unicode/utf8"
)

const (
	// keepAccBytes bounds the line accumulator kept between lines, so one
	// huge line does not pin its memory.
	keepAccBytes = 1 << 20
	// SampleBytes is the most a skipped line's sample holds.
	SampleBytes = 200
)

// Reader splits a stream into lines of at most max bytes without ever
// buffering a longer line whole.
type Reader struct {
	br  *bufio.Reader
	max int64
	acc []byte // accumulates lines longer than the bufio buffer
	// big holds a line past keepAccBytes (acc keeps its start, for the
	// sample of an oversize line).
	big *spill
}

// New reads r through a buffer of bufSize bytes; lines over max bytes are
// skipped.
func New(r io.Reader, bufSize int, max int64) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, bufSize), max: max}
}

// Next returns the next line without its '\n'. The line is only valid until
// the following call. A line longer than max is discarded through its
// newline and reported as skipped (its length) with a sample of its start.
// A final unterminated line is returned together with io.EOF.
func (lr *Reader) Next() (line []byte, skipped int64, sample string, err error) {
	if cap(lr.acc) > keepAccBytes {
		lr.acc = nil
	}
	lr.acc = lr.acc[:0]
	n := int64(0)
	for {
		frag, rerr := lr.br.ReadSlice('\n')
		complete := rerr == nil
		if complete {
			frag = frag[:len(frag)-1]
		}
		if n += int64(len(frag)); n > lr.max {
			sample = Sample(lr.acc, frag)
			lr.dropBig()
			for rerr == bufio.ErrBufferFull {
				frag, rerr = lr.br.ReadSlice('\n')
				if rerr == nil {
					frag = frag[:len(frag)-1]
				}
				n += int64(len(frag))
			}
			return nil, n, sample, rerr
		}
		if complete && len(lr.acc) == 0 {
			return frag, 0, "", nil // common case: no copy
		}
		lr.add(frag)
		switch {
		case complete:
			return lr.line(), 0, "", nil
		case rerr == bufio.ErrBufferFull:
			continue
		case rerr == io.EOF && n > 0:
			return lr.line(), 0, "", io.EOF
		default:
			lr.dropBig()
			return nil, 0, "", rerr
		}
	}
}

// add appends a fragment of a long line.
func (lr *Reader) add(frag []byte) {
	if lr.big != nil {
		lr.big.write(frag)
		return
	}
	lr.acc = append(lr.acc, frag...)
	if len(lr.acc) > keepAccBytes {
		if lr.big = newSpill(lr.max); lr.big != nil {
			lr.big.write(lr.acc)
		}
	}
}

// line returns the accumulated line.
func (lr *Reader) line() []byte {
	if lr.big == nil {
		return lr.acc
	}
	lr.acc, lr.big = lr.big.take(), nil // too big to keep: Next drops it
	return lr.acc
}

func (lr *Reader) dropBig() {
	if lr.big != nil {
		lr.big.release()
		lr.big = nil
	}
}

// Detach returns the line the last Next returned as memory the caller owns:
// a line too long to keep the accumulator for is handed over whole, any
// other line is copied (it sits in a buffer the next call reuses).
func (lr *Reader) Detach(line []byte) []byte {
	if len(line) > 0 && len(lr.acc) > 0 && &line[0] == &lr.acc[0] && cap(lr.acc) > keepAccBytes {
		lr.acc = nil
		return line
	}
	return append([]byte(nil), line...)
}

// Sample returns up to SampleBytes from the start of a+b as valid UTF-8.
func Sample(a, b []byte) string {
	var s []byte
	if len(a) >= SampleBytes {
		s = a[:SampleBytes]
	} else {
		s = append(append(make([]byte, 0, SampleBytes), a...), b[:min(len(b), SampleBytes-len(a))]...)
	}
	if len(s) == SampleBytes { // drop a rune cut in half by the limit
		for i := 1; i <= utf8.UTFMax && i <= len(s); i++ {
			if utf8.RuneStart(s[len(s)-i]) {
				if !utf8.FullRune(s[len(s)-i:]) {
					s = s[:len(s)-i]
				}
				break
			}
		}
	}
	return strings.ToValidUTF8(string(s), "\uFFFD")
}
