// Package streamjson runs the real tai binary with the stream-json driver
// against real agent CLIs (Claude Code headless, Qwen Code, and the one-shot
// gemini -p, codex exec --json and opencode run --format json), each talking
// to tai's scripted model server (`tai model serve`) as a real process: no
// network, no keys. The pinned Claude Code comes from
// scripts/install-claude.sh; the others from scripts/install-agents.sh. Without
// them the tests skip, saying why, unless CI is set.
//
//	eval "$(scripts/install-claude.sh | sed 's/^/export /')"
//	go test ./e2e/streamjson -v
package streamjson

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tai-dev/tai/e2e/internal/build"
)

// ClaudeCodeVersion is the pinned @anthropic-ai/claude-code these tests
// were written against (scripts/install-claude.sh).
const ClaudeCodeVersion = "2.1.332"

var taiBin string

func TestMain(m *testing.M) {
	build.Main(m, "tai-e2e-streamjson-", func(_ string, bins []string) { taiBin = bins[0] }, build.Tai)
}

func cacheDir() string {
	if d := os.Getenv("TAI_AGENTS_DIR"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "tai-agents")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "tai-agents")
}

// need returns the executable named by env (else fallback, in the agents
// cache), or skips the test saying why; in CI a missing agent fails it.
func need(t *testing.T, env, fallback, hint string) string {
	t.Helper()
	exe := os.Getenv(env)
	if exe == "" {
		exe = filepath.Join(cacheDir(), fallback)
	}
	st, err := os.Stat(exe)
	if err == nil && st.Mode()&0o111 != 0 {
		return exe
	}
	why := fmt.Sprintf("%s not installed (%s unset and %s missing); run %s", filepath.Base(fallback), env, exe, hint)
	if os.Getenv("CI") != "" {
		t.Fatal(why)
	}
	t.Skip("skipping: " + why)
	return ""
}

func claudeExe(t *testing.T) string {
	return need(t, "TAI_CLAUDE_CLI", "claude-code-"+ClaudeCodeVersion+"/node_modules/.bin/claude",
		`eval "$(scripts/install-claude.sh | sed 's/^/export /')"`)
}
