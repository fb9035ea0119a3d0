package web_test

import (
	"bytes"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/creack/pty"
)

// tai serve prints the link's QR code (for a phone's camera) when its
// stderr is a terminal, and never into a pipe, where it would be noise in
// a log. Each tai serve is stopped (ctrl-c) once its link is out and its
// whole stderr read: tai prints the code before it serves, so nothing is
// timed.
func TestQRCodeOnlyOnATerminal(t *testing.T) {
	for _, c := range []struct {
		name string
		tty  bool
	}{{"a terminal", true}, {"a pipe", false}} {
		t.Run(c.name, func(t *testing.T) {
			u := newUser(t)
			cmd := exec.Command(taiBin, "serve", "--listen", "127.0.0.1:0")
			cmd.Dir, cmd.Env = u.ws, u.env
			var stderr io.Reader
			if c.tty {
				f, err := pty.Start(cmd)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				stderr = f
			} else {
				p, err := cmd.StderrPipe()
				if err != nil {
					t.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				stderr = p
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			var out bytes.Buffer
			buf := make([]byte, 4096)
			for !strings.Contains(out.String(), "(it holds your token") {
				n, err := stderr.Read(buf)
				out.Write(buf[:n])
				if err != nil {
					t.Fatalf("tai serve printed no link: %v\n%s", err, out.String())
				}
			}
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(&out, stderr) // a pty's end is an error (EIO): the rest is read either way
			_ = cmd.Wait()
			if got := strings.ContainsAny(out.String(), "█▀▄"); got != c.tty {
				t.Fatalf("a QR code printed: %v, want %v; stderr:\n%s", got, c.tty, out.String())
			}
		})
	}
}
