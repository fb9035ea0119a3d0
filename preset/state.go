package preset

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The state directories each agent writes outside the workspace (its
// config, sessions, logs): the sandbox lets it write there and nowhere else
// outside the workspace. "~" is the home directory; $CONFIG, $DATA, $STATE
// and $CACHE are the XDG base directories; a trailing / marks a directory
// (tai makes it before a confined run, since the agent could not), else it
// is a file. $UID is tai's user id. The entries below a directory that
// holds config files (configFiles) are listed too: that directory cannot
// gain entries under the sandbox, so tai makes them beforehand.
var stateDirs = map[string][]string{
	// Claude Code's Bash keeps its working files in /tmp/claude-UID,
	// whatever TMPDIR says.
	"claude": {"~/.claude/", "~/.claude.json", "~/.claude.json.backup", "~/.claude.json.lock", "$CONFIG/claude/", "/tmp/claude-$UID/",
		"~/.claude/projects/", "~/.claude/shell-snapshots/", "~/.claude/session-env/", "~/.claude/debug/", "~/.claude/file-history/",
		"~/.claude/plans/", "~/.claude/todos/", "~/.claude/statsig/", "~/.claude/telemetry/", "~/.claude/cache/", "~/.claude/tasks/",
		"~/.claude/state/", "~/.claude/sessions/", "~/.claude/backups/", "~/.claude/paste-cache/", "~/.claude/usage-data/",
		"~/.claude/jobs/", "~/.claude/history.jsonl"},
	"codex":  {"$CODEX_HOME/"},
	"gemini": {"~/.gemini/"},
	"qwen":   {"~/.qwen/"},
	// opencode's cache ($CACHE/opencode, where it installs its plugins'
	// packages) is the sandbox's private one (SandboxCache).
	"opencode": {"$DATA/opencode/", "$CONFIG/opencode/", "$STATE/opencode/"},
	"copilot":  {"~/.copilot/", "$CONFIG/.copilot/", "$STATE/.copilot/"},
	"goose":    {"$CONFIG/goose/", "$DATA/goose/", "$STATE/goose/"},
	"kimi":     {"~/.kimi/"},
	"cursor":   {"~/.cursor/", "$CONFIG/cursor/"},
}

// configFiles are the agents' config files and directories, inside their
// state directories, that name programs the agent runs: hooks, MCP
// servers, notify commands, plugins, extensions, and skills and subagents
// (whose front matter can hold hooks). An agent that wrote one would have
// its code run unconfined the next time the user starts that agent
// without tai, so the sandbox keeps them read-only (readable: the agent
// needs its config). The state files beside them stay writable. A trailing
// / marks a directory, which tai makes before a confined run: agents make
// theirs at start, and fail when they cannot. A missing file is made
// holding configInit's content, so that it can be bound read-only.
//
// Where processes are hidden, the launcher's init binds them read-only in
// its mount namespace (sandbox.Config.ReadOnly). Elsewhere only Landlock
// can keep them (landlockConfig), and it keeps a file read-only inside a
// writable directory only by keeping that directory from gaining or losing
// entries: Claude Code copes (tai makes the entries it needs first), the
// others take lock directories and make files there as they run (gemini's
// and qwen's projects.json.lock) and would hang, so theirs stay writable
// there (the status's config_files_reason; see the README).
var configFiles = map[string][]string{
	"claude": {"~/.claude/settings.json", "~/.claude/settings.local.json", "~/.claude/.config.json", "~/.claude/hooks/",
		"~/.claude/plugins/", "~/.claude/skills/", "~/.claude/agents/", "~/.claude/commands/", "~/.claude/rules/", "~/.claude/workflows/"},
	// Not codex's config.toml (hooks, MCP servers, notify): codex writes
	// it itself, the folder trust its TUI asks for at start included, and
	// stays at that question when it cannot (see the README).
	// hooks, MCP servers, and the extensions that bring more.
	"gemini": {"~/.gemini/settings.json", "~/.gemini/extensions/"},
	"qwen":   {"~/.qwen/settings.json", "~/.qwen/extensions/"},
	// opencode merges all three, global config.json included.
	"opencode": {"$CONFIG/opencode/opencode.json", "$CONFIG/opencode/opencode.jsonc", "$CONFIG/opencode/config.json"},
}

// landlockConfig are the presets whose config files Landlock keeps
// read-only where no mount namespace can (see configFiles).
var landlockConfig = map[string]bool{"claude": true}

// configInit is what a missing config file is made holding, by its
// extension: what the agent reads as an empty config.
var configInit = map[string]string{".json": "{}", ".jsonc": "{}", ".toml": ""}

// configNoMake are config files tai does not make when missing: Claude
// Code takes ~/.claude/.config.json, where it is, for its global config
// (~/.claude.json). Landlock keeps them from being planted.
var configNoMake = map[string]bool{"~/.claude/.config.json": true}

// commonStateDirs are written by every agent's runtime. Caches are not
// among them: a cache holds code that something runs later (npx's
// packages, node-gyp's headers, build caches), so confined agents get a
// cache tree of their own (SandboxCache) and the user's stay read-only.
var commonStateDirs = []string{"~/.node_repl_history"}

// StatePath is one place an agent writes: a directory or a file.
type StatePath struct {
	Path string
	Dir  bool
	// Make, for a file the agent must find (it cannot create new files
	// beside it), says tai creates it, holding Init, when it is missing.
	Make bool
	Init string
	// Landlock, for a config file, says Landlock may keep it read-only
	// where no mount namespace can (landlockConfig).
	Landlock bool
}

// stateInit are the files tai creates before a confined run, and with
// what: claude-agent-acp hangs in session/new when it cannot create
// ~/.claude.json (an empty JSON object is a fresh config to it); the
// others sit in a directory that holds config files.
var stateInit = map[string]string{"~/.claude.json": "{}", "~/.claude/history.jsonl": ""}

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
	for _, d := range append(append([]string{}, stateDirs[p.Known()]...), commonStateDirs...) {
		init, mk := stateInit[d]
		out = append(out, StatePath{Path: expand(strings.TrimSuffix(d, "/"), home, getenv), Dir: strings.HasSuffix(d, "/"), Make: mk, Init: init})
	}
	return out
}

