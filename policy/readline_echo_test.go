package policy

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// echoProbe records, for each write that holds the secret's prompt,
// whether the terminal echoed at that moment.
type echoProbe struct {
	fd     int
	mu     sync.Mutex
	echoed []bool
}

func (e *echoProbe) Write(b []byte) (int, error) {
	if strings.Contains(string(b), "token> ") {
		tio, err := unix.IoctlGetTermios(e.fd, unix.TCGETS)
		e.mu.Lock()
		e.echoed = append(e.echoed, err != nil || tio.Lflag&unix.ECHO != 0)
		e.mu.Unlock()
	}
	return len(b), nil
}

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
	probe := &echoProbe{fd: int(tty.Fd())}
	p := &TTYPrompter{In: tty, Out: probe}
	go func() { _, _ = ptm.Write([]byte("s3cret\r")) }()
	go func() { // drain what the terminal shows
		b := make([]byte, 256)
		for {
			if _, err := ptm.Read(b); err != nil {
				return
			}
		}
	}()
	s, err := p.ReadLine(context.Background(), "token> ", true)
	if err != nil || s != "s3cret" {
		t.Fatalf("got %q, %v", s, err)
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
