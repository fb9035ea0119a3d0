package feed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/policy"
)

func TestMain(m *testing.M) {
	if p := os.Getenv("TAI_FEED_TEST_CLIENT"); p != "" {
		// The other-user client: exit 0 if the feed refused us.
		c := Dial(p)
		_, err := c.State(context.Background())
		fmt.Println("client uid", os.Getuid(), "err", err)
		if err == nil {
			os.Exit(3)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

func open(t *testing.T, dir, run string) *Server {
	t.Helper()
	s, err := Open(Options{Run: run, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func emit(k driver.Sink, seq uint64) {
	k.Emit(driver.Event{Type: driver.EventMessage, Session: "s1", Seq: seq,
		Message: &driver.MessageChunk{Role: driver.RoleAgent, Text: fmt.Sprintf("chunk %d", seq)}})
}

var errDrop = errors.New("drop the connection")

// A client whose connection drops resumes with Last-Event-ID: every frame
// arrives once, in order.
func TestEventsResume(t *testing.T) {
	s := open(t, t.TempDir(), "run-resume")
	k := s.Sink("")
	for i := uint64(1); i <= 5; i++ {
		emit(k, i)
	}
	c := Dial(s.Path())
	defer c.Close()
	var got []uint64
	seen := func(ev Event) error {
		var f TaggedEvent
		if err := json.Unmarshal(ev.Data, &f); err != nil {
			return err
		}
		if f.Seq != ev.ID || f.Run != "run-resume" {
			return fmt.Errorf("frame %d carries seq %d run %q", ev.ID, f.Seq, f.Run)
		}
		got = append(got, ev.ID)
		if len(got) == 3 {
			return errDrop // the connection drops after the third
		}
		return nil
	}
	last, err := c.Events(context.Background(), 0, seen)
	if !errors.Is(err, errDrop) || last != 3 {
		t.Fatalf("first connection: last %d, %v", last, err)
	}
	// Frames published while nobody was connected are kept.
	for i := uint64(6); i <= 8; i++ {
		emit(k, i)
	}
	done := make(chan error)
	go func() {
		_, err := c.Events(context.Background(), last, func(ev Event) error {
			got = append(got, ev.ID)
			if ev.ID == 8 {
				go s.Close() // the run ends: the stream ends after the last frame
			}
			return nil
		})
		done <- err
	}()
	if err := <-done; !errors.Is(err, ErrEnded) {
		t.Fatalf("second connection: %v", err)
	}
	want := []uint64{1, 2, 3, 4, 5, 6, 7, 8}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got frames %v, want %v", got, want)
	}
	if _, err := os.Stat(s.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the socket outlived its run: %v", err)
	}
}

func TestEventsGap(t *testing.T) {
	for _, o := range []Options{{MaxFrames: 2}, {MaxBytes: 300}} { // frames of ~140 bytes
		o.Run, o.Dir = "run-gap", t.TempDir()
		testGap(t, o)
	}
}

func testGap(t *testing.T, o Options) {
	s, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := s.Sink("")
	for i := uint64(1); i <= 5; i++ {
		emit(k, i)
	}
	c := Dial(s.Path())
	defer c.Close()
	var names []string
	_, err = c.Events(context.Background(), 1, func(ev Event) error {
		names = append(names, fmt.Sprintf("%s%d", ev.Name, ev.ID))
		if ev.ID == 5 {
			return errDrop
		}
		return nil
	})
	if !errors.Is(err, errDrop) || strings.Join(names, ",") != "gap0,4,5" {
		t.Fatalf("got %v, %v; want the gap then frames 4 and 5", names, err)
	}
}

// prompter answers what is sent on it, like a terminal.
type prompter struct {
	asked  chan struct{}
	answer chan policy.Answer
}

func (p prompter) Ask(ctx context.Context, _ driver.PermissionRequest) (policy.Answer, error) {
	p.asked <- struct{}{}
	select {
	case a := <-p.answer:
		return a, nil
	case <-ctx.Done():
		return policy.DenyOnce, ctx.Err()
	}
}

// waitFrame reads the feed until a frame of type typ and returns it.
func waitFrame(t *testing.T, c *Client, after uint64, typ string) (uint64, []byte) {
	t.Helper()
	var data []byte
	var id uint64
	_, err := c.Events(context.Background(), after, func(ev Event) error {
		var f struct{ Type string }
		_ = json.Unmarshal(ev.Data, &f)
		if f.Type == typ {
			data, id = ev.Data, ev.ID
			return errDrop
		}
		return nil
	})
	if !errors.Is(err, errDrop) {
		t.Fatalf("waiting for %s: %v", typ, err)
	}
	return id, data
}

func TestAskRace(t *testing.T) {
	req := driver.PermissionRequest{ID: "1", Session: "s1", ToolCall: driver.ToolCall{ID: "w", Title: "Write a.txt", Kind: "edit"}}
	for _, tc := range []struct {
		name    string
		byFeed  bool
		answer  string
		want    policy.Answer
		wantVia ask.Via
	}{
		{"dashboard answers", true, "always", policy.AllowAlways, ask.ViaDashboard},
		{"terminal answers", false, "", policy.DenyOnce, ask.ViaTerminal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t, t.TempDir(), "run-ask")
			c := Dial(s.Path())
			defer c.Close()
			term := prompter{asked: make(chan struct{}, 1), answer: make(chan policy.Answer)}
			race := policy.Race(policy.Channel(ask.ViaTerminal, term), s.Channel()).(policy.ViaPrompter)
			type out struct {
				a   policy.Answer
				via ask.Via
				err error
			}
			res := make(chan out)
			go func() {
				a, via, err := race.AskVia(policy.WithAsker(context.Background(), "task lint"), req)
				res <- out{a, via, err}
			}()
			<-term.asked
			at, data := waitFrame(t, c, 0, FrameAskOpened)
			var opened AskFrame
			if err := json.Unmarshal(data, &opened); err != nil || opened.Ask.Task != "lint" || opened.Ask.Request.ToolCall.Title != "Write a.txt" {
				t.Fatalf("ask.opened %s: %v", data, err)
			}
			st, err := c.State(context.Background())
			if err != nil || len(st.Asks) != 1 || st.Asks[0].ID != opened.Ask.ID {
				t.Fatalf("state %+v, %v", st, err)
			}
			if tc.byFeed {
				if err := c.Answer(context.Background(), opened.Ask.ID, tc.answer, string(ask.ViaDashboard)); err != nil {
					t.Fatal(err)
				}
			} else {
				term.answer <- policy.DenyOnce
			}
			r := <-res
			if r.err != nil || r.a != tc.want || r.via != tc.wantVia {
				t.Fatalf("got %v via %q, %v", r.a, r.via, r.err)
			}
			// Everyone sees it answered, and nobody can answer it again.
			_, data = waitFrame(t, c, at, FrameAskClosed)
			var closed AskClosed
			if err := json.Unmarshal(data, &closed); err != nil || closed.Via != string(tc.wantVia) || closed.ID != opened.Ask.ID {
				t.Fatalf("ask.closed %s: %v", data, err)
			}
			var se *StatusError
			if err := c.Answer(context.Background(), opened.Ask.ID, "once", ""); !errors.As(err, &se) || se.Code != 409 || !strings.Contains(se.Msg, string(tc.wantVia)) {
				t.Fatalf("a second answer: %v", err)
			}
			if st, _ := c.State(context.Background()); len(st.Asks) != 0 {
				t.Fatalf("still pending: %+v", st.Asks)
			}
		})
	}
}

func TestAnswerRefusals(t *testing.T) {
	s := open(t, t.TempDir(), "run-bad")
	c := Dial(s.Path())
	defer c.Close()
	for _, tc := range []struct{ id, answer, via string }{
		{"ask-9", "once", ""},
		{"ask-1", "perhaps", ""},
		{"ask-1", "once", "telepathy"},
	} {
		var se *StatusError
		if err := c.Answer(context.Background(), tc.id, tc.answer, tc.via); !errors.As(err, &se) || se.Code/100 != 4 {
			t.Errorf("%+v: %v, want a 4xx", tc, err)
		}
	}
}

// A socket left by a run that died is removed; a live one stays.
func TestStaleSocketCleaned(t *testing.T) {
	dir := t.TempDir()
	alive := open(t, dir, "run-alive")
	stale := filepath.Join(dir, "run-dead.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close() // as if killed: the file stays, nothing listens
	if _, err := os.Stat(stale); err != nil {
		t.Fatal(err)
	}
	open(t, dir, "run-new")
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the dead run's socket is still there: %v", err)
	}
	eps, err := List(dir)
	if err != nil || len(eps) != 2 || eps[0].Run != "run-alive" || eps[1].Run != "run-new" {
		t.Fatalf("List: %+v, %v", eps, err)
	}
	if _, err := Open(Options{Run: "run-alive", Dir: dir}); err == nil {
		t.Fatal("a second feed for a live run was opened")
	}
	if _, err := os.Stat(alive.Path()); err != nil {
		t.Fatal("a live socket was removed:", err)
	}
}

func TestDirChecks(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "file")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Run: "r", Dir: f}); err == nil {
		t.Fatal("a file as the feed directory was accepted")
	}
	for _, run := range []string{"", "../x", ".hidden", "a/b"} {
		if _, err := Open(Options{Run: run, Dir: dir}); err == nil {
			t.Errorf("run id %q accepted", run)
		}
	}
	loose := filepath.Join(dir, "loose")
	if err := os.Mkdir(loose, 0o777); err != nil {
		t.Fatal(err)
	}
	s := open(t, loose, "r")
	for p, want := range map[string]os.FileMode{loose: 0o700, s.Path(): 0o600} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v (%v)", p, st.Mode().Perm(), want, err)
		}
	}
}

