package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/e2e/internal/build"
	"github.com/tai-dev/tai/feed"
)

var errStop = errors.New("stop reading")

// A run on a terminal asks twice. A feed client reads the frames up to the
// first ask, drops its connection, answers the ask through the feed, and
// resumes with Last-Event-ID: every frame arrives once, in order. The
// second ask is answered at the terminal; each decision names its channel.
func TestFeedResumeAndAnswer(t *testing.T) {
	t.Parallel()
	scr := writeScript(t, "steps:\n  - permission: {title: \"deploy\", kind: execute, command: \"make deploy\"}\n"+
		"  - permission: {title: \"release\", kind: execute, command: \"make release\"}\n  - text: \"both asked\"\n")
	rt := filepath.Join(t.TempDir(), "rt")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// --approve ask: the questions the feed answers are the subject.
	run := startOnTTY(ctx, t, []string{"XDG_RUNTIME_DIR=" + rt}, "run", "--agent-cmd", builtinWith(scr), "--approve", "ask", "--no-notify", "-o", "json", "go")
	cmd, tty, out := run.cmd, run.tty, run.out
	var screen build.Buffer
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(&screen, tty); close(copied) }()

	// The run's socket appears in its runtime directory.
	dir := filepath.Join(rt, "tai")
	var ep feed.Endpoint
	for deadline := time.Now().Add(time.Minute); ; {
		if eps, _ := feed.List(dir); len(eps) == 1 {
			ep = eps[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no feed socket in %s; terminal:\n%s", dir, screen.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st, err := os.Stat(ep.Path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, %v", st.Mode(), err)
	}
	c := feed.Dial(ep.Path)
	defer c.Close()

	var ids []uint64
	var types []string
	var askIDs []string
	collect := func(until func(typ string, data []byte) bool) func(feed.Event) error {
		return func(ev feed.Event) error {
			if ev.Name != "" {
				t.Errorf("unexpected %s event", ev.Name)
				return nil
			}
			var f struct {
				Type string
				Ask  struct{ ID string }
			}
			if err := json.Unmarshal(ev.Data, &f); err != nil {
				return err
			}
			ids, types = append(ids, ev.ID), append(types, f.Type)
			if f.Type == feed.FrameAskOpened {
				askIDs = append(askIDs, f.Ask.ID)
			}
			if until(f.Type, ev.Data) {
				return errStop
			}
			return nil
		}
	}
	// Up to the first ask, then the connection drops.
	last, err := c.Events(ctx, 0, collect(func(typ string, _ []byte) bool { return typ == feed.FrameAskOpened }))
	if !errors.Is(err, errStop) {
		t.Fatalf("first connection: %v", err)
	}
	st, err := c.State(ctx)
	if err != nil || len(st.Asks) != 1 || st.Asks[0].ID != askIDs[0] || len(st.Sessions) != 1 || st.Sessions[0].State != feed.StateWaiting {
		t.Fatalf("state %+v, %v", st, err)
	}
	if err := c.Answer(ctx, askIDs[0], "once", "feed"); err != nil {
		t.Fatal(err)
	}
	// Resume: the frames after the first ask, up to the second.
	last, err = c.Events(ctx, last, collect(func(typ string, _ []byte) bool { return typ == feed.FrameAskOpened }))
	if !errors.Is(err, errStop) {
		t.Fatalf("second connection: %v", err)
	}
	// The second is answered at the terminal, once it shows it: one key.
	for deadline := time.Now().Add(time.Minute); ; {
		s := screen.String()
		if i := strings.LastIndex(s, "release"); i >= 0 && strings.Contains(s[i:], "deny always >") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the terminal never asked the second time:\n%s", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := tty.Write([]byte("y")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Events(ctx, last, collect(func(string, []byte) bool { return false })); !errors.Is(err, feed.ErrEnded) {
		t.Fatalf("third connection: %v", err)
	}
	_ = cmd.Wait()
	<-copied
	for i, id := range ids {
		if id != uint64(i+1) {
			t.Fatalf("event ids %v: lost or repeated across the reconnects", ids)
		}
	}
	joined := strings.Join(types, " ")
	for _, want := range []string{"session.started", "ask.opened ask.closed", "permission.decided", "turn.ended", "process.exited"} {
		if !strings.Contains(joined, want) {
			t.Errorf("frames lack %q: %s", want, joined)
		}
	}
	if !strings.Contains(screen.String(), "(answered via feed: allow once)") {
		t.Errorf("the terminal did not say the first ask was answered elsewhere:\n%s", screen.String())
	}
	data, _ := os.ReadFile(out)
	var r struct {
		ExitCode    int `json:"exit_code"`
		Permissions []struct {
			Verdict   string `json:"verdict"`
			DecidedBy string `json:"decided_by"`
			Via       string `json:"via"`
		}
	}
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("result: %v\n%s", err, data)
	}
	if len(r.Permissions) != 2 || r.Permissions[0].Via != "feed" || r.Permissions[1].Via != "terminal" ||
		r.Permissions[0].DecidedBy != "human" || r.Permissions[1].DecidedBy != "human" || r.ExitCode != 0 {
		t.Fatalf("result %+v", r)
	}
	// The run is over: its socket is gone.
	if eps, _ := feed.List(dir); len(eps) != 0 {
		t.Fatalf("feeds left: %v", eps)
	}
}

