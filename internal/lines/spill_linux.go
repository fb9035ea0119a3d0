package lines

import (
	"strings"
	"syscall"
	"unsafe"
)

// spill holds a line too long for the accumulator outside the Go heap,
// in an anonymous mapping that only occupies memory as it is written. When
// the line is complete it is copied into one exactly sized slice, and each
// copied stretch of the mapping is given back at once: the line's bytes
// exist about once, never twice, and no doubling slice leaves garbage of
// sizes the heap cannot reuse.
type spill struct {
	mem []byte
	n   int
}

// spillStep is how much is copied before that stretch is given back.
const spillStep = 4 << 20

func newSpill(max int64) *spill {
	mem, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil // the heap will do
	}
	return &spill{mem: mem}
}

func (s *spill) write(p []byte) { s.n += copy(s.mem[s.n:], p) }

// take returns the line as a heap slice and releases the mapping.
//
// The slice is not zeroed first. A make of it is whenever it begins in
// pages the heap used before, and zeroing 100 MiB touched all of it while
// the mapping still held the line: twice the line in memory, one run in
// ten. strings.Builder's Grow is the standard library's one allocation
// that skips the zeroing. Its buffer is a []byte; the string made of it is
// only the way to reach that buffer and is dropped at once, so no string
// that anything reads is ever written to.
func (s *spill) take() []byte {
	var b strings.Builder
	b.Grow(s.n)
	for off := 0; off < s.n; off += spillStep {
		end := min(off+spillStep, s.n)
		b.Write(s.mem[off:end])
		if end-off == spillStep { // whole pages: give them back now
			_ = syscall.Madvise(s.mem[off:end], syscall.MADV_DONTNEED)
		}
	}
	s.release()
	str := b.String()
	return unsafe.Slice(unsafe.StringData(str), len(str))
}

func (s *spill) release() {
	if s.mem != nil {
		_ = syscall.Munmap(s.mem)
		s.mem = nil
	}
}
