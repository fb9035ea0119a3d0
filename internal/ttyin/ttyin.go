// Package ttyin is the one reader of a terminal's input. A goroutine reads
// the terminal for its whole life and hands what is typed to whoever asks
// now: chat's line editor, a permission question, a form, a fleet's
// question. A reader that gives up (a question cancelled by Ctrl-C) then
// leaves what is typed after it to the next one, where a read of its own
// still pending on the terminal would swallow it.
package ttyin

import (
	"context"
	"io"
	"sync"
)

// Input is a terminal's input, shared by everyone who reads it.
type Input struct {
	r     io.Reader
	start sync.Once
	ch    chan []byte // what the reader read, handed to one asker

	mu      sync.Mutex
	pending []byte // given back (Unread) or left over from a Read
	err     error  // the reader's error, once the channel is closed
}

// New returns the shared input of r, a terminal (or any reader, in tests).
// Nothing is read before the first ask.
func New(r io.Reader) *Input { return &Input{r: r} }

// Fd is the terminal's descriptor, for raw mode; ok is false when the input
// is not a file.
func (in *Input) Fd() (fd uintptr, ok bool) {
	f, ok := in.r.(interface{ Fd() uintptr })
	if !ok {
		return 0, false
	}
	return f.Fd(), true
}

func (in *Input) begin() {
	in.start.Do(func() {
		in.ch = make(chan []byte)
		go in.read()
	})
}

func (in *Input) read() {
	buf := make([]byte, 256)
	for {
		n, err := in.r.Read(buf)
		if n > 0 {
			in.ch <- append([]byte(nil), buf[:n]...)
		}
		if err != nil {
			in.mu.Lock()
			in.err = err
			in.mu.Unlock()
			close(in.ch)
			return
		}
	}
}

// Next returns what was typed and not yet taken, waiting for it when there
// is nothing: the bytes given back first, else the reader's next read. It
// returns ctx's error when ctx ends first, taking nothing.
func (in *Input) Next(ctx context.Context) ([]byte, error) {
	in.begin()
	in.mu.Lock()
	if len(in.pending) > 0 {
		b := in.pending
		in.pending = nil
		in.mu.Unlock()
		return b, nil
	}
	in.mu.Unlock()
	select {
	case b, ok := <-in.ch:
		if !ok {
			in.mu.Lock()
			defer in.mu.Unlock()
			return nil, in.err
		}
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Unread gives b back, ahead of anything else: the part of what Next
// returned that its asker did not use.
func (in *Input) Unread(b []byte) {
	if len(b) == 0 {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.pending = append(append([]byte(nil), b...), in.pending...)
}

// Discard drops what was typed and not yet taken: keys typed before a
// question was on the screen must not answer it.
func (in *Input) Discard() {
	in.mu.Lock()
	in.pending = nil
	in.mu.Unlock()
	in.begin()
	for {
		select {
		case _, ok := <-in.ch:
			if !ok {
				return
			}
		default:
			return
		}
	}
}

// Read implements io.Reader, for a reader that cannot be cancelled (the
// line editor): what does not fit in p is kept for the next asker.
func (in *Input) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	b, err := in.Next(context.Background())
	if err != nil {
		return 0, err
	}
	n := copy(p, b)
	in.Unread(b[n:])
	return n, nil
}
