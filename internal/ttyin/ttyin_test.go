package ttyin

import (
	"context"
	"errors"
	"io"
	"testing"
)

// An asker that gives up takes nothing: what is typed next goes to the
// next asker, and what one did not use goes back ahead of the rest.
func TestInputHandsOn(t *testing.T) {
	r, w := io.Pipe()
	in := New(r)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := in.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled ask: %v", err)
	}
	go func() { _, _ = w.Write([]byte("next line\n")) }()
	b := make([]byte, 4)
	n, err := in.Read(b)
	if err != nil || string(b[:n]) != "next" {
		t.Fatalf("read %q, %v", b[:n], err)
	}
	got, err := in.Next(context.Background())
	if err != nil || string(got) != " line\n" {
		t.Fatalf("the rest: %q, %v", got, err)
	}
	in.Unread([]byte("b"))
	in.Unread([]byte("a"))
	if got, _ := in.Next(context.Background()); string(got) != "ab" {
		t.Fatalf("given back: %q", got)
	}
	in.Unread([]byte("stray"))
	in.Discard()
	w.Close()
	if got, err := in.Next(context.Background()); err != io.EOF || len(got) != 0 {
		t.Fatalf("after a discard and the end: %q, %v", got, err)
	}
	if _, err := in.Next(context.Background()); err != io.EOF {
		t.Fatalf("the end is kept: %v", err)
	}
}