// ConfigFiles returns the agent's config files and directories that name
// programs it runs (configFiles), resolved like StateDirs, each file with
// what tai makes it holding when missing (Init); the sandbox keeps them
// read-only. A custom command has none.
func (p Preset) ConfigFiles(home string, getenv func(string) string) []StatePath {
	if home == "" {
		return nil
	}
	var out []StatePath
	for _, f := range configFiles[p.Known()] {
		dir := strings.HasSuffix(f, "/")
		out = append(out, StatePath{Path: expand(strings.TrimSuffix(f, "/"), home, getenv), Dir: dir, Make: !dir && !configNoMake[f],
			Init: configInit[filepath.Ext(f)], Landlock: landlockConfig[p.Known()]})
	}
	return out
}

// SandboxCache is the cache tree of confined agents and the commands tai
// serves them: theirs alone, never one the user's own tools read, so that
// code an agent leaves in a cache (an npx package, a build tool) runs
// confined or not at all. It is below tai's own cache directory.
func SandboxCache(home string, getenv func(string) string) string {
	if home == "" {
		return ""
	}
	return expand("$CACHE/tai/sandbox", home, getenv)
}

// CacheEnv points a confined process's caches at dir (SandboxCache): the
// XDG cache (pip, uv, yarn, node-gyp, Go's build cache, opencode's
// plugins), and the tools that keep theirs elsewhere or take a variable
// the user may have set to their own.
func CacheEnv(dir string) []string {
	return []string{
		"XDG_CACHE_HOME=" + dir,
		"npm_config_cache=" + filepath.Join(dir, "npm"),
		"npm_config_devdir=" + filepath.Join(dir, "node-gyp"),
		"GOCACHE=" + filepath.Join(dir, "go-build"),
		"PIP_CACHE_DIR=" + filepath.Join(dir, "pip"),
		"YARN_CACHE_FOLDER=" + filepath.Join(dir, "yarn"),
	}
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
	case strings.HasPrefix(d, "$CODEX_HOME"):
		if v := getenv("CODEX_HOME"); filepath.IsAbs(v) {
			return filepath.Join(v, d[len("$CODEX_HOME"):])
		}
		return filepath.Join(home, ".codex", d[len("$CODEX_HOME"):])
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
