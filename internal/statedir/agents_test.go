package statedir

import (
	"path/filepath"
	"testing"
)

func TestBuiltinSessionsIsOneStore(t *testing.T) {
	outer := t.TempDir()
	t.Setenv("XDG_STATE_HOME", outer)
	direct := BuiltinSessions()
	// tai runs its agent with Agents as the state home.
	t.Setenv("XDG_STATE_HOME", Agents())
	if nestedDir := BuiltinSessions(); nestedDir != direct {
		t.Errorf("run by tai: %s; run directly: %s", nestedDir, direct)
	}
	if want := filepath.Join(outer, "tai", "agents", "tai", "builtin"); direct != want {
		t.Errorf("BuiltinSessions = %s, want %s", direct, want)
	}
}
