// Package testutil holds what several packages' tests share and cannot
// import from e2e/internal.
package testutil

import (
	"bytes"
	"sync"
)

// Buffer collects what a running process or goroutine writes (a terminal,
// a pipe, a log) for tests that read it while it is still being written.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
