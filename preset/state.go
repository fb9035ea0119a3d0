package preset

import (
	"path/filepath"
	"strings"

	"github.com/tai-dev/tai/internal/statedir"
)

// The state directories each agent writes outside the workspace (its
// config, sessions, logs, caches): the sandbox lets it write there and
// nowhere else outside the workspace. "~" is the home directory; $CONFIG,
// $DATA, $STATE and $CACHE are the XDG base directories.
var stateDirs = map[string][]string{
	"claude":   {"~/.claude", "~/.claude.json", "~/.claude.json.backup", "~/.claude.json.lock", "$CONFIG/claude"},
	"codex":    {"~/.codex"},
	"gemini":   {"~/.gemini"},
	"qwen":     {"~/.qwen"},
	"opencode": {"$DATA/opencode", "$CONFIG/opencode", "$STATE/opencode", "$CACHE/opencode"},
	"copilot":  {"~/.copilot", "$CONFIG/.copilot", "$STATE/.copilot"},
	"goose":    {"$CONFIG/goose", "$DATA/goose", "$STATE/goose"},
	"kimi":     {"~/.kimi"},
	"cursor":   {"~/.cursor", "$CONFIG/cursor"},
}

// commonStateDirs are written by every agent's runtime: npm and node
// caches, the XDG cache.
var commonStateDirs = []string{"~/.npm", "$CACHE", "~/.node-gyp", "~/.node_repl_history"}

// StateDirs returns the directories (and files) the agent writes outside
// the workspace, resolved against home and getenv (os.Getenv for tai's own
// environment). A custom command gets only the common ones; the built-in
// agent its own directory of tai's state.
func (p Preset) StateDirs(home string, getenv func(string) string) []string {
	if home == "" {
		return nil
	}
	var out []string
	if p.Builtin {
		out = append(out, statedir.Dir("builtin"))
	}
	for _, d := range append(append([]string{}, stateDirs[p.Name]...), commonStateDirs...) {
		out = append(out, expand(d, home, getenv))
	}
	return out
}

// ReadOnlyDirs are directories below the state directories that agents
// must not write: the installed agents themselves.
func ReadOnlyDirs(home string, getenv func(string) string) []string {
	if home == "" {
		return nil
	}
	return []string{expand("$CACHE/tai-agents", home, getenv)}
}

func expand(d, home string, getenv func(string) string) string {
	xdg := func(env, def string) string {
		if v := getenv(env); filepath.IsAbs(v) {
			return v
		}
		return filepath.Join(home, def)
	}
	switch {
	case strings.HasPrefix(d, "~/"):
		return filepath.Join(home, d[2:])
	case strings.HasPrefix(d, "$CONFIG"):
		return filepath.Join(xdg("XDG_CONFIG_HOME", ".config"), d[len("$CONFIG"):])
	case strings.HasPrefix(d, "$DATA"):
		return filepath.Join(xdg("XDG_DATA_HOME", ".local/share"), d[len("$DATA"):])
	case strings.HasPrefix(d, "$STATE"):
		return filepath.Join(xdg("XDG_STATE_HOME", ".local/state"), d[len("$STATE"):])
	case strings.HasPrefix(d, "$CACHE"):
		return filepath.Join(xdg("XDG_CACHE_HOME", ".cache"), d[len("$CACHE"):])
	}
	return d
}
