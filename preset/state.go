package preset

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The state directories each agent writes outside the workspace (its
// config, sessions, logs, caches): the sandbox lets it write there and
// nowhere else outside the workspace. "~" is the home directory; $CONFIG,
// $DATA, $STATE and $CACHE are the XDG base directories; a trailing / marks
// a directory (tai makes it before a confined run, since the agent could
// not), else it is a file. $UID is tai's user id.
var stateDirs = map[string][]string{
	// Claude Code's Bash keeps its working files in /tmp/claude-UID,
	// whatever TMPDIR says.
	"claude":   {"~/.claude/", "~/.claude.json", "~/.claude.json.backup", "~/.claude.json.lock", "$CONFIG/claude/", "/tmp/claude-$UID/"},
	"codex":    {"~/.codex/"},
	"gemini":   {"~/.gemini/"},
	"qwen":     {"~/.qwen/"},
	"opencode": {"$DATA/opencode/", "$CONFIG/opencode/", "$STATE/opencode/", "$CACHE/opencode/"},
	"copilot":  {"~/.copilot/", "$CONFIG/.copilot/", "$STATE/.copilot/"},
	"goose":    {"$CONFIG/goose/", "$DATA/goose/", "$STATE/goose/"},
	"kimi":     {"~/.kimi/"},
	"cursor":   {"~/.cursor/", "$CONFIG/cursor/"},
}

// commonStateDirs are written by every agent's runtime: npm and node
// caches, the XDG cache.
var commonStateDirs = []string{"~/.npm/", "$CACHE/", "~/.node-gyp/", "~/.node_repl_history"}

// StatePath is one place an agent writes: a directory or a file.
type StatePath struct {
	Path string
	Dir  bool
	// Init, for a file the agent must find (it cannot create new files
	// beside it), is what tai creates it with when it is missing.
	Init string
}

// stateInit are the files tai creates before a confined run, and with
// what: claude-agent-acp hangs in session/new when it cannot create
// ~/.claude.json (an empty JSON object is a fresh config to it).
var stateInit = map[string]string{"~/.claude.json": "{}"}

// StateDirs returns the directories (and files) the agent writes outside
// the workspace, resolved against home and getenv (os.Getenv for tai's own
// environment). A custom command gets only the common ones (tai as an
// agent, the built-in one included, gets a state directory of its own from
// the caller).
func (p Preset) StateDirs(home string, getenv func(string) string) []StatePath {
	if home == "" {
		return nil
	}
	var out []StatePath
	for _, d := range append(append([]string{}, stateDirs[p.Name]...), commonStateDirs...) {
		out = append(out, StatePath{Path: expand(strings.TrimSuffix(d, "/"), home, getenv), Dir: strings.HasSuffix(d, "/"), Init: stateInit[d]})
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
	d = strings.ReplaceAll(d, "$UID", strconv.Itoa(os.Getuid()))
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
