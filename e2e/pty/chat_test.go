package pty

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/audit"
)

// tai chat in a real terminal: two turns, a slash command completed with
// Tab (its input hint shown), a mode switch completed with Tab, Ctrl-C in
// the middle of a long turn (the turn is cancelled, the session goes on),
// another turn, history, Ctrl-D. Every turn is in one audit log.
func TestChatInTerminal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script, _ := filepath.Abs(filepath.Join("..", "testdata", "chat.yaml"))
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	u := startInTerminal(t, dir, "chat", "--audit", auditPath, "--agent-cmd", taiBin+" agent builtin --script "+script)
	u.waitFor("tai› ")
	u.typ("/echo first turn\r")
	u.waitFor("first turn")
	u.waitFor("turn ended: end_turn")

	// The agent's commands arrived with the first turn: /ec completes,
	// showing the hint.
	u.typ("/ec\t")
	u.waitFor("/echo  — Echo text back (text to echo)")
	u.typ("second turn\r")
	u.waitFor("second turn\r\n")

	u.typ("/mode pl\t")
	u.waitFor("tai› /mode plan ")
	u.typ("\r")
	u.waitFor("◆ mode → plan")

	u.typ("do the long thing\r")
	u.waitFor("working on it")
	u.typ("\x03") // Ctrl-C: the turn, not the session
	u.waitFor("turn ended: cancelled")

	// History: three lines back is "/echo second turn", run again.
	u.typ("\x1b[A\x1b[A\x1b[A\r")
	u.waitForCount("second turn\r\n", 2)
	u.typ("/echo typo\x15/echo after the cancel\r") // Ctrl-U clears the line
	u.waitFor("after the cancel\r\n")
	u.waitFor("turn ended: end_turn")
	u.typ("\x04") // Ctrl-D ends it
	if code := u.exit(); code != 0 {
		t.Fatalf("exit %d\n%s", code, u.screen())
	}
	if strings.Contains(u.screen(), "never shown") || strings.Contains(u.screen(), "typo\r\n") {
		t.Fatal("the cancelled turn went on, or the cleared line ran")
	}
	var starts, ends, stops []string
	for _, e := range readAudit(t, auditPath) {
		switch e.Kind {
		case audit.KindSessionStart:
			starts = append(starts, e.Session)
		case audit.KindTurnEnd:
			ends = append(ends, e.Session)
			stops = append(stops, string(e.Data))
		}
	}
	if len(starts) != 1 || len(ends) != 5 {
		t.Fatalf("%d session starts and %d turn ends in the audit log; want 1 and 5", len(starts), len(ends))
	}
	for _, s := range ends {
		if s != starts[0] {
			t.Fatalf("a turn of another session: %v vs %s", ends, starts[0])
		}
	}
	if !strings.Contains(stops[2], "cancelled") {
		t.Fatalf("third turn's end %s", stops[2])
	}
}

// waitForCount waits until the screen has shown s n times.
func (u *userTTY) waitForCount(s string, n int) {
	u.t.Helper()
	for i := 0; ; i++ {
		u.mu.Lock()
		c := strings.Count(u.seen.String(), s)
		u.mu.Unlock()
		if c >= n {
			return
		}
		select {
		case <-u.done:
			u.t.Fatalf("tai exited before the screen showed %q %d times:\n%s", s, n, u.screen())
		case <-time.After(20 * time.Millisecond):
		}
		if i > 4500 {
			u.t.Fatalf("the screen never showed %q %d times:\n%s", s, n, u.screen())
		}
	}
}