func TestTCPNeedsToken(t *testing.T) {
	s := open(t, t.TempDir(), "run-tcp")
	addr, tok, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "wrong", tok + "x"} {
		c := DialTCP(addr, bad)
		var se *StatusError
		if _, err := c.State(context.Background()); !errors.As(err, &se) || se.Code != 401 {
			t.Errorf("token %q: %v, want 401", bad, err)
		}
		c.Close()
	}
	c := DialTCP(addr, tok)
	defer c.Close()
	if st, err := c.State(context.Background()); err != nil || st.Run != "run-tcp" {
		t.Fatalf("with the token: %+v, %v", st, err)
	}
}

// A client running as another user is refused by the peer check, even
// when the directory and socket modes would let it in.
func TestOtherUserRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client as nobody")
	}
	dir, err := os.MkdirTemp("", "tai-feed-uid-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s := open(t, filepath.Join(dir, "feeds"), "run-uid")
	// Open the modes wide: only the peer check stands between them.
	for p, m := range map[string]os.FileMode{dir: 0o755, filepath.Dir(s.Path()): 0o755, s.Path(): 0o666} {
		if err := os.Chmod(p, m); err != nil {
			t.Fatal(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "client")
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), "TAI_FEED_TEST_CLIENT="+s.Path())
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the client as nobody got in or failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "uid 65534") || s.Refused() != 1 {
		t.Fatalf("refused %d connections; client said %s", s.Refused(), out)
	}
	// This user still gets in.
	c := Dial(s.Path())
	defer c.Close()
	if _, err := c.State(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestStateTracksSessions(t *testing.T) {
	s := open(t, t.TempDir(), "fleet-x")
	k := s.Sink("lint")
	k.Emit(driver.Event{Type: driver.EventSessionStarted, Session: "s1", Started: &driver.SessionStarted{Agent: "builtin", Driver: "acp", Cwd: "/w",
		Config: []driver.ConfigOption{{ID: "model", Category: "model", CurrentValue: json.RawMessage(`"small"`)}}}})
	k.Emit(driver.Event{Type: driver.EventToolCall, Session: "s1", ToolCall: &driver.ToolCall{ID: "w1", Title: "Write a.txt",
		Content: []driver.ToolContent{{Type: "diff", Path: "/w/a.txt", NewText: "one\ntwo\n"}}}})
	// The same tool call again (an upsert): its diff is not counted twice.
	k.Emit(driver.Event{Type: driver.EventToolCall, Session: "s1", ToolCall: &driver.ToolCall{ID: "w1", Title: "Write a.txt", Status: "completed",
		Content: []driver.ToolContent{{Type: "diff", Path: "/w/a.txt", NewText: "one\ntwo\n"}}}})
	k.Emit(driver.Event{Type: driver.EventTurnEnded, Session: "s1", Turn: &driver.TurnEnded{StopReason: "end_turn", Usage: &driver.Usage{TotalTokens: 40}}})
	s.SetTask(Task{ID: "lint", Status: "running", Agent: "builtin"})
	st := s.Snapshot()
	if len(st.Sessions) != 1 || len(st.Tasks) != 1 {
		t.Fatalf("%+v", st)
	}
	ss := st.Sessions[0]
	if ss.Task != "lint" || ss.Agent != "builtin" || ss.Model != "small" || ss.Added != 2 || ss.Removed != 0 || ss.Tokens != 40 || ss.State != StateIdle || ss.Activity != "Write a.txt" {
		t.Fatalf("session %+v", ss)
	}
	if st.Kind != KindRun || st.LastEventID != 4 {
		t.Fatalf("state %+v", st)
	}
}

// A full feed keeps its bounds while streams read it.
func TestBoundedWhileStreaming(t *testing.T) {
	s, err := Open(Options{Run: "run-full", Dir: t.TempDir(), MaxFrames: 100})
	if err != nil {
		t.Fatal(err)
	}
	c := Dial(s.Path())
	defer c.Close()
	k := s.Sink("")
	done := make(chan error)
	go func() {
		var prev uint64
		_, err := c.Events(context.Background(), 0, func(ev Event) error {
			if ev.Name == "" && ev.ID <= prev {
				return fmt.Errorf("frame %d after %d", ev.ID, prev)
			}
			prev = max(prev, ev.ID)
			return nil
		})
		done <- err
	}()
	// The bounds under test are a streamed feed's: emit once the stream
	// is in (before, frames are kept lazily, outside the ring; seen under
	// load, when the stream came after the last frame).
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		in := s.streams > 0
		s.mu.Unlock()
		if in {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stream never came in")
		}
	}
	for i := uint64(1); i <= 5000; i++ {
		emit(k, i)
	}
	s.mu.Lock()
	kept := s.frames.n
	s.mu.Unlock()
	if kept != 100 {
		t.Errorf("kept %d frames, want 100", kept)
	}
	s.Close()
	if err := <-done; !errors.Is(err, ErrEnded) {
		t.Fatal(err)
	}
}

