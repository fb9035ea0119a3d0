package streamjson

import (
	"bufio"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateWire = flag.Bool("update-wire", false, "write each scenario's wire capture (the CLI's stdout) to driver/streamjson/testdata/<dialect>/")

// saveWire keeps what the CLI printed in a scenario as a decoder fixture,
// with the run's temp directory replaced by a fixed one.
func (w *world) saveWire(dialect, name string) {
	w.t.Helper()
	if !*updateWire {
		return
	}
	f, err := os.Open(filepath.Join(w.dir, "trace.jsonl"))
	if err != nil {
		w.t.Fatal(err)
	}
	defer f.Close()
	var out strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for sc.Scan() {
		var e struct {
			Dir  string          `json:"dir"`
			Line json.RawMessage `json:"line"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Dir != "in" {
			continue
		}
		// opencode titles give the path without its leading slash.
		line := strings.ReplaceAll(string(e.Line), w.dir, "/tmp/w")
		line = strings.ReplaceAll(line, strings.TrimPrefix(w.dir, "/"), "tmp/w")
		out.WriteString(line + "\n")
	}
	dir := filepath.Join("..", "..", "driver", "streamjson", "testdata", dialect)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".jsonl"), []byte(out.String()), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

const (
	textScript  = `{"turns":[{"text":"Hello from the scripted model."}],"default":{"text":"Hello again."}}`
	writeScript = `{"turns":[
  {"text":"I'll create hello.txt.","tool":{"Write":{"file_path":"{{CWD}}/hello.txt","content":"hello\n"}}},
  {"text":"Created hello.txt."}],"default":{"text":"Done."}}`
	slowScript  = `{"turns":[{"text":"this answer takes a very long time","delay":120}],"default":{"text":"late"}}`
	errorScript = `{"turns":[{"error":500,"message":"scripted failure"}],"default":{"error":500,"message":"scripted failure"}}`
)

// claudeRun is a tai run of the real claude CLI over stream-json.
func claudeArgs(exe string, extra ...string) []string {
	cmd := exe + " -p --input-format stream-json --output-format stream-json --verbose"
	for _, e := range extra {
		cmd += " " + e
	}
	return []string{"--agent", "claude", "--driver", "stream-json", "--agent-cmd", cmd}
}

func TestClaude(t *testing.T) {
	exe := claudeExe(t)
	t.Logf("claude CLI %s (@anthropic-ai/claude-code %s)", exe, ClaudeCodeVersion)
	type check func(t *testing.T, w *world, o outcome)
	hello := func(want bool) check {
		return func(t *testing.T, w *world, _ outcome) {
			_, err := os.Stat(filepath.Join(w.repo, "hello.txt"))
			if got := err == nil; got != want {
				t.Errorf("hello.txt exists = %v, want %v", got, want)
			}
		}
	}
	tests := []struct {
		name     string
		script   string
		env      []string
		cliArgs  []string
		args     []string
		code     int
		status   string
		stop     string
		checks   []check
		leftover bool
	}{
		{name: "text", script: textScript, args: []string{"--output", "json", "say hello"}, code: 0, status: "ok", stop: "end_turn",
			checks: []check{func(t *testing.T, w *world, o outcome) {
				r := w.result(o)
				if !strings.Contains(r.Message, "Hello from the scripted model.") {
					t.Errorf("message = %q", r.Message)
				}
				if r.Usage == nil || r.Usage.OutputTokens == 0 {
					t.Errorf("no usage in the result: %+v", r.Usage)
				}
				if r.Driver != "stream-json" || r.SessionID == "" {
					t.Errorf("driver %q session %q", r.Driver, r.SessionID)
				}
			}}},
		{name: "allow", script: writeScript, args: []string{"--approve", "all", "--output", "json", "create hello.txt"}, code: 0, status: "ok", stop: "end_turn",
			checks: []check{hello(true), func(t *testing.T, w *world, o outcome) {
				r := w.result(o)
				if len(r.Permissions) != 1 || r.Permissions[0].Verdict != "allow" || r.Permissions[0].ToolKind != "edit" {
					t.Errorf("permissions = %+v, want one allowed edit", r.Permissions)
				}
			}}},
		{name: "deny", script: writeScript, args: []string{"--approve", "deny", "--output", "json", "create hello.txt"}, code: 5, status: "denied",
			checks: []check{hello(false), func(t *testing.T, w *world, o outcome) {
				r := w.result(o)
				if len(r.Denials) != 1 || r.Denials[0].Verdict != "deny" {
					t.Errorf("denials = %+v, want one", r.Denials)
				}
			}}},
		{name: "mode", script: writeScript, args: []string{"--mode", "acceptEdits", "--output", "stream-json", "create hello.txt"}, code: 0,
			// In acceptEdits Claude writes without asking: the file proves
			// the mode is in effect, the frame that the CLI confirmed it.
			checks: []check{hello(true), func(t *testing.T, w *world, o outcome) {
				var modes []string
				asked := 0
				for _, f := range w.frames(o.stdout) {
					switch f["type"] {
					case "mode.changed":
						modes = append(modes, f["mode"].(map[string]any)["id"].(string))
					case "permission.asked":
						asked++
					}
				}
				if len(modes) != 1 || modes[0] != "acceptEdits" {
					t.Errorf("mode.changed frames = %v, want [acceptEdits]", modes)
				}
				if asked != 0 {
					t.Errorf("%d permission requests in acceptEdits", asked)
				}
			}}},
		{name: "interrupt", script: slowScript, args: []string{"--timeout", "5s", "--output", "json", "take your time"}, code: 3, status: "timeout", leftover: true},
		{name: "api-error", script: errorScript, env: []string{"CLAUDE_CODE_MAX_RETRIES=0"}, args: []string{"--output", "json", "fail please"}, code: 1, status: "error", stop: "error",
			checks: []check{func(t *testing.T, w *world, o outcome) {
				if r := w.result(o); !strings.Contains(r.Error, "is_error") && !strings.Contains(r.Error, "reported an error") {
					t.Errorf("error = %q, want the CLI's reported error", r.Error)
				}
			}}},
		{name: "max-turns", script: writeScript, cliArgs: []string{"--max-turns", "1"}, args: []string{"--approve", "all", "--output", "json", "create hello.txt"},
			code: 0, status: "ok", stop: "max_turn_requests"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, tt.script)
			w.claudeEnv()
			w.env = append(w.env, tt.env...)
			o := w.run(append(claudeArgs(exe, tt.cliArgs...), tt.args...)...)
			if o.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s", o.code, tt.code, tailStr(o.stdout, 3000))
			}
			if tt.status != "" {
				r := w.result(o)
				if r.Status != tt.status || (tt.stop != "" && r.StopReason != tt.stop) {
					t.Errorf("status %q stop %q, want %q %q (error %q)", r.Status, r.StopReason, tt.status, tt.stop, r.Error)
				}
			}
			for _, c := range tt.checks {
				c(t, w, o)
			}
			if tt.leftover {
				w.checkNoLeftovers()
			}
			w.saveWire("claude", tt.name)
		})
	}
}

// TestClaudeResume: a second run resumes the first one's session by the id
// tai gave it.
func TestClaudeResume(t *testing.T) {
	exe := claudeExe(t)
	w := newWorld(t, textScript)
	w.claudeEnv()
	first := w.result(w.run(append(claudeArgs(exe), "--output", "json", "remember me")...))
	if first.Status != "ok" || first.SessionID == "" {
		t.Fatalf("first run: %+v", first)
	}
	second := w.result(w.run(append(claudeArgs(exe), "--resume", first.SessionID, "--output", "json", "again")...))
	if second.Status != "ok" || second.SessionID != first.SessionID {
		t.Fatalf("resumed run: status %q session %q, want ok %q (error %q)", second.Status, second.SessionID, first.SessionID, second.Error)
	}
	if !strings.Contains(second.Message, "Hello again.") {
		t.Errorf("resumed message = %q", second.Message)
	}
	missing := w.run(append(claudeArgs(exe), "--resume", "00000000-0000-4000-8000-000000000000", "--output", "json", "x")...)
	if missing.code != 4 {
		t.Errorf("resuming an unknown session: exit %d, want 4 (no session)\n%s", missing.code, tailStr(missing.stdout, 2000))
	}
}
