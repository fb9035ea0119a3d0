package pty

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/e2e/internal/auditlog"
)

// userTTY is tai started the way a user starts it: in a terminal of its
// own (a real PTY), with what it prints collected as the user's screen.
type userTTY struct {
	t    *testing.T
	cmd  *exec.Cmd
	ptmx *os.File
	mu   sync.Mutex
	seen bytes.Buffer
	done chan struct{}
	err  error
}

func startInTerminal(t *testing.T, dir string, args ...string) *userTTY {
	t.Helper()
	return startInTerminalEnv(t, dir, nil, args...)
}

// startInTerminalEnv is startInTerminal with env added to the environment.
func startInTerminalEnv(t *testing.T, dir string, env []string, args ...string) *userTTY {
	t.Helper()
	cmd := exec.Command(taiBin, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "NO_COLOR=1", "XDG_STATE_HOME="+filepath.Join(filepath.Dir(dir), "state")), env...)
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: 120, Rows: 40})
	if err != nil {
		t.Fatal(err)
	}
	u := &userTTY{t: t, cmd: cmd, ptmx: ptmx, done: make(chan struct{})}
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := ptmx.Read(buf)
			u.mu.Lock()
			u.seen.Write(buf[:n])
			u.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() {
		u.err = cmd.Wait()
		close(u.done)
	}()
	t.Cleanup(func() {
		select {
		case <-u.done:
		default:
			_ = cmd.Process.Kill()
			<-u.done
		}
		ptmx.Close()
	})
	return u
}

// waitFor waits until the user's screen has shown s. The deadline only
// guards against a hang; nothing asserts on time.
func (u *userTTY) waitFor(s string) {
	u.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		u.mu.Lock()
		ok := strings.Contains(u.seen.String(), s)
		u.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-u.done:
			u.mu.Lock()
			ok = strings.Contains(u.seen.String(), s)
			u.mu.Unlock()
			if !ok {
				u.t.Fatalf("tai exited (%v) before the screen showed %q; it showed:\n%s", u.err, s, u.screen())
			}
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	u.t.Fatalf("the screen never showed %q; it showed:\n%s", s, u.screen())
}

func (u *userTTY) screen() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := u.seen.String()
	if len(s) > 4000 {
		s = "…" + s[len(s)-4000:]
	}
	return s
}

func (u *userTTY) typ(s string) {
	u.t.Helper()
	if _, err := io.WriteString(u.ptmx, s); err != nil {
		u.t.Fatal(err)
	}
}

// exit waits for tai to end and returns its exit code.
func (u *userTTY) exit() int {
	u.t.Helper()
	select {
	case <-u.done:
	case <-time.After(90 * time.Second):
		u.t.Fatalf("tai did not exit; the screen:\n%s", u.screen())
	}
	var ee *exec.ExitError
	if errors.As(u.err, &ee) {
		return ee.ExitCode()
	}
	if u.err != nil {
		u.t.Fatal(u.err)
	}
	return 0
}

func readAudit(t *testing.T, path string) []audit.Entry { return auditlog.Read(t, path) }

var firstOf = auditlog.First

func dump(entries []audit.Entry) string {
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "%d %s %s\n", e.Seq, e.Kind, e.Data)
	}
	return b.String()
}

// `tai run --driver pty` with no prompt, on a terminal, hands the TUI to
// the user: what they type reaches the agent, what it draws reaches them,
// and Ctrl-] gives it back.
func TestAttachTypeAndDetach(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(t.TempDir(), "audit.jsonl") // outside the workspace, whose root it would keep from gaining entries under the sandbox
	u := startInTerminal(t, dir, "run", "--agent-cmd", fakeBin, "--driver", "pty", "--audit", log)
	u.waitFor("press Ctrl-] to detach")
	u.typ("say hi")
	u.waitFor("say hi")
	u.typ("\r")
	u.waitFor("Hello from the fake TUI.")
	u.typ("\x1d")
	u.waitFor("detached from")
	if code := u.exit(); code != 0 {
		t.Fatalf("exit %d after a detach; screen:\n%s", code, u.screen())
	}
	entries := readAudit(t, log)
	at, ok1 := firstOf(entries, "tty.attach")
	de, ok2 := firstOf(entries, "tty.detach")
	if !ok1 || !ok2 || at.Seq > de.Seq || !strings.Contains(string(de.Data), `"end":"detached"`) {
		t.Fatalf("audit lacks tty.attach then tty.detach (detached):\n%s", dump(entries))
	}
	if _, ok := firstOf(entries, "screen.final"); !ok {
		t.Error("audit lacks the final screen")
	}
	checkNoLeftovers(t, dir)
}

