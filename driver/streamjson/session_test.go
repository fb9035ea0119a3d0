package streamjson

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/host"
)

type sink struct {
	mu     sync.Mutex
	cond   *sync.Cond
	events []driver.Event
}

func newSink() *sink {
	k := &sink{}
	k.cond = sync.NewCond(&k.mu)
	return k
}

func (s *sink) Emit(ev driver.Event) {
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.cond.Broadcast()
	s.mu.Unlock()
}

// wait blocks until n events of type t were emitted.
func (s *sink) wait(t driver.EventType, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		c := 0
		for _, ev := range s.events {
			if ev.Type == t {
				c++
			}
		}
		if c >= n {
			return
		}
		s.cond.Wait()
	}
}

func (s *sink) of(t driver.EventType) []driver.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []driver.Event
	for _, ev := range s.events {
		if ev.Type == t {
			out = append(out, ev)
		}
	}
	return out
}

// decider answers by verdict; "block" waits until the request is abandoned.
type decider struct {
	verdict string
	asked   chan struct{}
}

func (d decider) Decide(ctx context.Context, req driver.PermissionRequest) (driver.PermissionDecision, error) {
	if d.asked != nil {
		close(d.asked)
	}
	if d.verdict == "block" {
		<-ctx.Done()
		return driver.PermissionDecision{}, ctx.Err()
	}
	opt := req.Options[0]
	if d.verdict == driver.VerdictDeny {
		opt = req.Options[2]
	}
	return driver.PermissionDecision{RequestID: req.ID, ToolCallID: req.ToolCall.ID, Outcome: driver.OutcomeSelected, OptionID: opt.ID,
		OptionKind: opt.Kind, Verdict: d.verdict, DecidedBy: "test", Reason: "because"}, nil
}

