package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/policy"
)

type sink struct {
	mu  sync.Mutex
	evs []driver.Event
}

func (s *sink) Emit(ev driver.Event) {
	s.mu.Lock()
	s.evs = append(s.evs, ev)
	s.mu.Unlock()
}

func (s *sink) of(t driver.EventType) []driver.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []driver.Event
	for _, ev := range s.evs {
		if ev.Type == t {
			out = append(out, ev)
		}
	}
	return out
}

// fakeDecider allows the tool kinds in allow and denies the rest, and
// records what it was asked.
type fakeDecider struct {
	allow map[driver.ToolKind]bool
	mu    sync.Mutex
	asked []driver.PermissionRequest
}

func (f *fakeDecider) Decide(_ context.Context, req driver.PermissionRequest) (driver.PermissionDecision, error) {
	f.mu.Lock()
	f.asked = append(f.asked, req)
	f.mu.Unlock()
	allow := f.allow[req.ToolCall.Kind]
	opt, _ := policy.ChooseOption(req.Options, allow)
	d := driver.PermissionDecision{RequestID: req.ID, Outcome: driver.OutcomeSelected, OptionID: opt.ID, OptionKind: opt.Kind,
		Verdict: driver.VerdictDeny, DecidedBy: "test", Reason: "the test says so"}
	if allow {
		d.Verdict = driver.VerdictAllow
	}
	return d, nil
}

func (f *fakeDecider) requests() []driver.PermissionRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]driver.PermissionRequest(nil), f.asked...)
}

func newServices(t *testing.T, o Options) (*Services, *sink, string) {
	t.Helper()
	ws := t.TempDir()
	k := &sink{}
	o.Roots, o.Sink = []string{ws}, k
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, k, s.Roots()[0]
}

// Each call no grant covers is decided as a request of its own, marked
// unrequested, and a denial leaves the workspace untouched.
func TestUnrequestedCallsAreDecided(t *testing.T) {
	for _, tc := range []struct {
		name  string
		allow map[string]bool
		kind  driver.ToolKind
		call  func(s *Services, ws string) error
		check func(t *testing.T, ws string, denied bool)
	}{
		{
			name: "write", kind: driver.KindEdit,
			call: func(s *Services, ws string) error {
				return s.WriteTextFile(context.Background(), filepath.Join(ws, "x.txt"), "new")
			},
			check: func(t *testing.T, ws string, denied bool) {
				_, err := os.Stat(filepath.Join(ws, "x.txt"))
				if denied != errors.Is(err, os.ErrNotExist) {
					t.Errorf("denied %v, but stat says %v", denied, err)
				}
			},
		},
		{
			name: "read", kind: driver.KindRead,
			call: func(s *Services, ws string) error {
				if err := os.WriteFile(filepath.Join(ws, "r.txt"), []byte("secret"), 0o644); err != nil {
					return err
				}
				text, err := s.ReadTextFile(context.Background(), filepath.Join(ws, "r.txt"), 0, 0)
				if err == nil && text != "secret" {
					return errors.New("read " + text)
				}
				return err
			},
		},
		{
			name: "terminal", kind: driver.KindExecute,
			call: func(s *Services, ws string) error {
				id, err := s.CreateTerminal(context.Background(), driver.TerminalRequest{Command: "sh", Args: []string{"-c", "echo ran > ran.txt"}, Cwd: ws})
				if err != nil {
					return err
				}
				_, err = s.WaitForTerminalExit(context.Background(), id)
				return err
			},
			check: func(t *testing.T, ws string, denied bool) {
				_, err := os.Stat(filepath.Join(ws, "ran.txt"))
				if denied != errors.Is(err, os.ErrNotExist) {
					t.Errorf("denied %v, but stat says %v", denied, err)
				}
			},
		},
	} {
		for _, allow := range []bool{true, false} {
			name := tc.name + "/deny"
			if allow {
				name = tc.name + "/allow"
			}
			t.Run(name, func(t *testing.T) {
				dec := &fakeDecider{allow: map[driver.ToolKind]bool{}}
				dec.allow[tc.kind] = allow
				s, k, ws := newServices(t, Options{Decider: dec, Grants: NewGrants("")})
				err := tc.call(s, ws)
				if allow && err != nil {
					t.Fatalf("allowed call failed: %v", err)
				}
				if !allow {
					var de *driver.DeniedError
					if !errors.Is(err, driver.ErrDenied) || !errors.As(err, &de) || !strings.Contains(err.Error(), "the test says so") {
						t.Fatalf("denied call: %v, want a DeniedError with the reason", err)
					}
				}
				reqs := dec.requests()
				if len(reqs) != 1 || reqs[0].ToolCall.Kind != tc.kind || !reqs[0].Unrequested {
					t.Fatalf("decider asked %+v, want one unrequested %s", reqs, tc.kind)
				}
				asked, decided := k.of(driver.EventPermissionAsked), k.of(driver.EventPermissionDecided)
				if len(asked) != 1 || !asked[0].Permission.Unrequested || len(decided) != 1 || !decided[0].Decision.Unrequested {
					t.Fatalf("events: asked %+v decided %+v", asked, decided)
				}
				if tc.check != nil {
					tc.check(t, ws, !allow)
				}
			})
		}
	}
}