// While the user is attached, a picker is theirs: tai answers nothing. A
// picker still open when they detach goes to the policy, which the audit
// shows deciding after the detach.
func TestAttachPickerAfterDetachGoesToPolicy(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(t.TempDir(), "audit.jsonl") // outside the workspace, whose root it would keep from gaining entries under the sandbox
	u := startInTerminal(t, dir, "run", "--agent-cmd", fakeBin, "--driver", "pty", "--approve", "all", "--audit", log)
	u.waitFor("press Ctrl-] to detach")
	u.typ("please write hello")
	u.waitFor("please write hello")
	u.typ("\r")
	u.waitFor("Apply this change?")
	u.typ("\x1d")
	if code := u.exit(); code != 0 {
		t.Fatalf("exit %d; screen:\n%s", code, u.screen())
	}
	if _, err := os.Stat(filepath.Join(dir, "hello.txt")); err != nil {
		t.Errorf("the policy allowed the write after the detach, but: %v", err)
	}
	entries := readAudit(t, log)
	de, _ := firstOf(entries, "tty.detach")
	dec, ok := firstOf(entries, "permission.decision")
	if !ok || de.Seq == 0 || dec.Seq < de.Seq || strings.Contains(string(dec.Data), `"decided_by":"user"`) || !strings.Contains(string(dec.Data), `"decision":"allow"`) {
		t.Fatalf("want the policy's allow after the detach (detach seq %d); audit:\n%s", de.Seq, dump(entries))
	}
	checkNoLeftovers(t, dir)
}

// The user quitting the TUI while attached ends the run cleanly.
func TestAttachAgentQuits(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(t.TempDir(), "audit.jsonl") // outside the workspace, whose root it would keep from gaining entries under the sandbox
	u := startInTerminal(t, dir, "run", "--agent-cmd", fakeBin, "--driver", "pty", "--audit", log)
	u.waitFor("press Ctrl-] to detach")
	u.typ("\x03") // raw mode: Ctrl-C is the TUI's key, and faketui quits on it
	if code := u.exit(); code != 0 {
		t.Fatalf("exit %d after the TUI quit; screen:\n%s", code, u.screen())
	}
	de, ok := firstOf(readAudit(t, log), "tty.detach")
	if !ok || !strings.Contains(string(de.Data), `"end":"exited"`) {
		t.Fatalf("tty.detach %s, want end exited", de.Data)
	}
}

func TestNoPromptWithoutATerminal(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"pty", []string{"run", "--agent-cmd", fakeBin, "--driver", "pty"}, "attaching to the TUI needs a terminal"},
		{"acp", []string{"run"}, "use --driver pty on a terminal to attach"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tai(t, dir, os.Environ(), tc.args...)
			if o.code != 2 || !strings.Contains(o.stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", o.code, o.stderr, tc.want)
			}
		})
	}
}

// A reply longer than the screen scrolls rows off the emulator; the audit
// log's final screen carries them as scrollback, so every row is kept,
// once and in order.
//
// The slow reader reads the screen only once the output has paused for a
// second, so never while the reply scrolls (faketui draws a frame every
// 40 ms until it is done): the rows are kept by the emulator as they
// scroll off, not by comparing what tai happened to read.
func TestScrollbackInAudit(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"reader as fast as it can", nil},
		{"slow reader", []string{"TAI_TEST_PTY_SLOW_READ=1s"}},
	} {
		t.Run(tc.name, func(t *testing.T) { scrollbackInAudit(t, tc.env) })
	}
}

