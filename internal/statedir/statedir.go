// Package statedir says where tai keeps its state (audit logs, sessions,
// fleet runs, policy memory, the built-in agent's sessions):
// $XDG_STATE_HOME/tai, or ~/.local/state/tai when XDG_STATE_HOME is unset
// or relative (as the XDG spec says to treat it). Never the workspace: an
// agent writes the workspace, and must not steer what tai records.
package statedir

import (
	"os"
	"path/filepath"
)

// Dir is tai's state directory joined with elem.
func Dir(elem ...string) string {
	base := os.Getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(base) {
		if home, err := os.UserHomeDir(); err == nil {
			base = filepath.Join(home, ".local", "state")
		} else {
			base = filepath.Join(os.TempDir(), "tai-state")
		}
	}
	return filepath.Join(append([]string{base, "tai"}, elem...)...)
}

// ConfigDir is tai's config directory, where the user's policy lives:
// $XDG_CONFIG_HOME/tai, or ~/.config/tai.
func ConfigDir() string {
	if dir, err := os.UserConfigDir(); err == nil {
		return filepath.Join(dir, "tai")
	}
	// A relative XDG_CONFIG_HOME is to be ignored (the XDG spec).
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".config", "tai")
	}
	return filepath.Join(Dir(), "config")
}

// Own lists the directories that are tai's own (its config and its state):
// no agent may write them, even when a workspace contains them.
func Own() []string { return []string{ConfigDir(), Dir()} }

// Secrets is where tai keeps its own secrets (the token of a hub started
// without credentials, its server's configuration): every agent's sandbox
// hides it (neither read nor listed), unlike the rest of the state, which
// agents may read. It is created, 0700, so that the sandbox has a path to
// hide before anything is written there.
func Secrets() string {
	d := Dir("secrets")
	_ = os.MkdirAll(d, 0o700)
	return d
}
