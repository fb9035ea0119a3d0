package e2e

import (
	"bufio"
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

	"github.com/tai-dev/tai/e2e/internal/build"
	"github.com/tai-dev/tai/feed"
)

// A fleet asks in parallel: three tasks that each ask to write their file
// are all before the human at once, on the feed and in tai top --once, not
// one while the others wait behind it. A feed client answers them in
// another order than they came, one denied; each task goes on by its own
// answer, the fleet's terminal says who answered the ask it showed, and
// the audit log records each human decision via the dashboard. The fleet
// runs from its repository with the default policy and sandbox and a
// user-like HOME, on a terminal (a fleet asks a human only when it has one).
func TestFleetAsksInParallel(t *testing.T) {
	t.Parallel()
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
	tasks := []string{"alpha", "beta", "gamma"}
	plan := "name: three\ngoal: three tasks that ask to write at once\nconcurrency: 3\ntasks:\n"
	for _, id := range tasks {
		plan += fmt.Sprintf("  - {id: %s, script: %s.yaml, prompt: write %s.txt}\n", id, id, id)
		body := fmt.Sprintf("steps:\n  - write: {path: %s.txt, content: \"%s\\n\"}\n  - text: \"%s done\"\n", id, id, id)
		if err := os.WriteFile(filepath.Join(repo, id+".yaml"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "plan.yaml"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	rt, err := os.MkdirTemp("", "rt") // short: a socket path has 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(rt)
	env := userEnv(t, tmp)
	env = append(env, "XDG_RUNTIME_DIR="+rt) // the last one wins
	// The deadline only guards a hang: an ask that never comes.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, taiBin, "fleet", "run", "--no-notify", "-o", "json", "plan.yaml")
	cmd.Dir, cmd.Env = repo, env
	var stdout build.Buffer
	cmd.Stdout = &stdout
	p := startOnPTY(t, cmd, rt)
	screen, copied, ep := p.screen, p.copied, p.ep
	c := feed.Dial(ep.Path)
	defer c.Close()
	opened := map[string]string{} // task → ask id
	var order []string
	if _, err := c.Events(ctx, 0, func(ev feed.Event) error {
		var f feed.AskFrame
		if json.Unmarshal(ev.Data, &f) == nil && f.Type == feed.FrameAskOpened {
			if _, ok := opened[f.Ask.Task]; !ok {
				order = append(order, f.Ask.Task)
			}
			opened[f.Ask.Task] = f.Ask.ID
			if len(opened) == len(tasks) {
				return errStop
			}
		}
		return nil
	}); !errors.Is(err, errStop) {
		t.Fatalf("the asks on the feed: %v (only %v came: the others wait behind them)\nterminal:\n%s", err, order, screen.String())
	}

	// tai top --once lists the three.
	o := build.Run(t, taiBin, "", env, "top", "--once", "-o", "json")
	var states []feed.State
	if err := json.Unmarshal([]byte(o.Stdout), &states); o.Code != 0 || err != nil || len(states) != 1 {
		t.Fatalf("tai top --once -o json: exit %d, %v\n%s\n%s", o.Code, err, o.Stdout, o.Stderr)
	}
	pending := map[string]bool{}
	for _, a := range states[0].Asks {
		pending[a.Task] = true
	}
	if len(states[0].Asks) != len(tasks) || len(pending) != len(tasks) {
		t.Fatalf("tai top lists %d asks (%v), want one per task:\n%s", len(states[0].Asks), pending, o.Stdout)
	}

	// Answered in the reverse order, the middle one denied: each task goes
	// on by its own answer.
	want := map[string]string{}
	for i := len(order) - 1; i >= 0; i-- {
		task, answer, decision := order[i], "once", "allow"
		if i == 1 {
			answer, decision = "deny", "deny"
		}
		if err := c.Answer(ctx, opened[task], answer, "dashboard"); err != nil {
			t.Fatalf("answering task %s: %v\nterminal:\n%s", task, err, screen.String())
		}
		want[task] = decision + " via dashboard"
	}
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("tai fleet run: %v\n%s", err, screen.String())
		}
	}
	<-copied
	if !strings.Contains(screen.String(), "(answered via dashboard: ") {
		t.Errorf("the fleet's terminal did not say its ask was answered elsewhere:\n%s", screen.String())
	}
	var sum struct {
		Audit, Target string
	}
	if err := json.Unmarshal([]byte(stdout.String()), &sum); err != nil || sum.Audit == "" {
		t.Fatalf("summary: %v\n%s", err, stdout.String())
	}
	f, err := os.Open(sum.Audit)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[string]string{} // task → its human decision
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var e struct {
			Kind, Task string
			Data       struct {
				Decision, Via string
				DecidedBy     string `json:"decided_by"`
			}
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		if e.Kind == "permission.decision" && e.Data.DecidedBy == "human" {
			got[e.Task] = e.Data.Decision + " via " + e.Data.Via
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("human decisions %v, want %v", got, want)
	}
	for i, task := range order {
		err := exec.Command("git", "-C", repo, "cat-file", "-e", sum.Target+":"+task+".txt").Run()
		if allowed := i != 1; allowed != (err == nil) {
			t.Errorf("task %s: allowed %v, its file on %s: %v", task, allowed, sum.Target, err)
		}
	}
}
