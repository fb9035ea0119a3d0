package lines

import "syscall"

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
func (s *spill) take() []byte {
	out := make([]byte, s.n)
	for off := 0; off < s.n; off += spillStep {
		end := min(off+spillStep, s.n)
		copy(out[off:end], s.mem[off:end])
		if end-off == spillStep { // whole pages: give them back now
			_ = syscall.Madvise(s.mem[off:end], syscall.MADV_DONTNEED)
		}
	}
	s.release()
	return out
}

func (s *spill) release() {
	if s.mem != nil {
		_ = syscall.Munmap(s.mem)
		s.mem = nil
	}
}