func TestQuestions(t *testing.T) {
	s := open(t, t.TempDir(), "fleet-q")
	c := Dial(s.Path())
	defer c.Close()
	type out struct {
		text string
		via  ask.Via
	}
	res := make(chan out)
	go func() {
		text, via, err := s.AskQuestion(context.Background(), ask.Question{Task: "license", Text: "MIT or Apache-2.0?"})
		if err != nil {
			t.Error(err)
		}
		res <- out{text, via}
	}()
	at, data := waitFrame(t, c, 0, FrameQuestionOpened)
	var f QuestionFrame
	if err := json.Unmarshal(data, &f); err != nil || f.Question.Task != "license" || f.Question.Text != "MIT or Apache-2.0?" {
		t.Fatalf("%s: %v", data, err)
	}
	if st, _ := c.State(context.Background()); len(st.Questions) != 1 {
		t.Fatalf("state %+v", st)
	}
	var se *StatusError
	if err := c.AnswerQuestion(context.Background(), f.Question.ID, "  ", ""); !errors.As(err, &se) || se.Code != 400 {
		t.Fatalf("an empty answer: %v", err)
	}
	if err := c.AnswerQuestion(context.Background(), f.Question.ID, "MIT", "dashboard"); err != nil {
		t.Fatal(err)
	}
	if r := <-res; r.text != "MIT" || r.via != "dashboard" {
		t.Fatalf("got %+v", r)
	}
	waitFrame(t, c, at, FrameQuestionClosed)
	if err := c.AnswerQuestion(context.Background(), f.Question.ID, "again", ""); !errors.As(err, &se) || se.Code != 409 {
		t.Fatalf("a second answer: %v", err)
	}

	// Answered at the terminal: withdrawn here, saying by whom.
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error)
	go func() {
		_, _, err := s.AskQuestion(ctx, ask.Question{Task: "license", Text: "really?"})
		done <- err
	}()
	at, _ = waitFrame(t, c, at, FrameQuestionOpened)
	cancel(&ask.AnsweredElsewhere{Via: ask.ViaTerminal, Answer: "Apache-2.0"})
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	_, data = waitFrame(t, c, at, FrameQuestionClosed)
	var qc QuestionClosed
	if err := json.Unmarshal(data, &qc); err != nil || qc.Via != "terminal" {
		t.Fatalf("%s: %v", data, err)
	}
}
