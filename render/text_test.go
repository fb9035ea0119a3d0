package render

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/driver"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func ptr[T any](v T) *T { return &v }

// session is a fixed event sequence covering every event type.
func session() []driver.Event {
	code0 := 0
	old := "package a\n\nfunc A() {}\n\nfunc B() {}\n\nfunc C() {}\n\nfunc D() {}\n"
	return []driver.Event{
		{Type: driver.EventSessionStarted, Session: "s1", Started: &driver.SessionStarted{Agent: "builtin", AgentName: "tai-builtin", AgentVersion: "1.0", Cwd: "/ws", CurrentMode: "default", Modes: []driver.ModeInfo{{ID: "plan"}, {ID: "default"}}}},
		{Type: driver.EventCommands, Commands: []driver.Command{{Name: "echo"}, {Name: "help"}}},
		{Type: driver.EventMessage, Message: &driver.MessageChunk{Role: driver.RoleThought, Text: "Let me think."}},
		{Type: driver.EventPlan, Plan: &driver.Plan{Entries: []driver.PlanEntry{{Content: "Edit a.txt", Status: "pending"}, {Content: "Run tests", Status: "pending"}}}},
		{Type: driver.EventMessage, Message: &driver.MessageChunk{Role: driver.RoleAgent, Text: "Hello "}},
		{Type: driver.EventMessage, Message: &driver.MessageChunk{Role: driver.RoleAgent, Text: "world."}},
		{Type: driver.EventPlan, Plan: &driver.Plan{Entries: []driver.PlanEntry{{Content: "Edit a.txt", Status: "in_progress"}, {Content: "Run tests", Status: "pending"}}}},
		{Type: driver.EventToolCall, ToolCall: &driver.ToolCall{ID: "t1", Title: "Edit a.txt", Kind: "edit", Status: "pending",
			Locations: []driver.Location{{Path: "/ws/a.txt", Line: 3}},
			Content:   []driver.ToolContent{{Type: "diff", Path: "/ws/a.txt", OldText: &old, NewText: strings.Replace(old, "func C() {}", "func C() { return }", 1)}}}},
		{Type: driver.EventPermissionAsked, Permission: &driver.PermissionRequest{ID: "0", ToolCall: driver.ToolCall{ID: "t1", Title: "Edit a.txt", Kind: "edit", Locations: []driver.Location{{Path: "/ws/a.txt"}}}}},
		{Type: driver.EventPermissionDecided, Decision: &driver.PermissionDecision{Verdict: "allow", OptionID: "allow", DecidedBy: "default", Reason: "mode approve-all allows every request"}},
		{Type: driver.EventFileWritten, File: &driver.FileWrite{Path: "/ws/a.txt", Size: 9}},
		{Type: driver.EventToolCall, ToolCall: &driver.ToolCall{ID: "t1", Title: "Edit a.txt", Kind: "edit", Status: "completed"}},
		{Type: driver.EventToolCall, ToolCall: &driver.ToolCall{ID: "t2", Title: "Run tests", Kind: "execute", Status: "in_progress"}},
		{Type: driver.EventTerminalExited, Terminal: &driver.TerminalExit{Command: "go", Args: []string{"test", "./..."}, Cwd: "/ws", ExitCode: &code0, DurationMS: 12}},
		{Type: driver.EventTerminalExited, Terminal: &driver.TerminalExit{Command: "sh", Args: []string{"-c", "echo terminal-ok; ls"}, Cwd: "/ws", ExitCode: &code0, DurationMS: 3}},
		{Type: driver.EventToolCall, ToolCall: &driver.ToolCall{ID: "t2", Title: "Run tests", Kind: "execute", Status: "failed", Content: []driver.ToolContent{{Type: "text", Text: "FAIL x\nFAIL y"}}}},
		{Type: driver.EventPermissionAsked, Permission: &driver.PermissionRequest{ID: "tai-1", Unrequested: true, ToolCall: driver.ToolCall{Title: "Run `git push`", Kind: "execute", RawInput: []byte(`{"command":"git","args":["push","origin","HEAD:main"]}`)}}},
		{Type: driver.EventPermissionDecided, Decision: &driver.PermissionDecision{Verdict: "deny", OptionID: "reject", DecidedBy: "rule:no-push", Reason: "pushing is not allowed", Unrequested: true}},
		{Type: driver.EventModeChanged, Mode: &driver.Mode{ID: "plan"}},
		{Type: driver.EventConfigOptions, Config: []driver.ConfigOption{{ID: "model", Type: "select", CurrentValue: []byte(`"m1"`)}}},
		{Type: driver.EventSessionInfo, Info: &driver.SessionInfo{Title: ptr("A title")}},
		{Type: driver.EventUsage, Usage: &driver.Usage{ContextUsed: 100, ContextSize: 1000, CostAmount: 0.25, Currency: "USD"}},
		{Type: driver.EventStatus, Status: &driver.Status{State: "idle"}},
		{Type: driver.EventScreenDelta, Screen: &driver.ScreenDelta{From: 3, Lines: []string{"screen line"}}},
		{Type: driver.EventError, Error: &driver.ErrorInfo{Code: "outside_workspace", Message: "refused /etc/passwd"}},
		{Type: driver.EventRaw, Raw: &driver.RawUpdate{Kind: "subagent_update"}},
		{Type: driver.EventTurnEnded, Turn: &driver.TurnEnded{StopReason: "end_turn"}},
		{Type: driver.EventProcessExited, Process: &driver.ProcessExit{Pid: 42, ExitCode: &code0}},
	}
}

func TestTextGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		color bool
	}{{"text", false}, {"text-color", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			r := NewText(&b, tc.color)
			for _, ev := range session() {
				r.Emit(ev)
			}
			golden := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Fatalf("output differs from %s (run with -update to accept):\n%s", golden, b.String())
			}
			if !tc.color && bytes.Contains(b.Bytes(), []byte("\x1b[")) {
				t.Fatal("colour codes with colour off")
			}
		})
	}
}

func TestFramesOnePerLine(t *testing.T) {
	var b bytes.Buffer
	f := NewFrames(&b)
	evs := session()
	for _, ev := range evs {
		f.Emit(ev)
	}
	if n := bytes.Count(b.Bytes(), []byte("\n")); n != len(evs) {
		t.Fatalf("%d lines for %d events", n, len(evs))
	}
}

// A replace chunk shows only what is new when it extends what was shown,
// and the whole message again when the TUI redrew it.
func TestTextReplace(t *testing.T) {
	msg := func(text string, replace bool) driver.Event {
		return driver.Event{Type: driver.EventMessage, Message: &driver.MessageChunk{Role: driver.RoleAgent, MessageID: "p", Text: text, Replace: replace}}
	}
	// chunked streams text in chunks of the sizes given, round and round.
	chunked := func(text string, sizes ...int) []driver.Event {
		var evs []driver.Event
		for i := 0; len(text) > 0; i++ {
			n := min(sizes[i%len(sizes)], len(text))
			evs = append(evs, msg(text[:n], false))
			text = text[n:]
		}
		return evs
	}
	long := strings.Repeat("0123456789abcdef", 64)
	huge := strings.Repeat("x", 5<<20)
	for _, tc := range []struct {
		name   string
		events []driver.Event
		want   string
	}{
		{"extends", []driver.Event{msg("a\n", false), msg("a\nb", true)}, "a\nb\n"},
		{"redrawn", []driver.Event{msg("**a**\n", false), msg("a\nb", true)}, "**a**\na\nb\n"},
		{"same", []driver.Event{msg("a\n", false), msg("a\n", true)}, "a\n"},
		// Shown in chunks of every size, the hash split where they split.
		{"extends what many chunks showed", append(chunked(long, 1, 7, 200, 3), msg(long+"end", true)), long + "end\n"},
		{"a chunk changed in the middle", append(chunked(long, 100), msg(long[:150]+"X"+long[151:], true)), long + "\n" + long[:150] + "X" + long[151:] + "\n"},
		{"replaced twice", []driver.Event{msg("a", false), msg("ab", true), msg("abc", true)}, "abc\n"},
		{"replaced, then extended", []driver.Event{msg("a", false), msg("ab", true), msg("c", false), msg("abcd", true)}, "abcd\n"},
		// More than the 4 MiB the shown text was once bounded by.
		{"a long message extended", []driver.Event{msg(huge, false), msg(huge+"!", true)}, huge + "!\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			r := NewText(&b, false)
			for _, ev := range tc.events {
				r.Emit(ev)
			}
			r.Emit(driver.Event{Type: driver.EventTurnEnded, Turn: &driver.TurnEnded{StopReason: "end_turn"}})
			if got := b.String(); got[:min(len(got), len(tc.want))] != tc.want {
				t.Fatalf("shown %q, want it to start %q", got, tc.want)
			}
		})
	}
}

