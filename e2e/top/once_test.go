package top_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tai-dev/tai/e2e/internal/build"
	"github.com/tai-dev/tai/feed"
)

// userEnv is a user-like environment under tmp: its own HOME and XDG
// directories, no colour (the frames are compared as text).
func userEnv(t *testing.T, tmp, runtime string) []string {
	t.Helper()
	home := filepath.Join(tmp, "home")
	for _, d := range []string{home, runtime} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_STATE_HOME="+filepath.Join(home, ".local", "state"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"), "XDG_DATA_HOME="+filepath.Join(home, ".local", "share"), "XDG_RUNTIME_DIR="+runtime, "NO_COLOR=1")
}

// start runs tai in the background; the test's end interrupts it and
// waits for it (its agents hang: tai stops them after its cancel grace).
func start(t *testing.T, dir string, env []string, args ...string) *build.Buffer {
	t.Helper()
	cmd := exec.Command(taiBin, args...)
	cmd.Dir, cmd.Env = dir, env
	var out build.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-done:
		case <-time.After(2 * time.Minute): // a hung tai: only a bound, nothing asserts on it
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return &out
}

// states polls tai top --once -o json (args select the feed) until ok
// holds. The bound only stops a hung test.
func states(t *testing.T, env []string, ran *build.Buffer, ok func([]feed.State) bool, args ...string) []feed.State {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; {
		o := build.Run(t, taiBin, "", env, append([]string{"top", "--once", "-o", "json"}, args...)...)
		var st []feed.State
		if o.Code == 0 && json.Unmarshal([]byte(o.Stdout), &st) == nil && ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("tai top --once -o json never showed it: exit %d\n%s\n%s\nthe run's output:\n%s", o.Code, o.Stdout, o.Stderr, ran.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A fleet's tasks, named alike, are told apart in tai top --once at 80,
// 120 and 160 columns (the task column is there at every width), under a
// line naming the fleet; the worktrees show their distinct ends. The
// fleet runs with the default sandbox, from the repository, no flags.
func TestTopOnceTellsAFleetsTasksApart(t *testing.T) {
	tmp := t.TempDir()
	repo := filepath.Join(tmp, "repo")
	if err := os.Mkdir(repo, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, a := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "T"}} {
		git(t, repo, a...)
	}
	write(t, filepath.Join(repo, "README"), "hi\n")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "init")
	// policy approve: all: the tasks write; telling them apart is the subject.
	write(t, filepath.Join(repo, "plan.yaml"), `name: alike
goal: two tasks named alike that work on
policy: {approve: all}
concurrency: 2
tasks:
  - {id: frontend-login-form, script: hang.yaml, prompt: the login form}
  - {id: frontend-logout-form, script: hang.yaml, prompt: the logout form}
`)
	write(t, filepath.Join(repo, "hang.yaml"), "steps:\n  - text: \"on it\"\n  - hang: true\n")
	env := userEnv(t, tmp, filepath.Join(tmp, "rt"))
	ran := start(t, repo, env, "fleet", "run", "plan.yaml")
	st := states(t, env, ran, func(st []feed.State) bool { return len(st) == 1 && len(st[0].Sessions) == 2 })
	run := st[0].Run

	for _, w := range []int{80, 120, 160} {
		o := build.Run(t, taiBin, "", env, "top", "--once", "--width", fmt.Sprint(w))
		if o.Code != 0 {
			t.Fatalf("tai top --once --width %d: exit %d\n%s", w, o.Code, o.Stderr)
		}
		_, table, ok := strings.Cut(o.Stdout, "AGENT")
		if !ok {
			t.Fatalf("no table at %d columns:\n%s", w, o.Stdout)
		}
		if !strings.Contains(table, "── fleet "+run+" · 2 tasks") {
			t.Errorf("at %d columns the fleet %s is not named above its tasks:\n%s", w, run, o.Stdout)
		}
		// Each task on its own row, each row's TASK cell different.
		cells := map[string]bool{}
		for _, l := range strings.Split(table, "\n") {
			if f := strings.Fields(l); len(f) > 2 && f[0] == "builtin" {
				cells[f[1]] = true
			}
		}
		if len(cells) != 2 {
			t.Errorf("at %d columns the tasks are not told apart (task cells %v):\n%s", w, cells, o.Stdout)
		}
		for _, l := range strings.Split(o.Stdout, "\n") {
			if n := len([]rune(l)); n > w {
				t.Errorf("at %d columns a line is %d wide: %q", w, n, l)
			}
		}
		if w >= 160 && !regexp.MustCompile(`…\S*/frontend-login-form `).MatchString(table) {
			t.Errorf("at %d columns the worktree's own directory is not shown:\n%s", w, o.Stdout)
		}
	}
}

// tai top watches a run's feed served on TCP (tai run --listen) with the
// token from a file, though this machine's feeds are elsewhere; a wrong
// token is refused with the feed's reason and a non-zero exit. The run
// has the default sandbox, no --dir, a user-like HOME.
func TestTopWatchesATCPFeed(t *testing.T) {
	tmp := t.TempDir()
	ws := filepath.Join(tmp, "work")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(tmp, "hang.yaml")
	write(t, script, "steps:\n  - text: \"listening\"\n  - hang: true\n")
	env := userEnv(t, tmp, filepath.Join(tmp, "rt"))
	out := start(t, ws, env, "run", "--agent-cmd", taiBin+" agent builtin --script "+script, "--no-notify", "--listen", "127.0.0.1:0", "-o", "json", "go")
	var addr, tok string
	re := regexp.MustCompile(`live feed of \S+ on (http://\S+) \(Authorization: Bearer ([0-9a-f]+)\)`)
	for deadline := time.Now().Add(2 * time.Minute); addr == ""; {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			addr, tok = m[1], m[2]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no --listen line:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	tokFile, badFile := filepath.Join(tmp, "token"), filepath.Join(tmp, "bad")
	write(t, tokFile, tok+"\n")
	write(t, badFile, strings.Repeat("0", len(tok))+"\n")

	// Another runtime directory: no local feed to fall back on.
	other := userEnv(t, tmp, filepath.Join(tmp, "rt2"))
	st := states(t, other, out, func(st []feed.State) bool { return len(st) == 1 && len(st[0].Sessions) == 1 }, "--feed", addr, "--token-file", tokFile)
	o := build.Run(t, taiBin, "", other, "top", "--once", "--width", "120", "--feed", addr, "--token-file", tokFile)
	if o.Code != 0 || !strings.Contains(o.Stdout, "── run "+st[0].Run) || !strings.Contains(o.Stdout, "builtin") {
		t.Fatalf("tai top --once --feed: exit %d\n%s\n%s", o.Code, o.Stdout, o.Stderr)
	}
	if local := build.Run(t, taiBin, "", other, "top", "--once"); !strings.Contains(local.Stdout, "no tai is running") {
		t.Fatalf("the other runtime directory has a feed:\n%s", local.Stdout)
	}
	o = build.Run(t, taiBin, "", other, "top", "--once", "--feed", addr, "--token-file", badFile)
	if o.Code == 0 || !strings.Contains(o.Stderr, "401") {
		t.Fatalf("a wrong token: exit %d\n%s\n%s", o.Code, o.Stdout, o.Stderr)
	}
}
