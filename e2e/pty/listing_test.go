package pty

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// A listing whose reader has left (`tai agents | head -1`, the reader gone
// before the table is out) ends without a word, with SIGPIPE's code as
// tai run does: the reader's choice is no error to report.
func TestListingToAClosedPipeIsQuiet(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"agents"}, {"doctor"}, {"version"}} {
		t.Run(args[0], func(t *testing.T) {
			t.Parallel()
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			r.Close() // the reader has left: every write fails with EPIPE
			cmd := exec.Command(taiBin, args...)
			cmd.Dir, cmd.Env = t.TempDir(), append(os.Environ(), "NO_COLOR=1", "XDG_STATE_HOME="+filepath.Join(t.TempDir(), "state"))
			var stderr strings.Builder
			cmd.Stdout, cmd.Stderr = w, &stderr
			err = cmd.Run()
			w.Close()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 141 || stderr.Len() != 0 {
				t.Fatalf("tai %s: %v, want exit 141 and nothing on stderr:\n%s", args[0], err, stderr.String())
			}
		})
	}
}

// On a terminal narrower than a table (tai agents, tai doctor), each row
// stays on one line, cut with "…", instead of wrapping into a staircase of
// half rows; a pipe gets whole rows (TestListingToAPipeIsWhole).
func TestListingFitsTheTerminal(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"agents"}, {"doctor"}} {
		t.Run(args[0], func(t *testing.T) {
			t.Parallel()
			ws, env := asUser(t)
			u := startInTerminalEnv(t, ws, env, args...) // 120 columns
			if code := u.exit(); code != 0 {
				t.Fatalf("exit %d\n%s", code, u.screen())
			}
			u.mu.Lock()
			screen := u.seen.String()
			u.mu.Unlock()
			cut := false
			for _, l := range strings.Split(screen, "\r\n") {
				if n := utf8.RuneCountInString(l); n >= 120 {
					t.Errorf("a %d-column line wraps at 120 columns: %q", n, l)
				}
				cut = cut || strings.HasSuffix(l, "…")
			}
			if !cut {
				t.Errorf("no row was cut: the test's table fits, and shows nothing:\n%s", screen)
			}
		})
	}
}

// From a pipe, a table's rows are whole: scripts read them.
func TestListingToAPipeIsWhole(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(taiBin, "agents")
	cmd.Dir, cmd.Env = t.TempDir(), append(os.Environ(), "NO_COLOR=1", "XDG_STATE_HOME="+filepath.Join(t.TempDir(), "state"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "…") || !strings.Contains(string(out), "npx -y @agentclientprotocol/claude-agent-acp@") {
		t.Fatalf("rows cut in a pipe:\n%s", out)
	}
}