func ask(id string, kind driver.ToolKind, title string, raw map[string]any, locs ...string) driver.PermissionRequest {
	tc := driver.ToolCall{ID: id, Kind: kind, Title: title}
	for _, l := range locs {
		tc.Locations = append(tc.Locations, driver.Location{Path: l})
	}
	if raw != nil {
		tc.RawInput, _ = json.Marshal(raw)
	}
	return driver.PermissionRequest{ID: id, ToolCall: tc}
}

var allowed = driver.PermissionDecision{Verdict: driver.VerdictAllow}
var denied = driver.PermissionDecision{Verdict: driver.VerdictDeny}

// A permission the agent asked for and was granted covers the calls it
// announced, and only those.
func TestGrantsCoverAnnouncedCalls(t *testing.T) {
	type step struct {
		req driver.PermissionRequest
		dec driver.PermissionDecision
	}
	for _, tc := range []struct {
		name    string
		grants  func(ws string) []step
		call    func(s *Services, ws string) error
		decided int // decisions the call needed
	}{
		{"edit covers its write", func(ws string) []step {
			return []step{{ask("w1", driver.KindEdit, "Write a", nil, filepath.Join(ws, "a.txt")), allowed}}
		}, writeA, 0},
		{"edit via raw_input path, relative", func(ws string) []step {
			return []step{{ask("w1", driver.KindEdit, "Write a", map[string]any{"file_path": "a.txt"}), allowed}}
		}, writeA, 0},
		{"a read grant does not cover a write", func(ws string) []step {
			return []step{{ask("r1", driver.KindRead, "Read a", nil, filepath.Join(ws, "a.txt")), allowed}}
		}, writeA, 1},
		{"a grant of another path does not cover", func(ws string) []step {
			return []step{{ask("w1", driver.KindEdit, "Write b", nil, filepath.Join(ws, "b.txt")), allowed}}
		}, writeA, 1},
		{"a later denial withdraws the cover", func(ws string) []step {
			return []step{
				{ask("w1", driver.KindEdit, "Write a", nil, filepath.Join(ws, "a.txt")), allowed},
				{ask("w2", driver.KindEdit, "Write a", nil, filepath.Join(ws, "a.txt")), denied},
			}
		}, writeA, 1},
		{"a denial covers nothing", func(ws string) []step {
			return []step{{ask("w1", driver.KindEdit, "Write a", nil, filepath.Join(ws, "a.txt")), denied}}
		}, writeA, 1},
		{"an edit grant covers reading the file", func(ws string) []step {
			return []step{{ask("w1", driver.KindEdit, "Write a", nil, filepath.Join(ws, "a.txt")), allowed}}
		}, readA, 0},
		{"execute covers its command", func(ws string) []step {
			return []step{{ask("x1", driver.KindExecute, "Run", map[string]any{"command": "echo hi"}), allowed}}
		}, runEcho, 0},
		{"execute covers only its own command", func(ws string) []step {
			return []step{{ask("x1", driver.KindExecute, "Run", map[string]any{"command": "echo hello"}), allowed}}
		}, runEcho, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dec := &fakeDecider{allow: map[driver.ToolKind]bool{driver.KindEdit: true, driver.KindRead: true, driver.KindExecute: true}}
			ws := t.TempDir()
			ws, _ = filepath.EvalSymlinks(ws)
			g := NewGrants(ws)
			for _, st := range tc.grants(ws) {
				g.Decided(st.req, st.dec)
			}
			k := &sink{}
			s, err := New(Options{Roots: []string{ws}, Sink: k, Decider: dec, Grants: g})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := tc.call(s, ws); err != nil {
				t.Fatal(err)
			}
			if n := len(dec.requests()); n != tc.decided {
				t.Fatalf("%d decisions, want %d: %+v", n, tc.decided, dec.requests())
			}
		})
	}
}

