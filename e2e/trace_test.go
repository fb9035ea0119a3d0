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

// No secret reaches the trace: not a token the agent streams four
// characters at a time, not an MCP server's env value under a name that
// does not look secret, not a password in a URL or a token in a query
// string, not the value of an MCP server's secret-looking flag.
func TestTraceKeepsSecretsOut(t *testing.T) {
	t.Parallel()
	const (
		token    = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
		dbURL    = "postgres://app:pw@db.internal/app"
		hookURL  = "https://hooks.test/in?user=me&access_token=QzX81mmdPq&x=1"
		flagSecr = "plain-flag-value-77"
	)
	dir := t.TempDir()
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	mcp := `{"name":"db","command":"/usr/bin/true","args":["--api-key","` + flagSecr + `","--url","` + hookURL + `"],"env":{"DB_URL":"` + dbURL + `"}}`
	o := tai(t, dir, "run", "--trace", trace, "--agent-cmd", builtinWith(script("secret_chunks.yaml")), "--mcp", mcp, "-o", "json", "go")
	r := jsonResult(t, o)
	if o.code != 0 || !strings.Contains(r.Message, token) {
		t.Fatalf("exit %d message %q: %s", o.code, r.Message, o.stderr)
	}
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	// What the chunks in the trace say, joined as a reader would join them.
	var said strings.Builder
	chunks := 0
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		var rec struct {
			Line struct {
				Method string `json:"method"`
				Params struct {
					Update struct {
						Kind    string `json:"sessionUpdate"`
						Content struct {
							Text string `json:"text"`
						} `json:"content"`
					} `json:"update"`
				} `json:"params"`
			} `json:"line"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("trace line: %v", err)
		}
		if rec.Line.Params.Update.Kind == "agent_message_chunk" {
			chunks++
			said.WriteString(rec.Line.Params.Update.Content.Text)
		}
	}
	if chunks < 10 {
		t.Fatalf("%d chunks in the trace, the script streams 15", chunks)
	}
	if got, want := said.String(), "here is [REDACTED] and the rest"; got != want {
		t.Errorf("the streamed text in the trace reads %q, want %q", got, want)
	}
	for _, secret := range []string{token[4:20], dbURL, "app:pw@", "QzX81mmdPq", flagSecr} {
		if strings.Contains(string(data), secret) {
			t.Errorf("%q is in the trace", secret)
		}
	}
	if !strings.Contains(string(data), `"name":"db"`) || !strings.Contains(string(data), "hooks.test") {
		t.Error("the MCP server is not in the trace at all")
	}
}
