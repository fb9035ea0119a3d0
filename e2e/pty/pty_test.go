// Package pty runs the real tai binary with --driver pty: against the
// scripted fake TUI (driver/pty/internal/faketui) always, and against the
// real agent TUIs (qwen first) when scripts/install-agents.sh has
// installed them; otherwise those skip, saying why, unless CI is set.
//
//	go test ./e2e/pty
//	eval "$(scripts/install-agents.sh | sed 's/^/export /')" && go test ./e2e/pty -run Real -v
package pty

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tai-dev/tai/e2e/internal/build"
)

var taiBin, fakeBin string

func TestMain(m *testing.M) {
	build.Main(m, "tai-e2e-pty-", func(_ string, bins []string) { taiBin, fakeBin = bins[0], bins[1] },
		build.Tai, "github.com/tai-dev/tai/driver/pty/internal/faketui")
}

type outcome struct {
	stdout, stderr string
	code           int
}

type result struct {
	Status      string `json:"status"`
	StopReason  string `json:"stop_reason"`
	Driver      string `json:"driver"`
	Message     string `json:"message"`
	ExitCode    int    `json:"exit_code"`
	Error       string `json:"error"`
	Permissions []struct {
		OptionID   string `json:"option_id"`
		OptionKind string `json:"option_kind"`
		Verdict    string `json:"verdict"`
		ToolKind   string `json:"tool_kind"`
		Title      string `json:"title"`
	} `json:"permissions"`
}

// tai runs the binary to its end. The context only guards against a hang
// in tai itself; nothing asserts on time.
func tai(t *testing.T, dir string, env []string, args ...string) outcome {
	t.Helper()
	o := build.Run(t, taiBin, dir, append(env, "NO_COLOR=1", "XDG_STATE_HOME="+filepath.Join(filepath.Dir(dir), "state")), args...)
	return outcome{o.Stdout, o.Stderr, o.Code}
}

func parse(t *testing.T, o outcome) result {
	t.Helper()
	var r result
	if err := json.Unmarshal([]byte(o.stdout), &r); err != nil {
		t.Fatalf("stdout is not one JSON result (%v):\n%s\nstderr:\n%s", err, o.stdout, o.stderr)
	}
	if r.ExitCode != o.code {
		t.Fatalf("JSON exit_code %d but tai exited %d", r.ExitCode, o.code)
	}
	return r
}