func scrollbackInAudit(t *testing.T, env []string) {
	dir := t.TempDir()
	log := filepath.Join(t.TempDir(), "audit.jsonl") // outside the workspace, whose root it would keep from gaining entries under the sandbox
	o := tai(t, dir, append(os.Environ(), env...), "run", "--agent-cmd", fakeBin, "--driver", "pty", "--audit", log, "-o", "json", "a long reply please")
	if o.code != 0 {
		t.Fatalf("exit %d\n%s", o.code, o.stderr)
	}
	// The reply streamed as it was written, so the message has the rows
	// that scrolled off the screen before the turn ended too.
	msg := parse(t, o).Message
	for i := 1; i <= 150; i++ {
		if row := fmt.Sprintf("row %d of the long reply", i); strings.Count(msg, row) != 1 {
			t.Fatalf("the message has %q %d times; message:\n%s", row, strings.Count(msg, row), msg)
		}
	}
	fin, ok := firstOf(readAudit(t, log), "screen.final")
	if !ok {
		t.Fatal("no screen.final in the audit log")
	}
	var screen struct {
		Text       string   `json:"text"`
		Scrollback []string `json:"scrollback"`
	}
	if err := json.Unmarshal(fin.Data, &screen); err != nil {
		t.Fatal(err)
	}
	if len(screen.Scrollback) == 0 {
		t.Fatal("no scrollback kept, though the reply was longer than the screen")
	}
	all := strings.Join(screen.Scrollback, "\n") + "\n" + screen.Text
	at := 0
	for i := 1; i <= 150; i++ {
		row := fmt.Sprintf("row %d of the long reply", i)
		if c := strings.Count(all, row+"\n"); c != 1 {
			t.Fatalf("%q appears %d times in scrollback + screen", row, c)
		}
		j := strings.Index(all, row+"\n")
		if j < at {
			t.Fatalf("%q is out of order", row)
		}
		at = j
	}
}

// A TUI no profile knows, which computes for seconds without printing:
// quiescence alone would call it idle halfway and cut the reply short;
// the process-state signal (its CPU use) keeps the turn going until the
// answer is on screen.
func TestGenericSilentWorkIsNotIdle(t *testing.T) {
	dir := t.TempDir()
	tui := filepath.Join(dir, "silent-tui.sh")
	script := `#!/bin/bash
printf 'ready> '
while IFS= read -r line; do
  end=$((SECONDS+4)); while [ $SECONDS -lt $end ]; do :; done
  printf 'computed: %s\n' "$line"
  printf 'ready> '
done
`
	if err := os.WriteFile(tui, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	o := tai(t, dir, os.Environ(), "run", "--agent-cmd", tui, "--driver", "pty", "-o", "json", "hello")
	r := parse(t, o)
	if o.code != 0 || !strings.Contains(r.Message, "computed: hello") {
		t.Fatalf("exit %d, message %q; want the answer printed after the silent work\nstderr:\n%s", o.code, r.Message, o.stderr)
	}
}

// --pty-size sets the screen the TUI runs in.
func TestPTYSize(t *testing.T) {
	dir := t.TempDir()
	o := tai(t, dir, os.Environ(), "run", "--agent-cmd", fakeBin, "--driver", "pty", "--pty-size", "80x30", "-o", "stream-json", "say hi")
	if o.code != 0 {
		t.Fatalf("exit %d\n%s", o.code, o.stderr)
	}
	var size string
	for _, line := range strings.Split(o.stdout, "\n") {
		var f struct {
			Type  string `json:"type"`
			Final struct {
				Cols int `json:"cols"`
				Rows int `json:"rows"`
			} `json:"final_screen"`
		}
		if json.Unmarshal([]byte(line), &f) == nil && f.Type == "screen.final" {
			size = fmt.Sprintf("%dx%d", f.Final.Cols, f.Final.Rows)
		}
	}
	if size != "80x30" {
		t.Fatalf("final screen %q, want 80x30", size)
	}
	for _, bad := range []string{"80", "10x10", "ax b"} {
		if o := tai(t, dir, os.Environ(), "run", "--agent-cmd", fakeBin, "--driver", "pty", "--pty-size", bad, "hi"); o.code != 2 {
			t.Errorf("--pty-size %s: exit %d, want 2", bad, o.code)
		}
	}
}
