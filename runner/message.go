package runner

import "strings"

// ropeBig is the length from which a chunk is kept as it came rather than
// copied: a single 100 MiB chunk is never copied at all.
const ropeBig = 4 << 10

// ropeBlockMin and ropeBlockMax bound the blocks small chunks are copied
// into: the first is small, for the one-line reply, and each next one
// twice the last.
const ropeBlockMin, ropeBlockMax = 1 << 10, 32 << 10

// rope is a message as it streams in. A reply comes as thousands of small
// chunks: kept each as a string, with its header in a growing slice, they
// took three times the text and were as many objects for the collector
// to scan. Copied into blocks, they take the text and at most one block's
// slack, and no block is copied again as the message grows.
type rope struct {
	parts []ropePart
	n     int // bytes in all parts
}

// ropePart is a big chunk (s) or a block of small ones (b); never both.
type ropePart struct {
	s string
	b []byte
}

func (p ropePart) len() int { return len(p.s) + len(p.b) }

func (r *rope) Len() int { return r.n }

func (r *rope) add(text string) {
	if text == "" {
		return
	}
	r.n += len(text)
	if len(text) >= ropeBig {
		r.parts = append(r.parts, ropePart{s: text})
		return
	}
	if k := len(r.parts) - 1; k >= 0 && r.parts[k].b != nil && cap(r.parts[k].b)-len(r.parts[k].b) >= len(text) {
		r.parts[k].b = append(r.parts[k].b, text...)
		return
	}
	size := ropeBlockMin
	for i := len(r.parts) - 1; i >= 0; i-- {
		if b := r.parts[i].b; b != nil {
			size = min(2*cap(b), ropeBlockMax)
			break
		}
	}
	b := make([]byte, 0, size)
	r.parts = append(r.parts, ropePart{b: append(b, text...)})
}

// truncate keeps the first n bytes.
func (r *rope) truncate(n int) {
	for len(r.parts) > 0 && r.n > n {
		k := len(r.parts) - 1
		p := &r.parts[k]
		if l := p.len(); r.n-l >= n {
			r.n -= l
			*p = ropePart{} // let go of its text
			r.parts = r.parts[:k]
			continue
		}
		keep := p.len() - (r.n - n)
		if p.b != nil {
			p.b = p.b[:keep]
		} else {
			p.s = p.s[:keep]
		}
		r.n = n
	}
}

// endsNL reports whether the text ends in a newline or is empty.
func (r *rope) endsNL() bool {
	if len(r.parts) == 0 {
		return true
	}
	p := r.parts[len(r.parts)-1]
	if p.b != nil {
		return p.b[len(p.b)-1] == '\n'
	}
	return p.s[len(p.s)-1] == '\n'
}

func (r *rope) reset() {
	clear(r.parts)
	r.parts, r.n = r.parts[:0], 0
}

// String joins the parts; a message that is one big chunk is that chunk.
func (r *rope) String() string {
	if len(r.parts) == 1 && r.parts[0].b == nil {
		return r.parts[0].s
	}
	var sb strings.Builder
	sb.Grow(r.n)
	for _, p := range r.parts {
		if p.b != nil {
			sb.Write(p.b)
		} else {
			sb.WriteString(p.s)
		}
	}
	return sb.String()
}
