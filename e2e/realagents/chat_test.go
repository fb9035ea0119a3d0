package realagents

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// tai chat against a real agent (codex) in a real terminal: a turn, the
// session's mode completed with Tab and switched, a turn the model is slow
// over cancelled with Ctrl-C, another turn in the same session, Ctrl-D.
func TestRealAgentChat(t *testing.T) {
	need(t)
	var a agent
	for _, x := range agents {
		if x.name == "codex" {
			a = x
		}
	}
	exe, _ := a.installed(t)
	w := newWorld(t, a, exe, "mode", suiteScript(t, "chat-model.json"))
	args := append([]string{"chat"}, w.taiArgs()[1:]...)
	cmd := exec.Command(taiBin, args...)
	cmd.Dir, cmd.Env = w.repo, append(w.env, "NO_COLOR=1")
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: 160, Rows: 50})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen bytes.Buffer
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := ptmx.Read(buf)
			mu.Lock()
			seen.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); ptmx.Close() })
	screen := func() string { mu.Lock(); defer mu.Unlock(); return seen.String() }
	// The deadline only guards against a hang.
	waitFor := func(s string, n int) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Minute)
		for strings.Count(screen(), s) < n {
			if time.Now().After(deadline) {
				t.Fatalf("the screen never showed %q (%d times):\n%s", s, n, tail(screen(), 4000))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	typ := func(s string) {
		if _, err := ptmx.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor("tai› ", 1)
	typ("Say hello.\r")
	waitFor("First chat reply.", 1)
	waitFor("turn ended: end_turn", 1)
	// The agent's own slash commands, from its available_commands_update:
	// the first one completes from its first two letters.
	i := strings.Index(screen(), "◆ commands: /")
	if i < 0 {
		t.Fatalf("codex sent no slash commands:\n%s", tail(screen(), 4000))
	}
	{
		first := strings.Fields(screen()[i+len("◆ commands: "):])[0]
		t.Logf("the agent's first command: %s", first)
		typ(first[:3] + "\t")
		waitFor("tai› "+first, 1)
		typ("\x15") // not run: cleared
	}
	typ("/mode " + a.modeID[:3] + "\t")
	waitFor("/mode "+a.modeID+" ", 1)
	typ("\r")
	waitFor("mode → "+a.modeID, 1)
	typ("Take your time.\r")
	if !waitFor2(func() bool { n, err := w.modelState(); return err == nil && n >= 2 }) {
		t.Fatalf("the agent never got to the slow turn:\n%s", tail(screen(), 4000))
	}
	typ("\x03")
	waitFor("turn ended: cancelled", 1)
	waitFor("tai› ", 4)
	typ("And now?\r")
	waitFor("Third chat reply.", 1)
	waitFor("turn ended: end_turn", 2)
	typ("\x04")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("tai chat: %v\n%s", err, tail(screen(), 4000))
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("tai chat did not end on Ctrl-D:\n%s", tail(screen(), 4000))
	}
	if ends := strings.Count(readFile(t, w.audit), `"kind":"turn.end"`); hasAudit && ends != 3 {
		t.Fatalf("%d turn ends in the audit log, want 3", ends)
	}
}

func waitFor2(cond func() bool) bool {
	deadline := time.Now().Add(3 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

func readFile(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