func TestShellLine(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		args []string
		want string
	}{
		{"sh", []string{"-c", "echo terminal-ok; ls"}, `sh -c 'echo terminal-ok; ls'`},
		{"go", []string{"test", "./..."}, "go test ./..."},
		{"echo", []string{"it's", ""}, `echo "it's" ''`},
		{"printf", []string{"a\nb"}, `printf $'a\nb'`},
		{"x", []string{"nul\x00"}, `x "nul\x00"`},
	} {
		if got := ShellLine(tc.cmd, tc.args); got != tc.want {
			t.Errorf("ShellLine(%q, %q) = %s, want %s", tc.cmd, tc.args, got, tc.want)
		}
	}
}

func TestUnifiedDiff(t *testing.T) {
	old := "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n"
	lines, err := UnifiedDiff(driver.ToolContent{Path: "/ws/a.txt", OldText: &old, NewText: strings.Replace(old, "five", "FIVE", 1)}, "")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(lines, "\n")
	want := "--- a/ws/a.txt\n+++ b/ws/a.txt\n@@ -2,7 +2,7 @@\n two\n three\n four\n-five\n+FIVE\n six\n seven\n eight"
	if got != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", got, want)
	}
	if lines, err := UnifiedDiff(driver.ToolContent{Path: "a", OldText: &old, NewText: old}, ""); lines != nil || err != nil {
		t.Errorf("no change: %q %v", lines, err)
	}
	if lines, err := UnifiedDiff(driver.ToolContent{Path: "e", NewText: ""}, ""); err != nil || len(lines) != 1 || lines[0] != "(an empty file)" {
		t.Errorf("new empty file: %q %v", lines, err)
	}
	lines, err = UnifiedDiff(driver.ToolContent{Path: "/ws/n.txt", NewText: "a\nb\n"}, "")
	if err != nil || strings.Join(lines, "\n") != "--- /dev/null\n+++ b/ws/n.txt\n@@ -0,0 +1,2 @@\n+a\n+b" {
		t.Errorf("new file: %q %v", lines, err)
	}
	// The headers name a file in the workspace from its root; one outside
	// it, whole.
	for _, tc := range []struct{ root, path, want string }{
		{"/ws", "/ws/a.txt", "--- a/a.txt\n+++ b/a.txt"},
		{"/ws/", "/ws/sub/a.txt", "--- a/sub/a.txt\n+++ b/sub/a.txt"},
		{"/w", "/ws/a.txt", "--- a/ws/a.txt\n+++ b/ws/a.txt"},
		{"/ws/sub", "/ws/a.txt", "--- a/ws/a.txt\n+++ b/ws/a.txt"},
		{"/ws", "rel/a.txt", "--- a/rel/a.txt\n+++ b/rel/a.txt"},
	} {
		lines, err := UnifiedDiff(driver.ToolContent{Path: tc.path, OldText: &old, NewText: old + "x\n"}, tc.root)
		if err != nil || strings.Join(lines[:2], "\n") != tc.want {
			t.Errorf("root %s, %s: %q %v", tc.root, tc.path, lines, err)
		}
	}
	big := strings.Repeat("x", maxDiffBytes)
	if _, err := UnifiedDiff(driver.ToolContent{Path: "a", OldText: &big, NewText: big + "y"}, ""); err == nil {
		t.Error("a huge diff was computed")
	}
}

