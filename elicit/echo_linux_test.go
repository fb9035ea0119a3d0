package elicit

import (
	"context"
	"io"
	"testing"

	"github.com/creack/pty"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/internal/testutil"
)

// On a terminal of its own, the form turns echo off before it writes a
// secret's prompt, and turns it back on after the line.
func TestFormSecretPromptAfterEchoOff(t *testing.T) {
	ptm, tty, err := pty.Open()
	if err != nil {
		t.Skip("no pty:", err)
	}
	defer ptm.Close()
	defer tty.Close()
	go func() { _, _ = io.Copy(io.Discard, ptm) }() // what the terminal shows
	go func() { _, _ = ptm.Write([]byte("1234\ry\r")) }()
	probe := &testutil.EchoProbe{FD: int(tty.Fd()), Marker: "pin ("}
	req := driver.ElicitationRequest{ID: "1", Mode: driver.ElicitForm, Message: "PIN?", Fields: []driver.ElicitField{
		{Name: "pin", Type: "string", Secret: true, Required: true},
	}}
	ans, err := (&Form{In: tty, Out: probe}).Answer(context.Background(), req)
	if err != nil || ans.Action != driver.ElicitAccept || ans.Content["pin"] != "1234" {
		t.Fatalf("answer %+v, %v", ans, err)
	}
	if e := probe.Echoed(); len(e) != 1 || e[0] {
		t.Fatalf("prompt writes, echo on at each: %v (want one, echo off)", e)
	}
	if on, err := testutil.EchoOn(int(tty.Fd())); err != nil || !on {
		t.Fatalf("echo not restored: %v", err)
	}
}