// The fake TUI through the whole driver: text, a write allowed and denied
// by policy through the picker, a CR that is eaten and retried, picker
// keys that are dropped and pressed again, and a cancelled (timed-out)
// turn.
func TestFakeTUI(t *testing.T) {
	for _, tc := range []struct {
		name, prompt string
		args         []string
		code         int
		status, stop string
		message      string
		file         bool
		verdict      string
	}{
		{name: "text", prompt: "say hi", code: 0, status: "ok", stop: "end_turn", message: "Hello from the fake TUI.\nIt spans two lines."},
		{name: "write-allowed", prompt: "please write hello", args: []string{"--approve", "all"}, code: 0, status: "ok", stop: "end_turn",
			message: "I'll create hello.txt.\nCreated hello.txt.", file: true, verdict: "allow"},
		{name: "write-denied", prompt: "please write hello", args: []string{"--approve", "deny"}, code: 5, status: "denied", stop: "end_turn",
			message: "I'll create hello.txt.\nThe write was declined.", verdict: "deny"},
		{name: "cr-retried", prompt: "crtwice please", code: 0, status: "ok", stop: "end_turn", message: "Hello from the fake TUI.\nIt spans two lines."},
		// The picker drops the first keys unread: pressed again, once.
		{name: "picker-keys-lost-allowed", prompt: "please write hello lostkey", args: []string{"--approve", "all"}, code: 0, status: "ok", stop: "end_turn",
			message: "I'll create hello.txt.\nCreated hello.txt.", file: true, verdict: "allow"},
		{name: "picker-keys-lost-denied", prompt: "please write hello lostkey", args: []string{"--approve", "deny"}, code: 5, status: "denied", stop: "end_turn",
			message: "I'll create hello.txt.\nThe write was declined.", verdict: "deny"},
		// The keys are dropped, and the picker writes frames that change
		// nothing while it waits: pressed again all the same.
		{name: "picker-keys-lost-noisy", prompt: "please write hello lostkey noisy", args: []string{"--approve", "all", "--timeout", "60s"}, code: 0, status: "ok", stop: "end_turn",
			message: "I'll create hello.txt.\nCreated hello.txt.", file: true, verdict: "allow"},
		// The picker drains its input as it is drawn: a key that soon
		// ends the app. The keys wait for the output to pause.
		{name: "picker-drains-input", prompt: "please write hello drain", args: []string{"--approve", "all"}, code: 0, status: "ok", stop: "end_turn",
			message: "I'll create hello.txt.\nCreated hello.txt.", file: true, verdict: "allow"},
		// The reply is typed out after the screen went idle.
		{name: "reply-typed-out-after-idle", prompt: "typeout please", code: 0, status: "ok", stop: "end_turn", message: "Hello from the fake TUI."},
		{name: "timeout-cancels", prompt: "be slow", args: []string{"--timeout", "3s"}, code: 3, status: "timeout",
			message: "Request cancelled."}, // the Esc reached it: the agent says so
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			args := append([]string{"run", "--agent-cmd", fakeBin, "--driver", "pty", "-o", "json"}, tc.args...)
			o := tai(t, dir, os.Environ(), append(args, tc.prompt)...)
			r := parse(t, o)
			if o.code != tc.code || r.Status != tc.status || r.Driver != "pty" {
				t.Fatalf("exit %d status %q driver %q error %q; want %d %q pty\nstderr:\n%s", o.code, r.Status, r.Driver, r.Error, tc.code, tc.status, o.stderr)
			}
			if tc.stop != "" && r.StopReason != tc.stop {
				t.Errorf("stop reason %q, want %q", r.StopReason, tc.stop)
			}
			if r.Message != tc.message {
				t.Errorf("message %q, want %q", r.Message, tc.message)
			}
			_, err := os.Stat(filepath.Join(dir, "hello.txt"))
			if (err == nil) != tc.file {
				t.Errorf("hello.txt exists = %v, want %v", err == nil, tc.file)
			}
			if tc.verdict != "" {
				if len(r.Permissions) != 1 || r.Permissions[0].Verdict != tc.verdict || r.Permissions[0].ToolKind != "edit" {
					t.Errorf("permissions %+v, want one %s of an edit", r.Permissions, tc.verdict)
				}
			}
		})
	}
}

// A TUI that draws its idle screen before its input is up (opencode on a
// busy machine) loses the prompt typed at it, then redraws: a transcript
// that changed with no echo of the prompt and no reply is no sign the
// turn started. The prompt is typed again once the app is at rest; a TUI
// that never takes it fails the turn, saying so, instead of ending it
// end_turn with nothing done.
func TestFakeTUIPromptLostAtStart(t *testing.T) {
	for _, tc := range []struct {
		name, deaf string
		code       int
		status     string
		message    string
		errWant    string
	}{
		{name: "retyped", deaf: "1", code: 0, status: "ok", message: "Hello from the fake TUI.\nIt spans two lines."},
		{name: "never-taken", deaf: "always", code: 1, status: "error", errWant: "no sign of taking the prompt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			auditPath := filepath.Join(dir, "audit.jsonl")
			o := tai(t, dir, append(os.Environ(), "FAKETUI_DEAF="+tc.deaf), "run", "--agent-cmd", fakeBin, "--driver", "pty", "-o", "json", "--audit", auditPath, "say hi")
			r := parse(t, o)
			if r.Status != tc.status || r.Message != tc.message || (tc.code == 0) != (o.code == 0) || !strings.Contains(r.Error, tc.errWant) {
				t.Fatalf("exit %d status %q stop %q message %q error %q; want status %q message %q error ~%q\nstderr:\n%s\nlast screen:\n%s",
					o.code, r.Status, r.StopReason, r.Message, r.Error, tc.status, tc.message, tc.errWant, o.stderr, finalScreen(t, auditPath))
			}
		})
	}
}