func TestShownDiff(t *testing.T) {
	r := NewText(io.Discard, false)
	for _, ev := range session() {
		r.Emit(ev)
	}
	if !r.ShownDiff("t1") || r.ShownDiff("t2") {
		t.Fatalf("ShownDiff t1=%v t2=%v, want true false", r.ShownDiff("t1"), r.ShownDiff("t2"))
	}
}

// Message, plain tool call and plan frames are encoded by hand: byte for
// byte what encoding/json writes for the event.
func TestMessageFramesAsEncodingJSON(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 60700, time.UTC)
	var evs []driver.Event
	for _, m := range []driver.MessageChunk{
		{Role: driver.RoleAgent, Text: "hello \"world\"\n<&>\u2028\xff"},
		{Role: driver.RoleThought, MessageID: "m\t1", Text: "x", Replace: true},
		{Role: driver.RoleUser},
	} {
		evs = append(evs, driver.Event{Type: driver.EventMessage, Message: &m})
	}
	for _, tc := range []driver.ToolCall{{ID: "t1"}, {ID: "t\"2", Title: "<T>", Kind: "edit", Status: "pending", Name: "n"}} {
		evs = append(evs, driver.Event{Type: driver.EventToolCall, ToolCall: &tc})
	}
	for _, p := range []driver.Plan{{}, {Entries: []driver.PlanEntry{}}, {Entries: []driver.PlanEntry{{Content: "a\nb"}, {Content: "c", Priority: "high", Status: "done"}}}} {
		evs = append(evs, driver.Event{Type: driver.EventPlan, Plan: &p})
	}
	old := "a <b>\n"
	rich := driver.ToolCall{ID: "t3", Title: "Edit", Kind: "edit", Status: "in_progress", Locations: []driver.Location{{Path: "/a"}, {Path: "/b\"", Line: 3}},
		Content:  []driver.ToolContent{{Type: "diff", Path: "/a", OldText: &old, NewText: "n"}, {Type: "terminal", TerminalID: "term-1"}, {Type: "x", Raw: json.RawMessage(`{"k": [1, "<&>"]}`)}},
		RawInput: json.RawMessage(`{"command": "rm -rf \"/\""}`), RawOutput: json.RawMessage(`"ok"`)}
	evs = append(evs, driver.Event{Type: driver.EventToolCall, ToolCall: &rich}, driver.Event{Type: driver.EventToolCall, ToolCall: &driver.ToolCall{ID: "t4", RawInput: json.RawMessage(`{}`)}})
	for _, p := range []driver.PermissionRequest{{ID: "1"}, {ID: "2", Session: "s", ToolCall: rich, Options: []driver.PermissionOption{{ID: "allow", Name: "Allow <once>", Kind: "allow_once"}}, Unrequested: true}} {
		evs = append(evs, driver.Event{Type: driver.EventPermissionAsked, Permission: &p})
	}
	bad := driver.ToolCall{ID: "t5", RawInput: json.RawMessage(`{"a":`)} // not JSON: encoding/json's error, nothing written
	var badOut bytes.Buffer
	if err := (&FrameEncoder{}).Write(&badOut, driver.Event{Type: driver.EventToolCall, ToolCall: &bad}, "", ""); err == nil || badOut.Len() > 0 {
		t.Errorf("a tool call whose raw input is not JSON: err %v, wrote %q", err, badOut.String())
	}
	for _, d := range []driver.PermissionDecision{{}, {RequestID: "7", ToolCallID: "t<1>", Title: "rm \"-rf\"\n", ToolKind: "execute", Outcome: "selected",
		OptionID: "o", OptionKind: "allow_once", Verdict: "allow", DecidedBy: "rule:x", Reason: "é\u2028\xff", Via: "feed", Unrequested: true}} {
		evs = append(evs, driver.Event{Type: driver.EventPermissionDecided, Decision: &d})
	}
	evs = append(evs, driver.Event{Type: driver.EventUsage, Usage: &driver.Usage{ContextUsed: 1}}) // by encoding/json
	var shared FrameEncoder                                                                        // one encoder for every frame: what it keeps from one to the next is right for the next
	for _, ev := range evs {
		for _, sess := range []string{"", "s-1"} {
			ev.Session, ev.Seq, ev.Time = sess, 42, ts
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(ev); err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			f := NewFrames(&got)
			f.Emit(ev)
			if err := f.Flush(); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("got  %s\nwant %s", got.String(), want.String())
			}
			// Tagged with the run and task, as the feed sends them.
			for _, tag := range [][2]string{{"run-1", ""}, {"", "t1"}, {"r\"1", "<t>"}} {
				want.Reset()
				if err := enc.Encode(Tagged{Run: tag[0], Task: tag[1], Event: ev}); err != nil {
					t.Fatal(err)
				}
				got.Reset()
				var fe FrameEncoder
				if err := fe.Write(&got, ev, tag[0], tag[1]); err != nil {
					t.Fatal(err)
				}
				if got.String() != want.String() {
					t.Errorf("tagged %q: got  %s\nwant %s", tag, got.String(), want.String())
				}
				got.Reset()
				if err := shared.Write(&got, ev, tag[0], tag[1]); err != nil || got.String() != want.String() {
					t.Errorf("tagged %q, shared encoder: got  %s\nwant %s", tag, got.String(), want.String())
				}
			}
		}
	}
}

