package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The default script, approved: every step shows in text and JSON, files
// are really written and terminal output comes back.
func TestBuiltinDefaultScriptText(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := tai(t, dir, "run", "--approve", "all", "show me everything")
	if o.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	for _, want := range []string{
		"session · builtin-",           // session started
		"thinking: ",                   // thought
		"◆ plan",                       // plan
		"Hi! I'm tai's built-in agent", // message text
		"[edit] Write notes.txt",       // tool call with location
		"+Hello from tai!",             // diff
		"created " + filepath.Join(dir, "hello.txt"),
		"[read] Read notes.txt",
		"terminal-ok", // terminal output
		"exit 0",
		"◆ commands: /echo",     // available commands
		"◆ mode → accept-edits", // mode switch
		"◆ context 12800/200000",
		"◆ title: Built-in agent tour",
		"■ turn ended: end_turn",
	} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("text output lacks %q", want)
		}
	}
	if strings.Contains(o.stdout, "\x1b[") {
		t.Error("colour codes with NO_COLOR set and a pipe")
	}
	b, err := os.ReadFile(filepath.Join(dir, "hello.txt"))
	if err != nil || string(b) != "Hello from tai!\n" {
		t.Fatalf("hello.txt = %q, %v", b, err)
	}
}

func TestBuiltinDefaultScriptJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// --approve all: the default script's writes and command must land; the JSON result is the subject.
	o := tai(t, dir, "run", "--approve", "all", "-o", "json", "go")
	r := jsonResult(t, o)
	if r.Status != "ok" || r.StopReason != "end_turn" || r.ExitCode != 0 || !strings.HasPrefix(r.SessionID, "builtin-") || r.Agent != "builtin" {
		t.Fatalf("result: %+v", r)
	}
	// Three asked (two writes, the mode switch), four decided unasked (the
	// reads, two of them before the writes, and the command).
	if len(r.Permissions) != 7 || unrequested(r.Permissions) != 4 || len(r.Denials) != 0 {
		t.Fatalf("permissions %+v denials %+v", r.Permissions, r.Denials)
	}
	for _, p := range r.Permissions {
		if p.Verdict != "allow" || p.DecidedBy != "default" {
			t.Errorf("decision %+v", p)
		}
	}
	if len(r.FilesWritten) != 2 {
		t.Fatalf("files_written %+v", r.FilesWritten)
	}
	for _, f := range r.FilesWritten {
		if _, err := os.Stat(f.Path); err != nil || !strings.HasPrefix(f.HashAfter, "sha256:") {
			t.Errorf("file %+v: %v", f, err)
		}
	}
	if len(r.Terminals) != 1 || r.Terminals[0].ExitCode == nil || *r.Terminals[0].ExitCode != 0 {
		t.Fatalf("terminals %+v", r.Terminals)
	}
	if !strings.Contains(r.Message, "terminal-ok") || !strings.Contains(r.Message, "That's the tour") {
		t.Fatalf("message %q", r.Message)
	}
}

func TestBuiltinStreamJSONFrames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// --approve all: the default script's writes and command must land; the frames are the subject.
	o := tai(t, dir, "run", "--approve", "all", "-o", "stream-json", "go")
	if o.code != 0 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	fs := frames(t, o.stdout)
	types := frameTypes(fs)
	for _, want := range []string{"session.started", "message.chunk", "tool_call", "plan", "permission.asked", "permission.decided",
		"mode.changed", "commands", "config_options", "session.info", "usage", "file.written", "terminal.exited", "turn.ended", "result"} {
		if types[want] == 0 {
			t.Errorf("no %s frame (got %v)", want, types)
		}
	}
	last := fs[len(fs)-1]
	if last["type"] != "result" || last["status"] != "ok" || last["exit_code"] != float64(0) {
		t.Fatalf("last frame %v", last)
	}
	var prev float64
	for _, f := range fs {
		seq := f["seq"].(float64)
		if seq <= prev {
			t.Fatalf("seq not increasing: %v after %v", seq, prev)
		}
		prev = seq
		if f["type"] != "result" && f["session"] == "" {
			t.Fatalf("frame without session: %v", f)
		}
	}
}

// Denied edits take the agent's skip path: no file, exit 5, denials listed.
func TestBuiltinDenied(t *testing.T) {
	t.Parallel()
	for _, approve := range []string{"deny", "reads", "ask"} {
		t.Run(approve, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			// --approve deny|reads|ask: each policy that refuses the script's write is the subject.
			o := tai(t, dir, "run", "--approve", approve, "-o", "json", "go")
			r := jsonResult(t, o)
			if o.code != 5 || r.Status != "denied" || len(r.Denials) == 0 {
				t.Fatalf("exit %d result %+v", o.code, r)
			}
			if _, err := os.Stat(filepath.Join(dir, "hello.txt")); !os.IsNotExist(err) {
				t.Fatalf("hello.txt exists after a denial: %v", err)
			}
			if !strings.Contains(r.Message, "Skipped writing hello.txt: permission denied.") {
				t.Fatalf("agent did not take its skip path: %q", r.Message)
			}
			for _, d := range r.Denials {
				if d.OptionID == "" || !strings.HasPrefix(d.OptionID, "reject") {
					t.Errorf("denial did not select a reject option: %+v", d)
				}
			}
		})
	}
}

