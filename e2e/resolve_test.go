package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tai-dev/tai/e2e/internal/build"
)

// tai acp checks its flags once, before it serves the editor, without
// building a run for it: a bad flag is a usage error with nothing served,
// and good flags open nothing of a run's before the editor opens a
// session (no live feed, so none is announced on stderr).
func TestACPChecksFlagsWithoutARun(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	ws := filepath.Join(home, "project")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "NO_COLOR=1", "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"), "XDG_RUNTIME_DIR="+filepath.Join(home, "run"))
	tests := []struct {
		name     string
		args     []string
		code     int
		inStderr string // "" : nothing but what it says is absent
	}{
		// --listen: a feed on TCP announces itself on stderr, which shows
		// whether a feed was opened before any session.
		{"good flags", []string{"acp", "--listen", "127.0.0.1:0", "--no-notify"}, 0, ""},
		// --pty-size: a flag that only the run's settings check.
		{"bad flag", []string{"acp", "--pty-size", "bad"}, 2, "--pty-size wants COLSxROWS"},
		{"bad agent", []string{"acp", "--agent", "no-such-agent"}, 2, "no-such-agent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The editor sends nothing: stdin is at its end at once.
			o := build.Run(t, taiBin, ws, env, tt.args...)
			if o.Code != tt.code {
				t.Fatalf("exit %d, want %d\nstderr: %s", o.Code, tt.code, o.Stderr)
			}
			if o.Stdout != "" {
				t.Errorf("stdout %q: nothing was asked", o.Stdout)
			}
			if strings.Contains(o.Stderr, "live feed of") {
				t.Errorf("a run's feed was opened to check the flags:\n%s", o.Stderr)
			}
			if !strings.Contains(o.Stderr, tt.inStderr) {
				t.Errorf("stderr %q, want %q", o.Stderr, tt.inStderr)
			}
		})
	}
}