// hostile is what an agent adds to its strings to act on the terminal that
// shows them: erase the line, move back over it, reverse what follows.
const hostile = "\x1b[2K\x1b[8D\x1b[K\u202e\u0085\u200b"

// hostileSession is session() with hostile appended to every string an
// agent could have sent, found by walking the events' JSON, so that a field
// added to an event is covered when session() shows it.
func hostileSession(t *testing.T) []driver.Event {
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			return x + hostile
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case map[string]any:
			for k, e := range x {
				switch k {
				case "type", "status", "role", "ts": // what the renderer switches on, not shows
				default:
					x[k] = walk(e)
				}
			}
		}
		return v
	}
	var out []driver.Event
	for _, ev := range session() {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		b, err = json.Marshal(walk(m))
		if err != nil {
			t.Fatal(err)
		}
		var h driver.Event
		if err := json.Unmarshal(b, &h); err != nil {
			t.Fatal(err)
		}
		out = append(out, h)
	}
	return out
}

// No string from an agent reaches the terminal as anything but text: with
// colour off, the output holds no control character but newlines, and no
// bidi or invisible format character; what was sent is shown escaped.
func TestTextEscapesAgentStrings(t *testing.T) {
	var b bytes.Buffer
	r := NewText(&b, false)
	for _, ev := range hostileSession(t) {
		r.Emit(ev)
	}
	_ = r.Flush()
	out := b.String()
	for i, c := range out {
		if (c < 0x20 && c != '\n') || c == 0x7f || (c >= 0x80 && c < 0xa0) || (c >= 0x2066 && c <= 0x2069) || (c >= 0x202a && c <= 0x202e) || c == 0x200b {
			t.Fatalf("%U at byte %d reaches the terminal:\n%q", c, i, out)
		}
	}
	if want := `\x1b[2K\x1b[8D\x1b[K\u202e\u0085\u200b`; !strings.Contains(out, "? permission: [edit"+want+"] Edit a.txt"+want) {
		t.Fatalf("the permission line does not show the escapes:\n%s", out)
	}
}