func TestBuiltinAllowDenials(t *testing.T) {
	t.Parallel()
	// --approve deny makes a denial; --allow-denials on it is the subject.
	o := tai(t, t.TempDir(), "run", "--approve", "deny", "--allow-denials", "-o", "json", "go")
	r := jsonResult(t, o)
	if o.code != 0 || r.Status != "ok" || len(r.Denials) == 0 {
		t.Fatalf("exit %d %+v", o.code, r)
	}
}

func TestBuiltinNonInteractiveFail(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// --approve ask with no one to answer: --non-interactive fail is the subject.
	o := tai(t, dir, "run", "--approve", "ask", "--non-interactive", "fail", "-o", "json", "go")
	r := jsonResult(t, o)
	if o.code != 5 || r.Status != "denied" || !strings.Contains(r.Error, "prompt unavailable") {
		t.Fatalf("exit %d %+v", o.code, r)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.txt")); !os.IsNotExist(err) {
		t.Fatal("notes.txt written although the run failed at the first ask")
	}
}

func TestBuiltinModeAndModel(t *testing.T) {
	t.Parallel()
	// --approve all lets the script run; --mode plan and --model are the subject.
	o := tai(t, t.TempDir(), "run", "--approve", "all", "--mode", "plan", "--model", "builtin-large", "-o", "stream-json", "/echo hi")
	if o.code != 0 {
		t.Fatalf("exit %d %s", o.code, o.stderr)
	}
	var sawMode, sawModel bool
	for _, f := range frames(t, o.stdout) {
		if f["type"] == "mode.changed" && f["mode"].(map[string]any)["id"] == "plan" {
			sawMode = true
		}
		if f["type"] == "config_options" {
			for _, c := range f["config_options"].([]any) {
				c := c.(map[string]any)
				if c["id"] == "model" && c["current_value"] == "builtin-large" {
					sawModel = true
				}
			}
		}
	}
	if !sawMode || !sawModel {
		t.Fatalf("mode applied %v, model applied %v:\n%s", sawMode, sawModel, o.stdout)
	}
	o = tai(t, t.TempDir(), "run", "--model", "gpt-9", "/echo hi")
	if o.code != 2 || !strings.Contains(o.stderr, "builtin-small") {
		t.Fatalf("bad model: exit %d %s", o.code, o.stderr)
	}
}

func TestBuiltinSlashCommand(t *testing.T) {
	t.Parallel()
	o := tai(t, t.TempDir(), "run", "-o", "json", "/echo ping pong")
	r := jsonResult(t, o)
	if o.code != 0 || strings.TrimSpace(r.Message) != "ping pong" {
		t.Fatalf("exit %d message %q", o.code, r.Message)
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"run", "--agent", "no-such-agent", "hi"},
		// --approve with a bad value: the usage error is the subject.
		{"run", "--approve", "sometimes", "hi"},
		{"run", "--output", "xml", "hi"},
		{"run"},
		{"run", "--no-such-flag"},
	} {
		o := tai(t, t.TempDir(), args...)
		if o.code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)\n%s", args, o.code, o.stderr)
		}
	}
}

func TestResumeUnknownSession(t *testing.T) {
	t.Parallel()
	o := tai(t, t.TempDir(), "run", "--resume", "builtin-nope", "-o", "json", "hi")
	r := jsonResult(t, o)
	if o.code != 4 || r.Status != "no_session" {
		t.Fatalf("exit %d %+v", o.code, r)
	}
}

func TestAuthRequired(t *testing.T) {
	t.Parallel()
	o := tai(t, t.TempDir(), "run", "--agent-cmd", builtinWith(script("auth.yaml")), "hi")
	if o.code != 1 || !strings.Contains(o.stderr, "--auth METHOD") || !strings.Contains(o.stderr, "token") {
		t.Fatalf("exit %d stderr %s", o.code, o.stderr)
	}
	o = tai(t, t.TempDir(), "run", "--agent-cmd", builtinWith(script("auth.yaml")), "--auth", "token", "-o", "json", "hi")
	r := jsonResult(t, o)
	if o.code != 0 || !strings.Contains(r.Message, "authenticated") {
		t.Fatalf("exit %d %+v", o.code, r)
	}
}

func TestAgentsList(t *testing.T) {
	t.Parallel()
	o := tai(t, t.TempDir(), "agents")
	for _, name := range []string{"builtin", "claude", "codex", "gemini", "qwen", "opencode", "copilot", "goose", "kimi", "cursor"} {
		if !strings.Contains(o.stdout, "\n"+name+" ") {
			t.Errorf("tai agents lacks %s:\n%s", name, o.stdout)
		}
	}
	if !strings.Contains(o.stdout, "builtin   acp     yes") {
		t.Errorf("builtin not shown as installed:\n%s", o.stdout)
	}
}
