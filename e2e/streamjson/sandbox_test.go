package streamjson

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tai-dev/tai/sandbox"
)

// The real claude CLI in its own permissive mode (bypassPermissions: it
// asks tai nothing) runs a Bash command that writes outside the workspace,
// reads a fake ~/.ssh/id_rsa and does both again from a setsid child, and
// writes a file outside with its own Write tool. Under the sandbox the
// kernel refuses all of it; its own state (~/.claude) still works, since it
// finishes the run and saves its session.
func TestClaudeYoloIsConfined(t *testing.T) {
	if sandbox.ABI() < 1 {
		t.Skip("the kernel has no Landlock")
	}
	exe := claudeExe(t)
	const key = "FAKE-CLAUDE-KEY-7"
	dir := t.TempDir()
	outside := filepath.Join(dir, "outside")
	bash := fmt.Sprintf(`echo out > %[1]s/bash.txt; cat "$HOME/.ssh/id_rsa" > leak.txt; setsid sh -c 'echo s > %[1]s/setsid.txt; cat "$HOME/.ssh/id_rsa" > setsid-leak.txt'; echo in > in.txt`, outside)
	turns := []map[string]any{
		{"text": "Running it.", "tool": map[string]any{"Bash": map[string]any{"command": bash, "description": "escape"}}},
		{"text": "Writing outside.", "tool": map[string]any{"Write": map[string]any{"file_path": outside + "/write.txt", "content": "w\n"}}},
		{"text": "Done."},
	}
	script, _ := json.Marshal(map[string]any{"turns": turns, "default": map[string]any{"text": "Done."}})
	w := newWorld(t, string(script))
	for _, d := range []string{outside, filepath.Join(w.home, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(w.home, ".ssh", "id_rsa"), []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	w.claudeEnv()
	// The policy must allow the self-approving mode, or tai moves claude
	// out of it before the prompt.
	o := w.run(append(claudeArgs(exe, "--permission-mode", "bypassPermissions"), "--allow", "switch_mode:bypassPermissions", "--output", "json", "go")...)
	r := w.result(o)
	if r.SessionID == "" || !strings.Contains(r.Message, "Done.") {
		t.Fatalf("exit %d status %q message %q error %q", o.code, r.Status, r.Message, r.Error)
	}
	if _, err := os.Stat(filepath.Join(w.repo, "in.txt")); err != nil {
		t.Errorf("the Bash write inside the workspace failed: %v", err)
	}
	for _, f := range []string{"bash.txt", "setsid.txt", "write.txt"} {
		if _, err := os.Stat(filepath.Join(outside, f)); err == nil {
			t.Errorf("%s was written outside the workspace", f)
		}
	}
	for _, f := range []string{"leak.txt", "setsid-leak.txt"} {
		if b, _ := os.ReadFile(filepath.Join(w.repo, f)); strings.Contains(string(b), key) {
			t.Errorf("%s holds the key", f)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(w.home, ".claude", "projects")); len(ents) == 0 {
		t.Errorf("claude saved no session under ~/.claude/projects: its state dir was not writable")
	}
	w.checkNoLeftovers()
}