// --listen serves the same feed on TCP, only with the token tai printed.
func TestFeedListenToken(t *testing.T) {
	t.Parallel()
	scr := writeScript(t, "steps:\n  - permission: {title: \"deploy\", kind: execute, command: \"make deploy\"}\n")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A terminal: the ask waits, so the feed stays up.
	run := startOnTTY(ctx, t, []string{"XDG_RUNTIME_DIR=" + filepath.Join(t.TempDir(), "rt")},
		// --approve ask keeps the run waiting, so the feed stays up to be probed.
		"run", "--agent-cmd", builtinWith(scr), "--approve", "ask", "--no-notify", "--listen", "127.0.0.1:0", "-o", "json", "go")
	cmd, tty := run.cmd, run.tty
	var screen build.Buffer
	go func() { _, _ = io.Copy(&screen, tty) }()
	var addr, tok string
	for deadline := time.Now().Add(time.Minute); addr == ""; {
		s := screen.String()
		if i := strings.Index(s, "on http://"); i >= 0 && strings.Contains(s[i:], ")") {
			line := s[i+len("on http://"):]
			line = line[:strings.IndexByte(line, ')')]
			a, rest, _ := strings.Cut(line, " (Authorization: Bearer ")
			addr, tok = a, rest
		}
		if time.Now().After(deadline) {
			t.Fatalf("no --listen line:\n%s", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
	bad := feed.DialTCP(addr, "nope")
	var se *feed.StatusError
	if _, err := bad.State(ctx); !errors.As(err, &se) || se.Code != 401 {
		t.Fatalf("a wrong token: %v", err)
	}
	good := feed.DialTCP(addr, tok)
	defer good.Close()
	var askID string
	for deadline := time.Now().Add(time.Minute); askID == ""; {
		st, err := good.State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Asks) == 1 {
			askID = st.Asks[0].ID
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ask in %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := good.Answer(ctx, askID, "deny", "feed"); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 5 {
		t.Fatalf("denied over TCP: %v (want exit 5)\n%s", err, screen.String())
	}
}

// A run killed with SIGKILL leaves its socket behind; the next reader
// (tai top --once) removes it and does not list the dead run.
func TestFeedStaleSocketOfAKilledRun(t *testing.T) {
	t.Parallel()
	scr := writeScript(t, "steps:\n  - permission: {title: \"deploy\", kind: execute, command: \"make deploy\"}\n")
	rt := filepath.Join(t.TempDir(), "rt")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// --approve ask keeps the run waiting until it is killed.
	run := startOnTTY(ctx, t, []string{"XDG_RUNTIME_DIR=" + rt}, "run", "--agent-cmd", builtinWith(scr), "--approve", "ask", "--no-notify", "-o", "json", "go")
	cmd, tty, env := run.cmd, run.tty, run.cmd.Env
	go func() { _, _ = io.Copy(io.Discard, tty) }()
	dir := filepath.Join(rt, "tai")
	var sock string
	for deadline := time.Now().Add(time.Minute); sock == ""; {
		if eps, _ := feed.List(dir); len(eps) == 1 {
			sock = eps[0].Path
		}
		if time.Now().After(deadline) {
			t.Fatal("no feed socket")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("SIGKILL should leave the socket behind for this test: %v", err)
	}
	top := exec.Command(taiBin, "top", "--once", "--width", "80")
	top.Env = env
	out, err := top.CombinedOutput()
	if err != nil {
		t.Fatalf("tai top --once: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "no tai is running") {
		t.Fatalf("the dead run is listed:\n%s", out)
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the dead run's socket is still there: %v", err)
	}
}