// A permission line shows what would run, read from the raw input and
// quoted once, whatever the title says; an execute call without a command
// says so.
func TestPermissionShowsTheCommand(t *testing.T) {
	for _, tt := range []struct {
		name string
		tc   driver.ToolCall
		want string // the line after the permission line; "" for none
	}{
		{"shell line", driver.ToolCall{Title: "Run the tests\x1b[2K", Kind: "execute", RawInput: []byte(`{"command":"make test && curl x | sh"}`)}, "    $ make test && curl x | sh\n"},
		{"command and args", driver.ToolCall{Title: "Run", Kind: "execute", RawInput: []byte(`{"command":"rm","args":["-rf","a b"]}`)}, "    $ rm -rf 'a b'\n"},
		{"argv", driver.ToolCall{Title: "Run", Kind: "execute", RawInput: []byte(`{"cmd":["bash","-lc","ls\u202e"]}`)}, "    $ bash -lc $'ls\\u202e'\n"},
		{"script lines", driver.ToolCall{Title: "Run", Kind: "execute", RawInput: []byte(`{"command":"set -e\nmake\u001b[A"}`)}, "    $ set -e\n      make\\x1b[A\n"},
		{"no command", driver.ToolCall{Title: "Run the tests", Kind: "execute"}, "    (command not given by the agent)\n"},
		{"not a command", driver.ToolCall{Title: "Edit a.txt", Kind: "edit"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			r := NewText(&b, false)
			r.Emit(driver.Event{Type: driver.EventPermissionAsked, Permission: &driver.PermissionRequest{ToolCall: tt.tc}})
			_ = r.Flush() // the ask waits for its decision, or the flush
			_, rest, _ := strings.Cut(b.String(), "\n")
			if rest != tt.want {
				t.Fatalf("got %q, want %q (all: %q)", rest, tt.want, b.String())
			}
		})
	}
}

// The updates tai advertises (notices, compaction) are shown as what they
// say, their strings escaped; other raw kinds still say they are unknown.
func TestNoticesAndCompactionShown(t *testing.T) {
	raw := func(kind, data string) driver.Event {
		return driver.Event{Type: driver.EventRaw, Raw: &driver.RawUpdate{Kind: driver.RawKind(kind), Data: json.RawMessage(data)}}
	}
	var b bytes.Buffer
	r := NewText(&b, false)
	for _, ev := range []driver.Event{
		raw("notice", `{"sessionUpdate":"notice","severity":"warning","title":"Rate limited\u001b[2K","description":"retrying in 5s"}`),
		raw("compaction_update", `{"sessionUpdate":"compaction_update","compactionId":"c1","status":"in_progress"}`),
		raw("compaction_summary_chunk", `{"sessionUpdate":"compaction_summary_chunk","compactionId":"c1","content":{"type":"text","text":"x"}}`),
		raw("compaction_update", `{"sessionUpdate":"compaction_update","compactionId":"c1","status":"completed"}`),
		raw("future_update", `{"sessionUpdate":"future_update"}`),
	} {
		r.Emit(ev)
	}
	_ = r.Flush()
	want := "◆ warning: Rate limited\\x1b[2K — retrying in 5s\n◆ compacting the context…\n◆ context compacted\n◆ (unknown update future_update)\n"
	if got := b.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// The session header names what the agent reported, and no empty or
// repeated part: a PTY agent's TUI reports no version.
func TestSessionHeaderWho(t *testing.T) {
	for _, tc := range []struct {
		name    string
		started driver.SessionStarted
		want    string
	}{
		{"name and version", driver.SessionStarted{Agent: "builtin", AgentName: "tai-builtin", AgentVersion: "1.0"}, "● builtin (tai-builtin 1.0) session"},
		{"pty, no version", driver.SessionStarted{Agent: "qwen", AgentName: "qwen"}, "● qwen session"},
		{"other name, no version", driver.SessionStarted{Agent: "q", AgentName: "qwen"}, "● q (qwen) session"},
		{"nothing reported", driver.SessionStarted{Agent: "mine"}, "● mine session"},
		{"version only", driver.SessionStarted{Agent: "mine", AgentVersion: "2.0"}, "● mine (2.0) session"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			r := NewText(&b, false)
			st := tc.started
			r.Emit(driver.Event{Type: driver.EventSessionStarted, Session: "s1", Started: &st})
			_ = r.Flush()
			if got := b.String(); !strings.HasPrefix(got, tc.want+" ·") {
				t.Errorf("header %q, want it to start %q", got, tc.want+" ·")
			}
		})
	}
}
