package tty

import (
	"context"
	"io"
	"testing"

	"github.com/creack/pty"

	"github.com/tai-dev/tai/internal/testutil"
)

// A secret's prompt is written only once echo is off: keys typed the
// moment it shows are not echoed (seen as a race in e2e's
// TestTerminalAskThenForm when the prompt came first).
func TestReadLineSecretPromptAfterEchoOff(t *testing.T) {
	ptm, tty, err := pty.Open()
	if err != nil {
		t.Skip("no pty:", err)
	}
	defer ptm.Close()
	defer tty.Close()
	probe := &testutil.EchoProbe{FD: int(tty.Fd()), Marker: "token> "}
	p := &Prompter{In: tty, Out: probe}
	go func() { _, _ = ptm.Write([]byte("s3cret\r")) }()
	go func() { _, _ = io.Copy(io.Discard, ptm) }() // what the terminal shows
	s, err := p.ReadLine(context.Background(), "token> ", true)
	if err != nil || s != "s3cret" {
		t.Fatalf("got %q, %v", s, err)
	}
	if e := probe.Echoed(); len(e) != 1 || e[0] {
		t.Fatalf("prompt writes, echo on at each: %v (want one, echo off)", e)
	}
	if on, err := testutil.EchoOn(int(tty.Fd())); err != nil || !on {
		t.Fatalf("echo not restored: %v", err)
	}
}
