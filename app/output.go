package app

import (
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
)

// closedOut is stdout that notices its reader leaving (`tai run … | head
// -3`): the first write that fails with EPIPE calls stop, which ends the
// run cleanly (turn cancelled, audit log and session record finished,
// exit 141) instead of the process dying of SIGPIPE mid-turn. Later writes
// are dropped. cmd/tai asks for SIGPIPE (signal.Notify) so that the runtime
// returns EPIPE instead of killing tai; a notified signal is reset to the
// default in the agents tai starts, unlike an ignored one.
type closedOut struct {
	w    io.Writer
	stop func()

	mu     sync.Mutex
	closed bool
}

func (c *closedOut) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, syscall.EPIPE
	}
	n, err := c.w.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		c.closed = true
		go c.stop() // never under the renderer's lock
	}
	return n, err
}

// osFile is the file behind a standard stream, for terminal checks: stdout
// is wrapped in a closedOut.
func osFile(v any) (*os.File, bool) {
	switch f := v.(type) {
	case *os.File:
		return f, true
	case *closedOut:
		return osFile(f.w)
	}
	return nil, false
}