// stream-json carries the PTY-only frames: status (working, waiting, idle)
// and screen.delta, and the decision of the picker.
func TestFakeTUIFrames(t *testing.T) {
	dir := t.TempDir()
	// --approve all: the fake TUI's write goes through; the frames are the subject.
	o := tai(t, dir, os.Environ(), "run", "--agent-cmd", fakeBin, "--driver", "pty", "--approve", "all", "-o", "stream-json", "please write hello")
	if o.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	states := map[string]bool{}
	types := map[string]int{}
	var screen []string
	sc := bufio.NewScanner(strings.NewReader(o.stdout))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var f struct {
			Type   string          `json:"type"`
			Status json.RawMessage `json:"status"`
			Screen *struct {
				From  int      `json:"from"`
				Lines []string `json:"lines"`
			} `json:"screen"`
		}
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatalf("frame is not JSON: %v", err)
		}
		types[f.Type]++
		if f.Type == "status" {
			var st struct {
				State string `json:"state"`
			}
			if err := json.Unmarshal(f.Status, &st); err != nil {
				t.Fatalf("status frame: %v", err)
			}
			states[st.State] = true
		}
		if f.Screen != nil {
			// Apply the delta: the transcript as a reader rebuilds it.
			if f.Screen.From > len(screen) {
				t.Fatalf("delta from %d past the transcript's %d lines", f.Screen.From, len(screen))
			}
			screen = append(screen[:f.Screen.From], f.Screen.Lines...)
		}
	}
	for _, s := range []string{"working", "waiting", "idle"} {
		if !states[s] {
			t.Errorf("no status %q frame; got %v", s, states)
		}
	}
	for _, ty := range []string{"session.started", "permission.asked", "permission.decided", "message.chunk", "turn.ended", "screen.delta", "result"} {
		if types[ty] == 0 {
			t.Errorf("no %s frame; got %v", ty, types)
		}
	}
	if got := strings.Join(screen, "\n"); !strings.Contains(got, "◆ Created hello.txt.") {
		t.Errorf("the rebuilt transcript lacks the reply:\n%s", got)
	}
}

// A release whose reply rows the profile does not know (the fake TUI
// marks them "✧", not "◆"): the reply is read by the fallback from what
// changed on screen, and the audit log's turn.end says so.
func TestFakeTUIReplyFallback(t *testing.T) {
	for _, tc := range []struct {
		name, prompt string
		args         []string
		marker       string
		code         int
		message      string
		source       string
	}{
		{"text", "say hi", nil, "✧", 0, "Hello from the fake TUI.\nIt spans two lines.", "fallback"},
		// --approve all: the write is allowed; the reply is the subject.
		{"write-allowed", "please write hello", []string{"--approve", "all"}, "✧", 0, "I'll create hello.txt.\nCreated hello.txt.", "fallback"},
		{"known-marker", "say hi", nil, "◆", 0, "Hello from the fake TUI.\nIt spans two lines.", "profile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			auditPath := filepath.Join(dir, "audit.jsonl")
			args := append([]string{"run", "--agent-cmd", fakeBin, "--driver", "pty", "-o", "json", "--audit", auditPath}, tc.args...)
			o := tai(t, dir, append(os.Environ(), "FAKETUI_MARKER="+tc.marker), append(args, tc.prompt)...)
			r := parse(t, o)
			if o.code != tc.code || r.Message != tc.message {
				t.Fatalf("exit %d message %q; want %d %q\nstderr:\n%s\nlast screen:\n%s", o.code, r.Message, tc.code, tc.message, o.stderr, finalScreen(t, auditPath))
			}
			if src := replySource(t, auditPath); src != tc.source {
				t.Errorf("turn.end reply_source %q, want %q", src, tc.source)
			}
		})
	}
}

// A TUI that restarts itself after its trust dialog (gemini) gives the
// terminal back to canonical mode with its idle screen still up, and the
// keys typed before the new process reads them are lost: the prompt waits
// for the new process instead, however long it takes to start.
func TestFakeTUIRestart(t *testing.T) {
	dir := t.TempDir()
	auditPath := filepath.Join(dir, "audit.jsonl")
	// --allow other: the restart question the fake TUI asks is allowed; the restart is the subject.
	o := tai(t, dir, append(os.Environ(), "FAKETUI_RESTART=1"), "run", "--agent-cmd", fakeBin, "--driver", "pty", "--allow", "other", "-o", "json", "--audit", auditPath, "say hi")
	r := parse(t, o)
	if o.code != 0 || r.Message != "Hello from the fake TUI.\nIt spans two lines." {
		t.Fatalf("exit %d message %q error %q\nstderr:\n%s\nlast screen:\n%s", o.code, r.Message, r.Error, o.stderr, finalScreen(t, auditPath))
	}
	if len(r.Permissions) != 1 || !strings.HasPrefix(r.Permissions[0].Title, "Trust folder") {
		t.Errorf("permissions %+v, want the one trust dialog", r.Permissions)
	}
}
