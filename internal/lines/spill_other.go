//go:build !linux

package lines

// spill is the heap's accumulator where no anonymous mapping is used.
type spill struct{ buf []byte }

func newSpill(int64) *spill { return &spill{} }

func (s *spill) write(p []byte) { s.buf = append(s.buf, p...) }
func (s *spill) take() []byte   { return s.buf }
func (s *spill) release()       { s.buf = nil }
