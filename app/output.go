package app

import (
	"errors"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/tai-dev/tai/exitcode"
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
// is wrapped in a checkedOut, and in a closedOut by tai run.
func osFile(v any) (*os.File, bool) {
	switch f := v.(type) {
	case *os.File:
		return f, true
	case *closedOut:
		return osFile(f.w)
	case *checkedOut:
		return osFile(f.w)
	}
	return nil, false
}

// checkedOut is the process's stdout, keeping the first write error other
// than a closed pipe: a full disk or a closed descriptor loses the output,
// and the command must not then exit 0 (a CI job would believe it). A
// closed pipe is the reader's choice (`| head`), not a failure.
type checkedOut struct {
	w io.Writer

	mu   sync.Mutex
	err  error
	pipe bool // a write failed with EPIPE
}

func (c *checkedOut) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		c.mu.Lock()
		c.pipe = true
		c.mu.Unlock()
	}
	if err != nil && !errors.Is(err, syscall.EPIPE) {
		c.mu.Lock()
		if c.err == nil {
			c.err = err
		}
		c.mu.Unlock()
	}
	return n, err
}

// closedPipe says whether a write found the reader gone.
func (c *checkedOut) closedPipe() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pipe
}

// failed is the first write error, nil if none.
func (c *checkedOut) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// outputError is a command's output that could not be written.
type outputError struct{ err error }

func (e *outputError) Error() string { return "writing the output: " + e.err.Error() }
func (e *outputError) Unwrap() error { return e.err }

// OutputChecked is err with the failure of the command's writes to
// std.Out, if any: alone when the command itself succeeded, beside its own
// error (whose exit code it keeps) when not.
func OutputChecked(std IO, err error) error {
	c, ok := std.Out.(*checkedOut)
	if !ok {
		return err
	}
	if c.closedPipe() && (err == nil || errors.Is(err, syscall.EPIPE) && exitcode.Of(err) != exitcode.OutputClosed) {
		// The reader left (`tai agents | head -1`): its choice, not an
		// error to report; the code is SIGPIPE's, as tai run's, so that a
		// pipeline sees the output was not all read.
		return exitcode.Said(exitcode.OutputClosed)
	}
	werr := c.failed()
	if werr == nil {
		return err
	}
	var pe *os.PathError
	if errors.As(werr, &pe) {
		werr = pe.Err // "no space left on device", not "write /dev/stdout: …"
	}
	if err == nil {
		return &outputError{werr}
	}
	var oe *outputError
	if errors.As(err, &oe) {
		return err
	}
	return exitcode.With(exitcode.Of(err), errors.Join(err, &outputError{werr}))
}

// closedStdout is the writer of a stdout tai was started without
// (`tai … >&-`): every write fails.
type closedStdout struct{}

func (closedStdout) Write([]byte) (int, error) { return 0, errStdoutClosed }

var errStdoutClosed = errors.New("stdout is closed")