// A grant lasts while its tool call runs: its completion, its failure or
// the end of the turn ends it, and only its own.
func TestGrantsEndWithTheirToolCall(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ev      driver.Event
		covered bool
	}{
		{"in progress", driver.Event{Type: driver.EventToolCall, ToolCall: &driver.ToolCall{ID: "w1", Status: "in_progress"}}, true},
		{"another tool call completed", driver.Event{Type: driver.EventToolCall, ToolCall: &driver.ToolCall{ID: "w2", Status: "completed"}}, true},
		{"completed", driver.Event{Type: driver.EventToolCall, ToolCall: &driver.ToolCall{ID: "w1", Status: "completed"}}, false},
		{"failed", driver.Event{Type: driver.EventToolCall, ToolCall: &driver.ToolCall{ID: "w1", Status: "failed"}}, false},
		{"turn ended", driver.Event{Type: driver.EventTurnEnded, Turn: &driver.TurnEnded{StopReason: "end_turn"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGrants("/ws")
			g.Decided(ask("w1", driver.KindEdit, "Write a", nil, "/ws/a.txt"), allowed)
			g.Decided(ask("x1", driver.KindExecute, "Run", map[string]any{"command": "make"}), allowed)
			g.Emit(tc.ev)
			if got := g.coversWrite("/ws/a.txt"); got != tc.covered {
				t.Errorf("write covered %v, want %v", got, tc.covered)
			}
			if got := g.coversCommand("make"); got != (tc.ev.Type != driver.EventTurnEnded) {
				t.Errorf("the other grant covered %v", got)
			}
		})
	}
}

func writeA(s *Services, ws string) error {
	return s.WriteTextFile(context.Background(), filepath.Join(ws, "a.txt"), "a")
}

func readA(s *Services, ws string) error {
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a"), 0o644); err != nil {
		return err
	}
	_, err := s.ReadTextFile(context.Background(), filepath.Join(ws, "a.txt"), 0, 0)
	return err
}

func runEcho(s *Services, ws string) error {
	id, err := s.CreateTerminal(context.Background(), driver.TerminalRequest{Command: "echo", Args: []string{"hi"}, Cwd: ws})
	if err != nil {
		return err
	}
	_, err = s.WaitForTerminalExit(context.Background(), id)
	return err
}

// The floor decides unrequested commands in every mode, on their full
// command line: a forced push to main, or a wipe inside sh -c, run without
// asking is denied under yolo.
func TestUnrequestedCommandMeetsTheFloor(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		args []string
		line string
		rule string
	}{
		{"git", []string{"push", "--force", "origin", "main"}, "git push --force origin main", "rule:floor-git-force-push"},
		{"sh", []string{"-c", "cd / && rm -rf *"}, "sh -c 'cd / && rm -rf *'", "rule:floor-rm-root"},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			ws := t.TempDir()
			eng, err := policy.NewEngine(policy.Config{Mode: policy.Yolo}, policy.Options{Workspace: ws})
			if err != nil {
				t.Fatal(err)
			}
			k := &sink{}
			s, err := New(Options{Roots: []string{ws}, Sink: k, Decider: eng, Grants: NewGrants(ws)})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			_, err = s.CreateTerminal(context.Background(), driver.TerminalRequest{Command: tc.cmd, Args: tc.args, Cwd: ws})
			if !errors.Is(err, driver.ErrDenied) || !strings.Contains(err.Error(), tc.rule) {
				t.Fatalf("got %v, want a denial by %s", err, tc.rule)
			}
			d := k.of(driver.EventPermissionDecided)
			if len(d) != 1 || string(d[0].Decision.DecidedBy) != tc.rule || !d[0].Decision.Unrequested {
				t.Fatalf("decisions %+v", d)
			}
			if p := k.of(driver.EventPermissionAsked)[0].Permission; policy.Command(p.ToolCall) != tc.line {
				t.Fatalf("the request shows %q, want %q", policy.Command(p.ToolCall), tc.line)
			}
			if n := len(k.of(driver.EventTerminalExited)); n != 0 {
				t.Fatalf("%d commands ran", n)
			}
		})
	}
}

