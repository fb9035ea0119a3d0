package elicit

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/tai-dev/tai/driver"
)

// echoProbe records, for each write of the secret field's prompt,
// whether the terminal echoed at that moment.
type echoProbe struct {
	fd     int
	mu     sync.Mutex
	echoed []bool
}

func (e *echoProbe) Write(b []byte) (int, error) {
	if strings.Contains(string(b), "pin (") {
		tio, err := unix.IoctlGetTermios(e.fd, unix.TCGETS)
		e.mu.Lock()
		e.echoed = append(e.echoed, err != nil || tio.Lflag&unix.ECHO != 0)
		e.mu.Unlock()
	}
	return len(b), nil
}

// On a terminal of its own, the form turns echo off before it writes a
// secret's prompt, and turns it back on after the line.
func TestFormSecretPromptAfterEchoOff(t *testing.T) {
	ptm, tty, err := pty.Open()
	if err != nil {
		t.Skip("no pty:", err)
	}
	defer ptm.Close()
	defer tty.Close()
	go func() { // drain what the terminal shows
		b := make([]byte, 256)
		for {
			if _, err := ptm.Read(b); err != nil {
				return
			}
		}
	}()
	go func() { _, _ = ptm.Write([]byte("1234\ry\r")) }()
	probe := &echoProbe{fd: int(tty.Fd())}
	req := driver.ElicitationRequest{ID: "1", Mode: driver.ElicitForm, Message: "PIN?", Fields: []driver.ElicitField{
		{Name: "pin", Type: "string", Secret: true, Required: true},
	}}
	ans, err := (&Form{In: tty, Out: probe}).Answer(context.Background(), req)
	if err != nil || ans.Action != driver.ElicitAccept || ans.Content["pin"] != "1234" {
		t.Fatalf("answer %+v, %v", ans, err)
	}
	probe.mu.Lock()
	defer probe.mu.Unlock()
	if len(probe.echoed) != 1 || probe.echoed[0] {
		t.Fatalf("prompt writes, echo on at each: %v (want one, echo off)", probe.echoed)
	}
	tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil || tio.Lflag&unix.ECHO == 0 {
		t.Fatalf("echo not restored: %v", err)
	}
}
