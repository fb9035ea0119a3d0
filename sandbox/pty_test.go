//go:build linux

package sandbox

import (
	"bufio"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/creack/pty"
)

// Under the launcher a TUI keeps the PTY as its controlling terminal and
// stays in its foreground process group, so Ctrl-C on the PTY reaches it
// (and does not kill the launcher first).
func TestPTYForegroundAndCtrlC(t *testing.T) {
	launchers(t, testPTYForeground)
}

func testPTYForeground(t *testing.T, l launcher) {
	w := newWorld(t, ModeOff, l)
	cmd := exec.Command("/bin/sh", "-c", `awk '{print ($5==$8) ? "FOREGROUND" : "BACKGROUND"}' /proc/self/stat; trap 'echo GOT-INT; exit 0' INT; echo ready; read x; echo no-int`)
	cmd.Dir = w.ws
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	p, err := w.sb.Wrap(cmd)
	if err != nil {
		t.Fatal(err)
	}
	ptmx, err := pty.StartWithAttrs(cmd, nil, cmd.SysProcAttr)
	if err = p.Started(err); err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	r := bufio.NewReader(ptmx)
	var seen strings.Builder
	readUntil := func(s string) {
		for !strings.Contains(seen.String(), s) {
			line, err := r.ReadString('\n')
			seen.WriteString(line)
			if err != nil {
				t.Fatalf("reading the pty: %v (got %q)", err, seen.String())
			}
		}
	}
	readUntil("ready")
	if !strings.Contains(seen.String(), "FOREGROUND") {
		t.Fatalf("the agent is not in the terminal's foreground group: %q", seen.String())
	}
	if _, err := ptmx.Write([]byte{3}); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	readUntil("GOT-INT")
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit %v, want 0 (the launcher outlives the SIGINT and exits as the agent did)", err)
	}
	p.Release()
}
