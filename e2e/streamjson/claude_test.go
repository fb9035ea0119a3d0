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
	limitScript = `{"limit":{"until":"2099-01-01T00:00:00Z"},"turns":[{"text":"never"}]}`
)

// claudeRun is a tai run of the real claude CLI over stream-json.
func claudeArgs(exe string, extra ...string) []string {
	cmd := exe + " -p --input-format stream-json --output-format stream-json --verbose"
	for _, e := range extra {
		cmd += " " + e
	}
	return []string{"--agent", "claude", "--driver", "stream-json", "--agent-cmd", cmd}
}

// TestClaude drives the claude CLI through tai; its cases name their
// setting: --approve all where the write must land, --approve deny and
// --mode acceptEdits where that policy is the case's subject.
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
				w.wrote(r, "hello.txt")
			}}},
		{name: "deny", script: writeScript, args: []string{"--approve", "deny", "--output", "json", "create hello.txt"}, code: 5, status: "denied",
			checks: []check{hello(false), func(t *testing.T, w *world, o outcome) {
				r := w.result(o)
				if len(r.Denials) != 1 || r.Denials[0].Verdict != "deny" {
					t.Errorf("denials = %+v, want one", r.Denials)
				}
				w.wrote(r)
			}}},
		{name: "mode", script: writeScript, args: []string{"--mode", "acceptEdits", "--output", "stream-json", "create hello.txt"}, code: 0,
			// In acceptEdits Claude writes without asking: the file proves
			// the mode is in effect, the frame that the CLI confirmed it.
			checks: []check{hello(true), func(t *testing.T, w *world, o outcome) {
				var modes []string
				asked, written := 0, 0
				for _, f := range w.frames(o.stdout) {
					switch f["type"] {
					case "mode.changed":
						modes = append(modes, f["mode"].(map[string]any)["id"].(string))
					case "permission.asked":
						asked++
					case "file.written":
						written++
					}
				}
				if written != 1 {
					t.Errorf("%d file.written frames, want 1", written)
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
		// The account at its limit: the model answers Anthropic's 429
		// rate_limit_error until 2099 (CLAUDE_CODE_MAX_RETRIES=0: the CLI
		// does not retry), and the run parks (exit 75) with the session.
		{name: "usage-limit", script: limitScript, env: []string{"CLAUDE_CODE_MAX_RETRIES=0"}, args: []string{"--output", "json", "hit the limit"}, code: 75, status: "parked",
			checks: []check{func(t *testing.T, w *world, o outcome) {
				if !strings.Contains(o.stdout, `"parked": {`) || !strings.Contains(o.stdout, `"account": {`) {
					t.Errorf("no parked details:\n%s", tailStr(o.stdout, 3000))
				}
			}}},
		{name: "max-turns", script: writeScript, cliArgs: []string{"--max-turns", "1"}, args: []string{"--approve", "all", "--output", "json", "create hello.txt"},
			code: 0, status: "ok", stop: "max_turn_requests",
			checks: []check{func(t *testing.T, w *world, o outcome) { w.wrote(w.result(o), "hello.txt") }}},
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
	// tai kept the session with the workspace: --continue finds it.
	third := w.result(w.run(append(claudeArgs(exe), "--continue", "--output", "json", "and again")...))
	if third.Status != "ok" || third.SessionID != first.SessionID {
		t.Fatalf("--continue: status %q session %q, want ok %q (error %q)", third.Status, third.SessionID, first.SessionID, third.Error)
	}
	missing := w.run(append(claudeArgs(exe), "--resume", "00000000-0000-4000-8000-000000000000", "--output", "json", "x")...)
	if missing.code != 4 {
		t.Errorf("resuming an unknown session: exit %d, want 4 (no session)\n%s", missing.code, tailStr(missing.stdout, 2000))
	}
}

const rmScript = `{"turns":[
  {"text":"Tidying up.","tool":{"Bash":{"command":"rm notes.txt","description":"Remove the notes"}}},
  {"text":"Removed notes.txt."}],"default":{"text":"Done."}}`

// TestClaudeHooks: tools Claude runs without asking tai (allowed by the
// user's own ~/.claude/settings.json, or by acceptEdits) still meet tai's
// deny rules, through the PreToolUse hook tai registers: the call is
// refused, the denial is in the result and tai exits 5. A call tai does not
// object to runs without anyone being asked, is listed in files_written,
// and the Stop hook puts the CLI's own transcript in the audit log.
// --approve all (or --mode acceptEdits) with a --deny rule: the deny
// policy is the subject, everything else is allowed.
func TestClaudeHooks(t *testing.T) {
	exe := claudeExe(t)
	tests := []struct {
		name     string
		script   string
		settings string // ~/.claude/settings.json
		args     []string
		code     int
		// kept: the file the call would have created or removed exists
		// afterwards.
		file string
		kept bool
	}{
		{name: "settings-allow-write", script: writeScript, settings: `{"permissions":{"allow":["Write"]}}`,
			args: []string{"--approve", "all", "--deny", "edit:**/hello.txt"}, code: 5, file: "hello.txt", kept: false},
		{name: "settings-allow-rm", script: rmScript, settings: `{"permissions":{"allow":["Bash(rm:*)"]}}`,
			args: []string{"--approve", "all", "--deny", "execute:rm *"}, code: 5, file: "notes.txt", kept: true},
		{name: "accept-edits", script: writeScript,
			args: []string{"--mode", "acceptEdits", "--deny", "edit:**/hello.txt"}, code: 5, file: "hello.txt", kept: false},
		{name: "no-objection", script: writeScript, settings: `{"permissions":{"allow":["Write"]}}`,
			args: []string{"--approve", "all"}, code: 0, file: "hello.txt", kept: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, tt.script)
			w.claudeEnv()
			w.audit = filepath.Join(w.dir, "audit.jsonl")
			if tt.settings != "" {
				writeFile(t, filepath.Join(w.home, ".claude", "settings.json"), tt.settings)
			}
			writeFile(t, filepath.Join(w.repo, "notes.txt"), "notes\n")
			o := w.run(append(append(claudeArgs(exe), tt.args...), "--output", "json", "do it")...)
			if o.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s", o.code, tt.code, tailStr(o.stdout, 3000))
			}
			r := w.result(o)
			// The hook decided: Claude never asked.
			if n := w.wire("in", `"callback_id":"tai_pre_tool_use"`); n != 1 {
				t.Errorf("%d PreToolUse hook callbacks, want 1", n)
			}
			if n := w.wire("in", `"subtype":"can_use_tool"`); n != 0 {
				t.Errorf("Claude asked %d times: the case does not test the hook", n)
			}
			if _, err := os.Stat(filepath.Join(w.repo, tt.file)); (err == nil) != tt.kept {
				t.Errorf("%s exists = %v, want %v", tt.file, err == nil, tt.kept)
			}
			if tt.code == 5 {
				if r.Status != "denied" || len(r.Denials) != 1 || !strings.HasPrefix(r.Denials[0].DecidedBy, "rule:") {
					t.Errorf("status %q denials %+v, want one by a rule", r.Status, r.Denials)
				}
				w.wrote(r)
			} else {
				if len(r.Permissions) != 0 {
					t.Errorf("permissions = %+v, want none", r.Permissions)
				}
				w.wrote(r, "hello.txt")
			}
			w.checkAuditStop()
			w.saveWire("claude", "hook-"+tt.name)
		})
	}
}

// checkAuditStop: the audit log has the turn's Stop hook, naming the CLI's
// transcript file, which exists.
func (w *world) checkAuditStop() {
	w.t.Helper()
	b, err := os.ReadFile(w.audit)
	if err != nil {
		w.t.Fatal(err)
	}
	stops := 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e struct {
			Kind string `json:"kind"`
			Data struct {
				TranscriptPath string `json:"transcript_path"`
				StopHookActive *bool  `json:"stop_hook_active"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			w.t.Fatalf("audit line: %v", err)
		}
		if e.Kind != "agent.stop" {
			continue
		}
		stops++
		if e.Data.StopHookActive == nil || !strings.HasPrefix(e.Data.TranscriptPath, w.home) {
			w.t.Errorf("agent.stop entry %s", line)
		} else if _, err := os.Stat(e.Data.TranscriptPath); err != nil {
			w.t.Errorf("the transcript the CLI named: %v", err)
		}
	}
	if stops != 1 {
		w.t.Errorf("%d agent.stop entries in the audit log, want 1", stops)
	}
}
