package chat

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
)

// syncBuf is the terminal: written by the editor and by Above's writers.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Text written while a line is typed goes above it: the prompt's line is
// cleared, each whole line written with \r\n, the prompt and the typing
// redrawn; the end of a line not yet ended waits. Outside ReadLine it
// writes through.
func TestAbove(t *testing.T) {
	in, keys := io.Pipe()
	var term syncBuf
	e := &Editor{In: in, Out: &term}
	above := e.Above(&term)
	if _, err := io.WriteString(above, "before\n"); err != nil {
		t.Fatal(err)
	}
	typed := make(chan struct{})
	done := make(chan string)
	go func() {
		l, _ := e.ReadLine("> ")
		done <- l
	}()
	go func() {
		_, _ = io.WriteString(keys, "hi")
		close(typed)
	}()
	<-typed
	for !strings.HasSuffix(term.String(), "> hi\x1b[K") { // the editor drew what was typed
	}
	n := len(term.String())
	for _, w := range []string{"one\ntw", "o\n", "half"} {
		if _, err := io.WriteString(above, w); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := term.String()[n:], "\r\x1b[Kone\r\n\r> hi\x1b[K\r\x1b[Ktwo\r\n\r> hi\x1b[K"; got != want {
		t.Fatalf("above the prompt: %q, want %q", got, want)
	}
	_, _ = io.WriteString(keys, "\r")
	if l := <-done; l != "hi" {
		t.Fatalf("the line: %q", l)
	}
	if got := term.String(); !strings.HasSuffix(got, "> hi\x1b[K\r\nhalf") {
		t.Fatalf("the held end after the line: %q", got)
	}
}

// Hold takes the terminal for a question: not while a line is typed (a
// question asked then waits for the line, or gives up with its context),
// and the next line's prompt waits for the question to be done.
func TestHold(t *testing.T) {
	in, keys := io.Pipe()
	var term syncBuf
	e := &Editor{In: in, Out: &term}
	done := make(chan string)
	go func() {
		l, _ := e.ReadLine("> ")
		done <- l
	}()
	_, _ = io.WriteString(keys, "hi")
	for !strings.HasSuffix(term.String(), "> hi\x1b[K") { // the editor drew what was typed
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Hold(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Hold during a line: %v, want it to wait until its context ends", err)
	}
	held := make(chan func())
	go func() {
		release, err := e.Hold(context.Background())
		if err != nil {
			t.Error(err)
		}
		held <- release
	}()
	_, _ = io.WriteString(keys, "\r")
	if l := <-done; l != "hi" {
		t.Fatalf("the line: %q", l)
	}
	release := <-held
	go func() {
		l, _ := e.ReadLine("> ")
		done <- l
	}()
	_, _ = io.WriteString(&term, "the question\n")
	release()
	release() // once is enough; again is harmless
	_, _ = io.WriteString(keys, "next\r")
	if l := <-done; l != "next" {
		t.Fatalf("the next line: %q", l)
	}
	if got := term.String(); !strings.Contains(got, "the question\n\r> ") {
		t.Fatalf("the next prompt was drawn before the question was done: %q", got)
	}
}
