package statedir

import (
	"path/filepath"
	"testing"
)

func TestDir(t *testing.T) {
	for _, tc := range []struct{ xdg, home, want string }{
		{"/state", "/home/u", "/state/tai/audit"},
		{"", "/home/u", "/home/u/.local/state/tai/audit"},
		{"relative/state", "/home/u", "/home/u/.local/state/tai/audit"},
	} {
		t.Setenv("XDG_STATE_HOME", tc.xdg)
		t.Setenv("HOME", tc.home)
		if got := Dir("audit"); got != filepath.FromSlash(tc.want) {
			t.Errorf("XDG_STATE_HOME=%q: %s, want %s", tc.xdg, got, tc.want)
		}
	}
}
