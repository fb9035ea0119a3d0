package statedir

import (
	"os"
	"path/filepath"
)

// Agents is where tai, run as an agent by another tai (the built-in
// agent, tai --cap-speak), keeps its state: the running tai's own state
// is not the agent's to write, so it gets this directory as its
// XDG_STATE_HOME.
func Agents() string { return Dir("agents") }

// BuiltinSessions is the one store of the built-in agent's sessions,
// whoever runs it: a tai (which gives it Agents as its state home) or
// another ACP client (acpx, an editor) that starts `tai agent builtin`
// itself. Both see the same sessions.
func BuiltinSessions() string {
	if nested() {
		return Dir("builtin")
	}
	return filepath.Join(Agents(), "tai", "builtin")
}

// nested reports whether this process runs as another tai's agent: its
// XDG_STATE_HOME is that tai's Agents directory.
func nested() bool {
	base := os.Getenv("XDG_STATE_HOME")
	return filepath.IsAbs(base) && filepath.Base(base) == "agents" && filepath.Base(filepath.Dir(base)) == "tai"
}
