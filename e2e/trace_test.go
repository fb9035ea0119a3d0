package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --file attaches a resource link (or, with --embed, the contents), and
// --trace writes the raw wire with secrets redacted.
func TestTraceAndFiles(t *testing.T) {
	t.Parallel()
	const secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("# notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, embed := range []bool{false, true} {
		trace := filepath.Join(t.TempDir(), "trace.jsonl")
		args := []string{"run", "--trace", trace, "-e", "GITHUB_TOKEN=" + secret, "--file", "notes.md", "-o", "json",
			"--mcp", `{"name":"gh","command":"/usr/bin/true","env":{"GITHUB_TOKEN":"` + secret + `"}}`, "/echo hi"}
		if embed {
			args = append(args, "--embed")
		}
		o := tai(t, dir, args...)
		if o.code != 0 {
			t.Fatalf("exit %d %s", o.code, o.stderr)
		}
		data, _ := os.ReadFile(trace)
		if strings.Contains(string(data), secret) {
			t.Fatal("secret in the trace")
		}
		var prompt, newSession map[string]any
		sc := bufio.NewScanner(strings.NewReader(string(data)))
		for sc.Scan() {
			var rec struct {
				Dir  string         `json:"dir"`
				Line map[string]any `json:"line"`
			}
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatalf("trace line: %v", err)
			}
			switch rec.Line["method"] {
			case "session/prompt":
				prompt = rec.Line
			case "session/new":
				newSession = rec.Line
			}
		}
		if prompt == nil || newSession == nil {
			t.Fatalf("trace lacks session/new or session/prompt:\n%s", data)
		}
		blocks := prompt["params"].(map[string]any)["prompt"].([]any)
		second := blocks[1].(map[string]any)
		want := "resource_link"
		if embed {
			want = "resource"
		}
		if second["type"] != want {
			t.Fatalf("file block %v, want %s", second, want)
		}
		if !strings.Contains(string(data), `"name":"gh"`) {
			t.Fatal("MCP server not passed to session/new")
		}
	}
}
