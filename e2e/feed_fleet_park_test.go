package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/e2e/internal/build"
	"github.com/tai-dev/tai/feed"
)

// A park in the middle of a permission ask: the fleet's two tasks share
// an account; "asker" waits on its ask when "limiter" hits the account's
// usage limit. The park cancels asker's turn: its ask is withdrawn on the
// feed (ask.closed with a reason, gone from /state, which tai top reads)
// and at the terminal, each saying why (the account parked at its usage
// limit, and when it resets), as the audit log's decision does. Released by hand (the reset is hours away: no
// clock is waited on), asker resumes its session and its ask comes again;
// answered, both tasks merge. The
// fleet runs from its repository with the default policy and sandbox and a
// user-like HOME, on a terminal (a fleet asks a human only when it has one).
func TestFleetParkWithdrawsAndReasksAPendingAsk(t *testing.T) {
	tmp := t.TempDir()
	repo := filepath.Join(tmp, "repo")
	if err := os.Mkdir(repo, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, a := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "T"},
		{"commit", "-q", "--allow-empty", "-m", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, a...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", a, err, out)
		}
	}
	resets := time.Now().Add(3 * time.Hour).UTC().Format(time.RFC3339)
	// quota stagger 1ms: the default 10s between resumes would make the test wait.
	plan := "name: parkask\nconcurrency: 2\nquota: {stagger: 1ms}\ntasks:\n" +
		"  - {id: asker, script: asker.yaml, prompt: write asker.txt}\n" +
		"  - {id: limiter, script: limiter.yaml, prompt: write limiter.txt}\n"
	files := map[string]string{
		"plan.yaml":    plan,
		"asker.yaml":   "steps:\n  - write: {path: asker.txt, content: \"asker\\n\"}\n  - text: \"asker done\"\n",
		"limiter.yaml": fmt.Sprintf("steps:\n  - write: {path: limiter.txt, content: \"limiter\\n\"}\n  - limit: {resets_at: %q, times: 1}\n  - text: \"limiter done\"\n", resets),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rt, err := os.MkdirTemp("", "rt") // short: a socket path has 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(rt)
	env := userEnv(t, tmp)
	env = append(env, "XDG_RUNTIME_DIR="+rt, "TAI_BUILTIN_ACCOUNT=sk-test-parkask") // the last one wins
	// The deadline only guards a hang.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, taiBin, "fleet", "run", "--run-id", "parkask", "--no-notify", "-o", "json", "plan.yaml")
	cmd.Dir, cmd.Env = repo, env
	var stdout build.Buffer
	cmd.Stdout = &stdout
	p := startOnPTY(t, cmd, rt)
	screen, copied, ep := p.screen, p.copied, p.ep
	c := feed.Dial(ep.Path)
	defer c.Close()

	// Both ask; limiter's answered, asker's left waiting; limiter then hits
	// the limit, and asker's ask is withdrawn.
	opened := map[string]string{} // task → its latest ask id
	var withdrawn feed.AskClosed
	var trail []string
	answered := false
	last, err := c.Events(ctx, 0, func(ev feed.Event) error {
		var f feed.AskFrame
		var cl feed.AskClosed
		if json.Unmarshal(ev.Data, &f) != nil || json.Unmarshal(ev.Data, &cl) != nil {
			return nil
		}
		switch f.Type {
		case feed.FrameAskOpened:
			trail = append(trail, "opened "+f.Ask.Task)
			opened[f.Ask.Task] = f.Ask.ID
			if opened["asker"] != "" && opened["limiter"] != "" && !answered {
				// Both wait: limiter goes on to its limit.
				answered = true
				if err := c.Answer(ctx, opened["limiter"], "once", "dashboard"); err != nil {
					return err
				}
			}
		case feed.FrameAskClosed:
			trail = append(trail, "closed "+cl.Task+" "+cl.Answer+" "+cl.Reason)
			if cl.Task == "asker" {
				withdrawn = cl
				return errStop
			}
		}
		return nil
	})
	if !errors.Is(err, errStop) {
		t.Fatalf("the feed: %v (%v)\nterminal:\n%s", err, trail, screen.String())
	}
	why := "parked at its usage limit (resets " + resets + ")"
	if withdrawn.ID != opened["asker"] || withdrawn.Answer != "" || !strings.Contains(withdrawn.Reason, why) {
		t.Fatalf("asker's ask closed as %+v, want withdrawn saying %q (%v)", withdrawn, why, trail)
	}
	t.Logf("withdrawn: %+v; trail %v", withdrawn, trail)
	st, err := c.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Asks) != 0 {
		t.Errorf("asks still pending on the feed after the park: %+v", st.Asks)
	}

	if !strings.Contains(strings.Join(strings.Fields(screen.String()), " "), "(withdrawn: the account ") || !strings.Contains(screen.String(), "usage limit") {
		t.Errorf("the fleet's terminal did not withdraw asker's ask saying why:\n%s", screen.String())
	}

	// Released by hand: asker's ask comes again (the resumed agent asks
	// again), and is answered; so is any other that comes.
	if o := build.Run(t, taiBin, repo, env, "fleet", "resume", "parkask"); o.Code != 0 {
		t.Fatalf("tai fleet resume: exit %d\n%s\n%s", o.Code, o.Stdout, o.Stderr)
	}
	before, again := opened["asker"], 0
	if _, err := c.Events(ctx, last, func(ev feed.Event) error {
		var f feed.AskFrame
		if json.Unmarshal(ev.Data, &f) == nil && f.Type == feed.FrameAskOpened && f.Ask.ID != before {
			if f.Ask.Task == "asker" {
				again++
			}
			return c.Answer(ctx, f.Ask.ID, "once", "dashboard")
		}
		return nil
	}); !errors.Is(err, feed.ErrEnded) {
		t.Fatalf("the feed after the release: %v\nterminal:\n%s", err, screen.String())
	}
	if again != 1 {
		t.Errorf("asker's ask came %d time(s) after the release, want once\n%s", again, screen.String())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("tai fleet run: %v\n%s\n%s", err, stdout.String(), screen.String())
	}
	<-copied
	var sum struct{ Target string }
	if err := json.Unmarshal([]byte(stdout.String()), &sum); err != nil {
		t.Fatalf("summary: %v\n%s", err, stdout.String())
	}
	// The audit log's decision on the withdrawn ask says why too.
	withdrawnDecision := false
	for _, e := range readAudit(t, filepath.Join(tmp, "home", ".local", "state", "tai", "fleet", "parkask", "audit.jsonl")) {
		if e.Kind == audit.KindPermissionDecision && e.Task == "asker" && strings.Contains(string(e.Data), "cancel") {
			withdrawnDecision = true
			if !strings.Contains(string(e.Data), why) {
				t.Errorf("asker's withdrawn decision in the audit log: %s, want it to say %q", e.Data, why)
			}
		}
	}
	if !withdrawnDecision {
		t.Error("the audit log has no withdrawn decision of asker's")
	}
	for _, f := range []string{"asker.txt", "limiter.txt"} {
		if err := exec.Command("git", "-C", repo, "cat-file", "-e", sum.Target+":"+f).Run(); err != nil {
			t.Errorf("%s not on %s: %v\n%s", f, sum.Target, err, screen.String())
		}
	}
}