func start(t *testing.T, mode string, dec driver.PermissionDecider) (*Session, *sink) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	k := newSink()
	cwd := t.TempDir()
	// tai's real host services, whose events carry the session the way
	// the runner's stamper gives it to them.
	svc, err := host.New(host.Options{Roots: []string{cwd}, Sink: sessionStamp{k, "tai-chosen-id"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	s, err := Start(context.Background(), driver.Launch{
		Argv: []string{exe}, Env: append(os.Environ(), "TAI_FAKE_CLI="+mode), Cwd: cwd, Agent: "claude",
		Host: driver.Host{Sink: k, Decider: dec, Files: svc},
	}, Options{NewID: func() string { return "tai-chosen-id" }})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s, k
}

// sessionStamp gives events without a session this one.
type sessionStamp struct {
	next driver.Sink
	id   string
}

func (s sessionStamp) Emit(ev driver.Event) {
	if ev.Session == "" {
		ev.Session = s.id
	}
	s.next.Emit(ev)
}

// closeAndCheck closes the session and checks the fake exited 0: it saw
// nothing that breaks the protocol.
func closeAndCheck(t *testing.T, s *Session, k *sink) {
	t.Helper()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	exits := k.of(driver.EventProcessExited)
	if len(exits) != 1 || exits[0].Process.ExitCode == nil || *exits[0].Process.ExitCode != 0 {
		t.Fatalf("process.exited = %+v, want one with exit code 0", exits)
	}
}

func TestPermission(t *testing.T) {
	tests := []struct {
		name    string
		verdict string
		want    string // in the tool result the fake echoes
		status  string
	}{
		{"allow", driver.VerdictAllow, `"updatedInput":{"content":"x","file_path":"/w/a.txt"}`, "completed"},
		{"deny", driver.VerdictDeny, `"message":"tai's policy denied this: because (decided by test)"`, "failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, k := start(t, "claude", decider{verdict: tt.verdict})
			res, err := s.Prompt(context.Background(), []driver.Content{driver.TextContent("use a tool")})
			if err != nil || res.StopReason != driver.StopEndTurn {
				t.Fatalf("Prompt = %+v, %v", res, err)
			}
			asked, decided := k.of(driver.EventPermissionAsked), k.of(driver.EventPermissionDecided)
			if len(asked) != 1 || len(decided) != 1 || decided[0].Decision.Verdict != tt.verdict {
				t.Fatalf("asked %d, decided %+v", len(asked), decided)
			}
			if tc := asked[0].Permission.ToolCall; tc.Kind != driver.KindEdit || len(tc.Locations) != 1 || tc.Locations[0].Path != "/w/a.txt" {
				t.Errorf("asked about %+v", tc)
			}
			calls := k.of(driver.EventToolCall)
			last := calls[len(calls)-1].ToolCall
			if last.Status != tt.status || len(last.Content) != 1 || !strings.Contains(last.Content[0].Text, tt.want) {
				t.Errorf("tool call = %+v, want status %s and %s", last, tt.status, tt.want)
			}
			closeAndCheck(t, s, k)
		})
	}
}

func TestWithdrawnPermission(t *testing.T) {
	asked := make(chan struct{})
	s, k := start(t, "claude", decider{verdict: "block", asked: asked})
	res, err := s.Prompt(context.Background(), []driver.Content{driver.TextContent("withdraw it")})
	if err != nil || res.StopReason != driver.StopEndTurn {
		t.Fatalf("Prompt = %+v, %v", res, err)
	}
	<-asked
	k.wait(driver.EventPermissionDecided, 1)
	closeAndCheck(t, s, k)
	dec := *k.of(driver.EventPermissionDecided)[0].Decision
	if dec.Verdict != driver.VerdictCancelled || dec.Reason != "withdrawn by the agent" {
		t.Errorf("decision = %+v", dec)
	}
}

func TestMultiTurnUsageAndModes(t *testing.T) {
	s, k := start(t, "claude", decider{verdict: driver.VerdictAllow})
	if s.ID() != "tai-chosen-id" || s.CurrentMode() != "default" {
		t.Fatalf("id %q mode %q", s.ID(), s.CurrentMode())
	}
	if err := s.SetMode(context.Background(), "bogus"); !errors.Is(err, driver.ErrBadValue) {
		t.Errorf("SetMode(bogus) = %v, want ErrBadValue", err)
	}
	if err := s.SetMode(context.Background(), "acceptEdits"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetModel(context.Background(), "opus"); err != nil {
		t.Fatal(err)
	}
	for i, cost := range []float64{1.5, 1} {
		res, err := s.Prompt(context.Background(), []driver.Content{driver.TextContent("hello")})
		if err != nil || res.StopReason != driver.StopEndTurn {
			t.Fatalf("turn %d: %+v, %v", i, res, err)
		}
		// Cumulative 10n in / 2n out and $n.5: each turn gets its delta.
		if res.Usage == nil || res.Usage.TotalTokens != 12 || res.Usage.CostAmount != cost {
			t.Errorf("turn %d usage = %+v, want 12 tokens and $%v", i, res.Usage, cost)
		}
	}
	if m := k.of(driver.EventModeChanged); len(m) != 1 || m[0].Mode.ID != "acceptEdits" {
		t.Errorf("mode.changed = %+v", m)
	}
	if got := k.of(driver.EventMessage); len(got) != 4 || got[0].Message.Role != driver.RoleThought || got[1].Message.Text != "echo: hello" {
		t.Errorf("messages = %+v", got)
	}
	if raw := k.of(driver.EventRaw); len(raw) != 2 || raw[0].Raw.Kind != "system/from_the_future" {
		t.Errorf("raw = %+v", raw)
	}
	if st := k.of(driver.EventSessionStarted); len(st) != 1 || st[0].Session != "tai-chosen-id" || st[0].Started.AgentVersion != "9.9.9" {
		t.Errorf("session.started = %+v", st)
	}
	closeAndCheck(t, s, k)
}

func TestInterrupt(t *testing.T) {
	s, k := start(t, "claude", decider{verdict: driver.VerdictAllow})
	done := make(chan struct{})
	var res driver.TurnResult
	var err error
	go func() {
		defer close(done)
		res, err = s.Prompt(context.Background(), []driver.Content{driver.TextContent("be slow")})
	}()
	// Cancel once the turn is under way (its first message arrived).
	k.wait(driver.EventMessage, 1)
	if cerr := s.Cancel(context.Background(), nil); cerr != nil {
		t.Fatal(cerr)
	}
	<-done
	if err != nil || res.StopReason != driver.StopCancelled {
		t.Fatalf("Prompt = %+v, %v; want cancelled", res, err)
	}
	closeAndCheck(t, s, k)
}

func TestErrors(t *testing.T) {
	t.Run("api error reported as success", func(t *testing.T) {
		s, k := start(t, "claude", decider{verdict: driver.VerdictAllow})
		res, err := s.Prompt(context.Background(), []driver.Content{driver.TextContent("apierr")})
		var te *TurnError
		if !errors.As(err, &te) || te.APIErrorStatus != 500 || res.StopReason != StopError {
			t.Fatalf("Prompt = %+v, %v; want a TurnError", res, err)
		}
		if e := k.of(driver.EventError); len(e) != 1 || e[0].Error.Code != "api_error" {
			t.Errorf("errors = %+v", e)
		}
		if m := k.of(driver.EventMessage); len(m) != 0 {
			t.Errorf("the synthetic API error became agent text: %+v", m)
		}
		closeAndCheck(t, s, k)
	})
	t.Run("denials the CLI made itself", func(t *testing.T) {
		s, k := start(t, "claude", decider{verdict: driver.VerdictAllow})
		if _, err := s.Prompt(context.Background(), []driver.Content{driver.TextContent("autodeny")}); err != nil {
			t.Fatal(err)
		}
		d := k.of(driver.EventPermissionDecided)
		if len(d) != 1 || d[0].Decision.Verdict != driver.VerdictDeny || d[0].Decision.DecidedBy != "agent" {
			t.Errorf("decisions = %+v, want one deny by the agent (deduplicated)", d)
		}
		closeAndCheck(t, s, k)
	})
	t.Run("startup failure on stderr", func(t *testing.T) {
		exe, _ := os.Executable()
		_, err := Start(context.Background(), driver.Launch{Argv: []string{exe}, Env: append(os.Environ(), "TAI_FAKE_CLI=diestart"),
			Cwd: t.TempDir(), Agent: "claude", Host: driver.Host{Sink: newSink(), Decider: decider{}}}, Options{})
		var exit *driver.AgentExitError
		if !errors.As(err, &exit) || exit.ExitCode != 1 || !strings.Contains(err.Error(), "requires --verbose") {
			t.Fatalf("Start = %v; want the exit status with the stderr tail", err)
		}
	})
	t.Run("no dialect", func(t *testing.T) {
		_, err := Start(context.Background(), driver.Launch{Argv: []string{"/bin/true"}, Agent: "mystery"}, Options{})
		if !errors.Is(err, driver.ErrUnsupported) {
			t.Fatalf("Start = %v, want ErrUnsupported", err)
		}
	})
}

// vetoer is a decider that can veto without asking: "deny" vetoes every
// call, anything else objects to none. Decide is never expected.
type vetoer struct {
	veto  string
	asked chan driver.PermissionRequest
}

func (v vetoer) Decide(ctx context.Context, req driver.PermissionRequest) (driver.PermissionDecision, error) {
	return decider{verdict: driver.VerdictAllow}.Decide(ctx, req)
}

func (v vetoer) Veto(ctx context.Context, req driver.PermissionRequest) (driver.PermissionDecision, bool) {
	v.asked <- req
	if v.veto != driver.VerdictDeny {
		return driver.PermissionDecision{}, false
	}
	return driver.PermissionDecision{Outcome: driver.OutcomeSelected, OptionID: "deny", Verdict: driver.VerdictDeny,
		DecidedBy: "rule:no-rm", Reason: "rm is off limits"}, true
}

// TestHooks: a tool call the CLI would run without asking goes through the
// PreToolUse hook to the decider's veto; only a veto is enforced, and it
// counts once although the CLI lists the call again in its denials. The
// Stop hook becomes a raw event with the CLI's transcript.
func TestHooks(t *testing.T) {
	tests := []struct {
		name    string
		dec     func(chan driver.PermissionRequest) driver.PermissionDecider
		vetoed  int               // requests the veto saw
		status  string            // of the tool call
		decided driver.Provenance // the one decision's decided_by ("": none)
	}{
		{"veto", func(c chan driver.PermissionRequest) driver.PermissionDecider {
			return vetoer{veto: driver.VerdictDeny, asked: c}
		},
			1, "failed", "rule:no-rm"},
		{"no objection", func(c chan driver.PermissionRequest) driver.PermissionDecider { return vetoer{asked: c} },
			1, "completed", ""},
		// A decider that cannot veto gets no PreToolUse hook registered.
		{"no vetoer", func(chan driver.PermissionRequest) driver.PermissionDecider {
			return decider{verdict: driver.VerdictAllow}
		},
			0, "completed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked := make(chan driver.PermissionRequest, 4)
			s, k := start(t, "claude", tt.dec(asked))
			res, err := s.Prompt(context.Background(), []driver.Content{driver.TextContent("hooked")})
			if err != nil || res.StopReason != driver.StopEndTurn {
				t.Fatalf("Prompt = %+v, %v", res, err)
			}
			closeAndCheck(t, s, k)
			close(asked)
			var reqs []driver.PermissionRequest
			for r := range asked {
				reqs = append(reqs, r)
			}
			if len(reqs) != tt.vetoed {
				t.Fatalf("veto saw %d requests, want %d", len(reqs), tt.vetoed)
			}
			if len(reqs) == 1 {
				tc := reqs[0].ToolCall
				if tc.ID != "tu4" || tc.Kind != driver.KindExecute || !strings.Contains(string(tc.RawInput), "rm notes.txt") || reqs[0].Session != "tai-chosen-id" {
					t.Errorf("veto asked about %+v", reqs[0])
				}
			}
			if a := k.of(driver.EventPermissionAsked); len(a) != 0 {
				t.Errorf("a hook asked: %+v", a)
			}
			decided := k.of(driver.EventPermissionDecided)
			switch {
			case tt.decided == "" && len(decided) != 0:
				t.Errorf("decisions = %+v, want none", decided)
			case tt.decided != "" && (len(decided) != 1 || decided[0].Decision.DecidedBy != tt.decided || decided[0].Decision.ToolCallID != "tu4"):
				t.Errorf("decisions = %+v, want one by %s for tu4", decided, tt.decided)
			}
			calls := k.of(driver.EventToolCall)
			if last := calls[len(calls)-1].ToolCall; last.Status != tt.status {
				t.Errorf("tool call %+v, want %s", last, tt.status)
			} else if tt.decided != "" && !strings.Contains(last.Content[0].Text, "rm is off limits (decided by rule:no-rm)") {
				t.Errorf("the agent was not told why: %q", last.Content[0].Text)
			}
			stops := k.of(driver.EventAgentStop)
			if len(stops) != 1 {
				t.Fatalf("%d Stop hook events, want 1", len(stops))
			}
			if stop := stops[0].AgentStop; stop.TranscriptPath != "/fake/transcript.jsonl" || stop.StopHookActive || stop.SessionID != "fake-session" {
				t.Errorf("Stop hook event = %+v", stop)
			}
			for _, ev := range k.of(driver.EventRaw) {
				if ev.Raw.Kind == "hook/Stop" {
					t.Errorf("the Stop hook is also a raw event: %s", ev.Raw.Data)
				}
			}
		})
	}
}

// TestFileWrites: a write the CLI's own tool made inside the workspace is
// reported with its size and hash; one outside is reported as an error
// naming the path, and is not in the files written.
func TestFileWrites(t *testing.T) {
	s, k := start(t, "claude", decider{verdict: driver.VerdictAllow})
	if _, err := s.Prompt(context.Background(), []driver.Content{driver.TextContent("write it")}); err != nil {
		t.Fatal(err)
	}
	closeAndCheck(t, s, k)
	w := k.of(driver.EventFileWritten)
	if len(w) != 1 {
		t.Fatalf("file writes = %+v, want one", w)
	}
	f := w[0].File
	// sha256("hello\n")
	want := "sha256:5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
	if f.Path != filepath.Join(s.l.Cwd, "written.txt") || f.Size != 6 || !f.Created || f.HashAfter != want || w[0].Session != "tai-chosen-id" {
		t.Errorf("file write = %+v", f)
	}
	var outside []string
	for _, ev := range k.of(driver.EventError) {
		if ev.Error.Code == "agent_write_outside" {
			outside = append(outside, ev.Error.Message)
		}
	}
	if len(outside) != 1 || !strings.Contains(outside[0], "/elsewhere/out.txt") {
		t.Errorf("errors for the write outside = %q, want one naming /elsewhere/out.txt", outside)
	}
}
