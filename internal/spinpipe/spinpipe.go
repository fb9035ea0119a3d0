// Package spinpipe reads an agent's output pipe without sleeping between
// lines while the agent streams.
//
// An agent streaming updates writes a line every few microseconds. A
// reader faster than the agent finds the pipe empty after each line and
// sleeps in the poller, and each next line then costs a wake-up on both
// sides: the agent's write wakes the reader (an inter-processor interrupt
// on another core) and the reader's thread is scheduled back in. Measured
// on the 2-core machine with the built-in agent's flood, that made the
// agent itself some 8% slower under tai than under a bare decode loop
// that is slower per line. A Reader that finds the pipe empty asks again
// a bounded number of times, yielding to other goroutines in between,
// before it waits on the poller: a streaming agent's next line is picked
// up without either side sleeping, and an agent that has gone quiet costs
// one bounded round of tries before the reader sleeps as before.
//
// The reader tries only while the agent streams ("hot"): while the pipe
// had data when asked, or the last wait was short (HotGap). An agent
// answering one request at a time, or starting up, or thinking, is waited
// for at once: a round of tries then only took a core from it (on a VM
// where a read(2) costs 19 µs, a round of 128 was 2.4 ms of every
// exchange of tai's start-up, against an agent starting on the other
// core). With one CPU there is nobody to write while the reader tries, so
// it does not.
package spinpipe

import (
	"errors"
	"io"
	"os"
	"runtime"
	"syscall"
	"time"

	"github.com/coder/quartz"
)

// Tries is how many times Read asks an empty pipe again before it waits.
// One try is a non-blocking read(2) and a yield, about half a microsecond
// here: the round covers the gap between a streaming agent's lines many
// times over, and costs an agent gone quiet some 60 µs. Measured with the
// flood (stream-json, median of 10 interleaved rounds against the bare
// loop): 0 tries 1.05×, 16 1.02×, 64 0.92×, 128 0.91×, 256 0.88×.
const Tries = 128

// HotGap is the longest wait after which the reader still takes the agent
// for streaming: a flood's lines come microseconds apart, an answered
// permission within a fraction of a millisecond; a model's next token, a
// request's answer or an agent's start take longer.
const HotGap = time.Millisecond

// Reader reads an *os.File (a pipe), trying an empty pipe again before
// waiting on it.
type Reader struct {
	f    *os.File
	rc   syscall.RawConn           // nil: read f plainly
	wait func([]byte) (int, error) // f.Read: a read that waits
	// try is r.tryRead as a func, made once: a closure made per try
	// escaped through RawConn.Read, with what it wrote, and cost three
	// allocations a try (half of tai's allocations in the flood).
	try func(fd uintptr) bool
	// The read try reads into, and what it got.
	p    []byte
	n    int
	rerr error
	// hot: the agent streams, so an empty pipe is tried again before the
	// wait (see the package doc).
	hot   bool
	clock quartz.Clock
}

// New returns a Reader of f. Where f has no raw descriptor to try (not
// pollable), or the process may run on one CPU only, it reads f plainly.
func New(f *os.File) *Reader {
	r := &Reader{f: f, wait: f.Read, clock: quartz.NewReal()}
	if runtime.NumCPU() < 2 {
		return r
	}
	if rc, err := f.SyscallConn(); err == nil {
		r.rc, r.try = rc, r.tryRead
	}
	return r
}

// tryRead reads r.p from fd once, without waiting.
func (r *Reader) tryRead(fd uintptr) bool {
	r.n, r.rerr = syscall.Read(int(fd), r.p)
	return true // never wait here: that is f.Read's, in Read
}

// Read reads into p as f.Read does (io.EOF at the end), trying an empty
// pipe once, or while the agent streams up to Tries times, first.
func (r *Reader) Read(p []byte) (int, error) {
	if r.rc == nil || len(p) == 0 {
		return r.wait(p)
	}
	r.p = p
	defer func() { r.p = nil }() // p is the caller's again
	tries := 1
	if r.hot {
		tries = Tries
	}
	for i := range tries {
		err := r.rc.Read(r.try)
		n, rerr := r.n, r.rerr
		r.rerr = nil
		if err != nil {
			return r.f.Read(p) // closed: f.Read says so as os says it
		}
		switch {
		case rerr == nil && n > 0:
			r.hot = true
			return n, nil
		case rerr == nil:
			return 0, io.EOF
		case errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EINTR):
			if i+1 < tries {
				runtime.Gosched()
			}
		default:
			return 0, &os.PathError{Op: "read", Path: r.f.Name(), Err: rerr}
		}
	}
	t0 := r.clock.Now()
	n, err := r.wait(p)
	r.hot = r.clock.Since(t0) < HotGap
	return n, err
}

// Close closes f; a Read waiting on it returns.
func (r *Reader) Close() error { return r.f.Close() }
