package remote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/tai-dev/tai/e2e/internal/build"
	"github.com/tai-dev/tai/feed"
)

// submitOnTTY is tai fleet run --submit on a terminal of its own: a human
// follows the run there.
type submitOnTTY struct {
	cmd    *exec.Cmd
	tty    *os.File
	screen *build.Buffer
	copied chan struct{}
}

func (e *env) submitOnTTY(args ...string) *submitOnTTY {
	e.t.Helper()
	s := &submitOnTTY{screen: &build.Buffer{}, copied: make(chan struct{})}
	s.cmd = exec.Command(taiBin, args...)
	s.cmd.Env = append(append(os.Environ(), "XDG_STATE_HOME="+e.state, "NO_COLOR=1"), e.env...)
	var err error
	s.tty, err = pty.StartWithSize(s.cmd, &pty.Winsize{Rows: 40, Cols: 160})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
		s.tty.Close()
	})
	go func() { _, _ = io.Copy(s.screen, s.tty); close(s.copied) }()
	return s
}

// waitScreen waits until the terminal shows want (ctx is a guard only).
func (s *submitOnTTY) waitScreen(ctx context.Context, t *testing.T, want string) {
	t.Helper()
	for !strings.Contains(s.screen.String(), want) {
		select {
		case <-ctx.Done():
			t.Fatalf("the terminal never showed %q:\n%s", want, s.screen.String())
		case <-s.copied:
			if !strings.Contains(s.screen.String(), want) {
				t.Fatalf("tai ended before its terminal showed %q:\n%s", want, s.screen.String())
			}
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// end waits for tai to exit and the terminal to drain.
func (s *submitOnTTY) end() (int, string) {
	err := s.cmd.Wait()
	<-s.copied
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	}
	return code, s.screen.String()
}

// runFeed is the hub's live feed of run, once the hub adopted it.
func runFeed(ctx context.Context, t *testing.T, rt, run string) *feed.Client {
	t.Helper()
	dir := filepath.Join(rt, "tai")
	for {
		eps, _ := feed.List(dir)
		for _, ep := range eps {
			if ep.Run == run {
				c := feed.Dial(ep.Path)
				t.Cleanup(c.Close)
				return c
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the hub never opened run %s's feed in %s", run, dir)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// feedAsks reads the feed's frames until the run ends, handing each
// opened ask's id to opened and collecting the closing frames.
func feedAsks(ctx context.Context, c *feed.Client, opened func(id string)) ([]feed.AskClosed, error) {
	var closed []feed.AskClosed
	_, err := c.Events(ctx, 0, func(ev feed.Event) error {
		var f struct {
			Type string   `json:"type"`
			Ask  feed.Ask `json:"ask"`
		}
		if json.Unmarshal(ev.Data, &f) != nil {
			return nil
		}
		switch f.Type {
		case feed.FrameAskOpened:
			opened(f.Ask.ID)
		case feed.FrameAskClosed:
			var ac feed.AskClosed
			if err := json.Unmarshal(ev.Data, &ac); err != nil {
				return err
			}
			closed = append(closed, ac)
		}
		return nil
	})
	if errors.Is(err, feed.ErrEnded) {
		err = nil
	}
	return closed, err
}

// A run handed to tai hub --coordinate by a human at a terminal asks that
// human: its permission ask is on the hub's live feed (what tai top there
// answers) and at the submitter's terminal, and the first answer decides.
// A run submitted without a terminal (CI) is never waited on: the plan's
// non-interactive rule decides, as before.
func TestHubAsksTheHumanWhoFollowsTheRun(t *testing.T) {
	for name, k := range map[string]coordinatorKind{"tai-hub": taiHubCoordinating, "debian-nats-server": debianCoordinating} {
		t.Run(name, func(t *testing.T) { testHubAsks(t, k) })
	}
}

func testHubAsks(t *testing.T, kind coordinatorKind) {
	rt := filepath.Join(t.TempDir(), "rt")
	e := &env{t: t, state: t.TempDir(), env: []string{"XDG_RUNTIME_DIR=" + rt}}
	url, _ := kind(e)
	// --dir: a directory of this test's own, removed with it; the tests
	// of both coordinator kinds run on one host (the default is
	// TestHubIsClosedByDefault's).
	w := e.cmd(taiBin, "worker", "--nats", url, "--name", "w0", "--agents", "builtin,custom", "--dir", t.TempDir())
	w.Stderr = &prefixWriter{t: t, p: "w0"}
	e.start(w)

	repo := t.TempDir()
	for _, a := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "T"}} {
		git(t, repo, a...)
	}
	files := map[string]string{
		"deploy.yaml": "steps:\n  - permission: {title: deploy, kind: execute, command: \"make deploy\"}\n  - text: deployed\n",
		"plan.yaml":   "name: asks\npolicy: {approve: ask}\ntasks:\n  - {id: d, script: deploy.yaml, prompt: deploy}\n", // policy approve: ask: the question answered through the hub is the subject.
		// paint asks a question in its first session (and marks that it
		// asked); its next session paints with the answer.
		"ask.yaml":  "steps:\n  - write: {path: asked, content: \"1\\n\"}\n  - text: \"Which colour should I use?\"\n",
		"done.yaml": "steps:\n  - write: {path: colour.txt, content: \"blue\\n\"}\n  - text: \"Painted it blue.\"\n",
		"question.yaml": fmt.Sprintf("name: q\npolicy: {approve: all}\ntasks:\n  - {id: paint, prompt: paint it, agent_cmd: %q}\n", // policy approve: all: only paint's question should wait; its write then lands.
			"sh -c 'if [ -e asked ]; then exec \"$0\" agent builtin --script done.yaml; else exec \"$0\" agent builtin --script ask.yaml; fi' "+taiBin),
	}
	for f, c := range files {
		if err := os.WriteFile(filepath.Join(repo, f), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "init")
	submit := func(run string) []string {
		return []string{"fleet", "run", "--nats", url, "--submit", "--run-id", run, "-C", repo, filepath.Join(repo, "plan.yaml")}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute) // a guard against a hang only
	defer cancel()

	t.Run("answered on the hub's feed", func(t *testing.T) {
		sub := e.submitOnTTY(submit("fa")...)
		c := runFeed(ctx, t, rt, "fa")
		// The submitter's terminal shows the ask too; the feed answers it.
		sub.waitScreen(ctx, t, "deny always >")
		closed, err := feedAsks(ctx, c, func(id string) {
			if err := c.Answer(ctx, id, feed.AnswerOnce, "dashboard"); err != nil {
				t.Errorf("answering %s on the feed: %v", id, err)
			}
		})
		code, screen := sub.end()
		if err != nil || len(closed) != 1 || closed[0].Via != "dashboard" || closed[0].Answer != feed.AnswerOnce {
			t.Errorf("the feed's asks closed %+v (%v)", closed, err)
		}
		if code != 0 || !strings.Contains(screen, "fleet fa: done (exit 0)") {
			t.Errorf("tai fleet run --submit: exit %d\n%s", code, screen)
		}
		if st := fleetStatus(t, e, url, "fa"); !strings.Contains(st, "fleet fa: done") {
			t.Errorf("fleet status:\n%s", st)
		}
	})

	t.Run("answered at the submitter's terminal", func(t *testing.T) {
		sub := e.submitOnTTY(submit("ta")...)
		c := runFeed(ctx, t, rt, "ta")
		// Once the feed shows the ask too, the terminal answers it, and
		// the feed's ask withdraws, saying who answered.
		opened := make(chan struct{}, 1)
		type result struct {
			closed []feed.AskClosed
			err    error
		}
		got := make(chan result, 1)
		go func() {
			closed, err := feedAsks(ctx, c, func(string) { opened <- struct{}{} })
			got <- result{closed, err}
		}()
		select {
		case <-opened:
		case r := <-got:
			t.Fatalf("the feed ended before the ask: %+v", r)
		}
		sub.waitScreen(ctx, t, "deny always >")
		if _, err := sub.tty.Write([]byte("n\r")); err != nil {
			t.Fatal(err)
		}
		r := <-got
		closed, err := r.closed, r.err
		code, screen := sub.end()
		if err != nil || len(closed) != 1 || closed[0].Via != "submitter" || closed[0].Answer != feed.AnswerDeny {
			t.Errorf("the feed's asks closed %+v (%v)", closed, err)
		}
		if code != 1 || !strings.Contains(screen, "fleet ta: failed (exit 1)") {
			t.Errorf("tai fleet run --submit (denied): exit %d\n%s", code, screen)
		}
	})

	t.Run("a question answered on the hub's feed", func(t *testing.T) {
		sub := e.submitOnTTY("fleet", "run", "--nats", url, "--submit", "--run-id", "qa", "-C", repo, filepath.Join(repo, "question.yaml"))
		c := runFeed(ctx, t, rt, "qa")
		sub.waitScreen(ctx, t, "your answer (empty = leave it blocked)")
		_, err := c.Events(ctx, 0, func(ev feed.Event) error {
			var f struct {
				Type     string        `json:"type"`
				Question feed.Question `json:"question"`
			}
			if json.Unmarshal(ev.Data, &f) == nil && f.Type == feed.FrameQuestionOpened {
				if err := c.AnswerQuestion(ctx, f.Question.ID, "Use blue.", "dashboard"); err != nil {
					t.Errorf("answering %s on the feed: %v", f.Question.ID, err)
				}
			}
			return nil
		})
		code, screen := sub.end()
		if err != nil && !errors.Is(err, feed.ErrEnded) {
			t.Errorf("the feed: %v", err)
		}
		if code != 0 || !strings.Contains(screen, "fleet qa: done (exit 0)") {
			t.Fatalf("tai fleet run --submit: exit %d\n%s", code, screen)
		}
		if got := git(t, repo, "show", "tai-fleet/qa:colour.txt"); got != "blue" {
			t.Errorf("colour.txt on the target: %q", got)
		}
	})

	t.Run("submitted without a terminal", func(t *testing.T) {
		ci := e.cmd(taiBin, submit("ci")...)
		ci.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no controlling terminal: CI
		var stdout, stderr bytes.Buffer
		ci.Stdout, ci.Stderr = &stdout, &stderr
		err := ci.Run()
		ee := (*exec.ExitError)(nil)
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stdout.String(), "fleet ci: failed (exit 1)") {
			t.Fatalf("tai fleet run --submit without a terminal: %v\n%s\n%s", err, stdout.String(), stderr.String())
		}
		// Denied by the plan's non-interactive rule (deny), nobody asked.
		if !strings.Contains(stderr.String(), "task d failed: 1 permission request(s) denied") {
			t.Errorf("the task did not end denied:\n%s", stderr.String())
		}
	})
}

func fleetStatus(t *testing.T, e *env, url, run string) string {
	t.Helper()
	out, err := e.cmd(taiBin, "fleet", "status", run, "--nats", url).CombinedOutput()
	if err != nil {
		t.Errorf("tai fleet status %s: %v", run, err)
	}
	return fmt.Sprint(string(out))
}
