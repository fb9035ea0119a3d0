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

func TestConfigDirAndOwn(t *testing.T) {
	for _, tc := range []struct{ xdg, home, want string }{
		{"/cfg", "/home/u", "/cfg/tai"},
		{"", "/home/u", "/home/u/.config/tai"},
		{"relative/cfg", "/home/u", "/home/u/.config/tai"},
	} {
		t.Setenv("XDG_CONFIG_HOME", tc.xdg)
		t.Setenv("XDG_STATE_HOME", "/state")
		t.Setenv("HOME", tc.home)
		if got := ConfigDir(); got != filepath.FromSlash(tc.want) {
			t.Errorf("XDG_CONFIG_HOME=%q: %s, want %s", tc.xdg, got, tc.want)
		}
		if own := Own(); len(own) != 2 || own[0] != ConfigDir() || own[1] != filepath.FromSlash("/state/tai") {
			t.Errorf("Own() = %v", own)
		}
	}
}