// tai's own files are never written, even inside the workspace and even
// when the policy allows it; the refusal is reported.
func TestProtectedPathsAreNotWritten(t *testing.T) {
	ws := t.TempDir()
	own := filepath.Join(ws, ".config", "tai")
	if err := os.MkdirAll(own, 0o755); err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(ws, "policy.toml")
	for _, f := range []string{pol, filepath.Join(own, "policy.toml")} {
		if err := os.WriteFile(f, []byte("mode = \"deny-all\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(own, filepath.Join(ws, "cfg")); err != nil {
		t.Fatal(err)
	}
	k := &sink{}
	s, err := New(Options{Roots: []string{ws}, Sink: k, Protected: []string{pol, own},
		Decider: &fakeDecider{allow: map[driver.ToolKind]bool{driver.KindEdit: true}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, p := range []string{pol, filepath.Join(own, "policy.toml"), filepath.Join(own, "new.toml"), filepath.Join(ws, "cfg", "policy.toml")} {
		err := s.WriteTextFile(context.Background(), p, "mode = \"yolo\"\nfloor = false\n")
		if !errors.Is(err, driver.ErrProtected) {
			t.Errorf("%s: %v, want ErrProtected", p, err)
		}
	}
	for _, f := range []string{pol, filepath.Join(own, "policy.toml")} {
		if b, _ := os.ReadFile(f); string(b) != "mode = \"deny-all\"\n" {
			t.Errorf("%s was changed: %q", f, b)
		}
	}
	if _, err := os.Stat(filepath.Join(own, "new.toml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("new.toml was created: %v", err)
	}
	if n := len(k.of(driver.EventError)); n != 4 {
		t.Errorf("%d error events, want 4", n)
	}
	if err := s.WriteTextFile(context.Background(), filepath.Join(ws, "ok.txt"), "fine"); err != nil {
		t.Errorf("an ordinary write: %v", err)
	}
}

// A path with a NUL byte is refused by every call, instead of being
// cleaned into another path.
func TestNULPathsAreRefused(t *testing.T) {
	s, k, ws := newServices(t, Options{})
	bad := filepath.Join(ws, "nul") + "\x00../../x.txt"
	if err := s.WriteTextFile(context.Background(), bad, "x"); !errors.Is(err, driver.ErrInvalidPath) {
		t.Errorf("write: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "x.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("x.txt was written: %v", err)
	}
	if _, err := s.ReadTextFile(context.Background(), bad, 0, 0); !errors.Is(err, driver.ErrInvalidPath) {
		t.Errorf("read: %v", err)
	}
	if _, err := s.CreateTerminal(context.Background(), driver.TerminalRequest{Command: "true", Cwd: ws + "/\x00/.."}); !errors.Is(err, driver.ErrInvalidPath) {
		t.Errorf("terminal cwd: %v", err)
	}
	if err := s.RecordWrite(context.Background(), bad, true); !errors.Is(err, driver.ErrInvalidPath) {
		t.Errorf("record: %v", err)
	}
	if n := len(k.of(driver.EventError)); n != 4 {
		t.Errorf("%d error events, want 4", n)
	}
}

// While the record cannot be kept, nothing is served, covered or not, and
// nothing is asked.
func TestNothingServedWhileUnrecorded(t *testing.T) {
	dec := &fakeDecider{allow: map[driver.ToolKind]bool{driver.KindEdit: true, driver.KindRead: true, driver.KindExecute: true}}
	full := errors.New("no space left on device")
	ws := t.TempDir()
	ws, _ = filepath.EvalSymlinks(ws)
	g := NewGrants(ws)
	g.Decided(ask("w1", driver.KindEdit, "Write a", nil, filepath.Join(ws, "a.txt")), allowed)
	s, err := New(Options{Roots: []string{ws}, Sink: &sink{}, Decider: dec, Grants: g, Recorded: func() error { return full }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, err := range map[string]error{"covered write": writeA(s, ws), "read": readA(s, ws), "run": runEcho(s, ws)} {
		if !errors.Is(err, driver.ErrUnrecorded) || !errors.Is(err, full) {
			t.Errorf("%s: %v, want ErrUnrecorded", name, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "a" { // readA wrote it itself
		t.Errorf("a.txt: %q", b)
	}
	if n := len(dec.requests()); n != 0 {
		t.Errorf("%d decisions asked", n)
	}
}

// A stream-json CLI's own write outside the workspace is reported as an
// error naming the path.
func TestRecordWriteOutsideIsAnError(t *testing.T) {
	s, k, _ := newServices(t, Options{})
	outside := filepath.Join(t.TempDir(), "escaped.txt")
	if err := os.WriteFile(outside, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordWrite(context.Background(), outside, true); !errors.Is(err, driver.ErrOutsideWorkspace) {
		t.Fatalf("got %v", err)
	}
	errs := k.of(driver.EventError)
	if len(errs) != 1 || errs[0].Error.Code != "agent_write_outside" || !strings.Contains(errs[0].Error.Message, outside) {
		t.Fatalf("error events %+v", errs)
	}
	if n := len(k.of(driver.EventFileWritten)); n != 0 {
		t.Fatalf("%d file.written events for a write outside", n)
	}
}

// The grants of a call are found by its id however they came and went:
// two grants of one call, one withdrawn by a denial, the call's end, and
// the id used again.
func TestGrantsCountedByToolCall(t *testing.T) {
	g := NewGrants("/ws")
	done := func(id string) {
		g.Emit(driver.Event{Type: driver.EventToolCall, ToolCall: &driver.ToolCall{ID: id, Status: "completed"}})
	}
	check := func(step string, a, b bool) {
		t.Helper()
		if got := g.coversWrite("/ws/a.txt"); got != a {
			t.Fatalf("%s: a covered %v, want %v", step, got, a)
		}
		if got := g.coversWrite("/ws/b.txt"); got != b {
			t.Fatalf("%s: b covered %v, want %v", step, got, b)
		}
	}
	g.Decided(ask("w1", driver.KindEdit, "Write a", nil, "/ws/a.txt"), allowed)
	g.Decided(ask("w1", driver.KindEdit, "Write b", nil, "/ws/b.txt"), allowed)
	g.Decided(ask("w2", driver.KindEdit, "Write b", nil, "/ws/b.txt"), allowed)
	check("granted", true, true)
	g.Decided(ask("w9", driver.KindEdit, "Write b", nil, "/ws/b.txt"), denied)
	check("b denied", true, false)
	done("w2") // its grant went with the denial
	check("w2 done", true, false)
	done("w1")
	check("w1 done", false, false)
	g.Decided(ask("w1", driver.KindEdit, "Write a", nil, "/ws/a.txt"), allowed)
	check("w1 again", true, false)
	done("w1")
	check("w1 done again", false, false)
}

// A granted request that names no path and no command covers nothing, and
// is not kept: a flood of them (one tool call id each, never completed)
// leaves the set as it was.
func TestGrantsKeepNothingThatNamesNothing(t *testing.T) {
	g := NewGrants("/ws")
	g.Decided(ask("w1", driver.KindEdit, "Write a", nil, "/ws/a.txt"), allowed)
	for i := range 1000 {
		g.Decided(ask(fmt.Sprintf("t%d", i), driver.KindOther, "Flood permission", nil), allowed)
		g.Decided(ask(fmt.Sprintf("d%d", i), driver.KindOther, "Flood permission", nil), denied)
	}
	if n := len(g.byCall); n != 1 {
		t.Fatalf("%d tool calls hold grants, want 1", n)
	}
	if !g.coversWrite("/ws/a.txt") || g.coversCommand("anything") {
		t.Fatal("what names nothing changed what is covered")
	}
}
