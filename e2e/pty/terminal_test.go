package pty

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tai-dev/tai/audit"
)

// asUser is a user's world for tai on a terminal: a workspace, a HOME of
// its own (and XDG dirs under it), the default sandbox.
func asUser(t *testing.T) (ws string, env []string) {
	t.Helper()
	root := t.TempDir()
	ws, home := filepath.Join(root, "ws"), filepath.Join(root, "home")
	for _, d := range []string{ws, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return ws, []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache")}
}

// gatedAgent is the built-in agent started only once the test opens the
// FIFO it returns for writing: what it sends at its start then comes
// while tai's prompt is surely on the screen.
func gatedAgent(t *testing.T, ws, script string) (agentCmd, fifo string) {
	t.Helper()
	fifo = filepath.Join(ws, "gate")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(filepath.Join("..", "testdata", script))
	return "sh -c 'cat gate >/dev/null; exec " + taiBin + " agent builtin --script " + abs + "'", fifo
}

// open lets a gated agent start.
func open(t *testing.T, fifo string) {
	t.Helper()
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// bareLF is a line feed without its carriage return: on a terminal in raw
// mode the next line starts where the last ended (a staircase).
var bareLF = regexp.MustCompile(`[^\r]\n`)

// tai chat prints what comes while a line is typed (the session's header,
// its mode and commands) above the prompt, and redraws the prompt and what
// was typed: no line starts where the last ended.
func TestChatPrintsAboveThePrompt(t *testing.T) {
	t.Parallel()
	ws, env := asUser(t)
	agent, fifo := gatedAgent(t, ws, "chat.yaml")
	u := startInTerminalEnv(t, ws, env, "chat", "--agent-cmd", agent)
	u.waitFor("tai› ")
	u.typ("/ech")
	u.waitFor("tai› /ech")
	open(t, fifo) // the agent starts now, under the prompt
	u.waitFor("◆ commands:")
	u.waitFor("◆ commands: /echo /plan /help\r\n\rtai› /ech") // the prompt and the typing, redrawn
	u.typ("o above\r")
	u.waitFor("above\r\n")
	u.waitFor("turn ended: end_turn")
	u.typ("\x04")
	if code := u.exit(); code != 0 {
		t.Fatalf("exit %d\n%s", code, u.screen())
	}
	screen := u.screen()
	if m := bareLF.FindStringIndex(screen); m != nil {
		t.Fatalf("a line started where the last ended (a bare \\n at %d):\n%q", m[0], screen)
	}
	if !strings.Contains(screen, "\r\x1b[K● ") {
		t.Fatalf("the header did not clear the prompt's line:\n%q", screen)
	}
}

// Ctrl-C at a permission question in tai chat cancels the turn, and the
// next line typed goes to chat: the question's reader does not keep
// reading the terminal after it.
func TestChatLineAfterCancelledAsk(t *testing.T) {
	t.Parallel()
	ws, env := asUser(t)
	script, _ := filepath.Abs(filepath.Join("..", "testdata", "chat-ask.yaml"))
	u := startInTerminalEnv(t, ws, env, "chat", "--agent-cmd", taiBin+" agent builtin --script "+script)
	u.waitFor("tai› ")
	u.typ("deploy\r")
	u.waitFor("[d] deny always > ")
	u.typ("\x03")
	u.waitFor("turn ended: cancelled")
	u.waitForCount("tai› ", 2)
	u.typ("/echo the next line\r")
	u.waitFor("the next line\r\n")
	u.waitForCount("turn ended: end_turn", 1)
	u.typ("\x04")
	if code := u.exit(); code != 0 {
		t.Fatalf("exit %d\n%s", code, u.screen())
	}
}

// An elicitation form asked at the very start of a turn comes after the
// session's header, which no longer lands on the form's input line.
func TestElicitationFormAfterHeader(t *testing.T) {
	t.Parallel()
	ws, env := asUser(t)
	script, _ := filepath.Abs(filepath.Join("..", "testdata", "elicit-first.yaml"))
	u := startInTerminalEnv(t, ws, env, "run", "--agent-cmd", taiBin+" agent builtin --script "+script, "paint it")
	u.waitFor("Colour (string, required)")
	screen := u.screen()
	header, form := strings.Index(screen, "● "), strings.Index(screen, "The agent asks: Which colour")
	if header < 0 || form < 0 || header > form {
		t.Fatalf("the form came before the session's header:\n%s", screen)
	}
	u.typ("blue\n")
	u.waitFor("Send these answers? [Y/n]")
	u.typ("y\n")
	u.waitFor("painted")
	if code := u.exit(); code != 0 {
		t.Fatalf("exit %d\n%s", code, u.screen())
	}
}

// A fleet's permission question takes one key, as tai run's does: y
// answers it without Enter, and the task goes on.
func TestFleetQuestionTakesOneKey(t *testing.T) {
	t.Parallel()
	ws, env := asUser(t)
	for _, a := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "T"}} {
		gitIn(t, ws, a...)
	}
	plans := filepath.Join(ws, "plans")
	// policy approve: ask: the question that takes one key is the subject.
	writeFile(t, filepath.Join(plans, "plan.yaml"), "name: onekey\ngoal: deploy\npolicy: {approve: ask}\ntasks:\n  - {id: deploy, script: deploy.yaml, prompt: deploy it}\n")
	writeFile(t, filepath.Join(plans, "deploy.yaml"), "steps:\n  - permission: {title: \"Deploy the site\", kind: execute}\n  - text: \"deployed\"\n")
	gitIn(t, ws, "add", "-A")
	gitIn(t, ws, "commit", "-q", "-m", "init")
	u := startInTerminalEnv(t, ws, env, "fleet", "run", filepath.Join(plans, "plan.yaml"))
	u.waitFor("[d] deny always > ")
	u.typ("y") // no Enter
	u.waitFor("allow once")
	if code := u.exit(); code != 0 {
		t.Fatalf("exit %d\n%s", code, u.screen())
	}
	if strings.Count(u.screen(), "deny always > ") != 1 {
		t.Fatalf("asked more than once:\n%s", u.screen())
	}
}

// A fleet's question shows a write's diff with the file named inside the
// task's worktree (b/src/hello.txt), as tai run does, not by the
// worktree's whole path: each task has its own, and one prompter serves all.
func TestFleetQuestionDiffIsWorkspaceRelative(t *testing.T) {
	t.Parallel()
	ws, env := asUser(t)
	for _, a := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "T"}} {
		gitIn(t, ws, a...)
	}
	plans := filepath.Join(ws, "plans")
	writeFile(t, filepath.Join(plans, "plan.yaml"), "name: reldiff\ntasks:\n  - {id: hello, script: hello.yaml, prompt: write it}\n")
	writeFile(t, filepath.Join(plans, "hello.yaml"), "steps:\n  - write: {path: src/hello.txt, content: \"hi\\n\"}\n  - text: \"written\"\n")
	gitIn(t, ws, "add", "-A")
	gitIn(t, ws, "commit", "-q", "-m", "init")
	u := startInTerminalEnv(t, ws, env, "fleet", "run", filepath.Join(plans, "plan.yaml"))
	u.waitFor("[d] deny always > ")
	screen := u.screen()
	u.typ("y")
	u.waitFor("allow once")
	if code := u.exit(); code != 0 {
		t.Fatalf("exit %d\n%s", code, u.screen())
	}
	if !strings.Contains(screen, "+++ b/src/hello.txt") {
		t.Fatalf("the diff's header does not name src/hello.txt in the task's worktree:\n%s", screen)
	}
}

// An agent that asks for permission when no turn runs, while a line is
// being typed, does not get its question written over the prompt, nor
// answered by the keys typed into the line: the question waits for the
// line, and as no turn runs to ask for, it is cancelled (in the audit log)
// without a word on the screen but the session's one line above the prompt.
func TestChatPermissionBetweenTurnsLeavesTheLineAlone(t *testing.T) {
	t.Parallel()
	ws, env := asUser(t)
	cue := filepath.Join(ws, "cue")
	if err := syscall.Mkfifo(cue, 0o600); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws, "late.yaml"), "steps:\n  - text: \"first reply\"\n  - late_permission: {title: \"Deploy the site\", cue: cue}\n")
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	u := startInTerminalEnv(t, ws, env, "chat", "--audit", auditPath, "--agent-cmd", taiBin+" agent builtin --script late.yaml")
	u.waitFor("tai› ")
	u.typ("go\r")
	u.waitFor("first reply")
	u.waitFor("turn ended: end_turn")
	u.waitForCount("tai› ", 2)
	// A line being typed (a slash command: a turn of the script would ask
	// again, and wait for the cue).
	u.typ("/echo all")
	u.waitFor("tai› /echo all")
	open(t, cue) // the agent asks now, no turn running
	waitAudit(t, u, auditPath, audit.KindPermissionDecision)
	u.typ(" set\r")
	u.waitFor("all set")
	u.waitForCount("turn ended: end_turn", 2)
	u.typ("\x04")
	if code := u.exit(); code != 0 {
		t.Fatalf("exit %d\n%s", code, u.screen())
	}
	for _, s := range []string{"deny always > ", "(cancelled)"} {
		if strings.Contains(u.screen(), s) {
			t.Fatalf("the question was written over the line being typed (%q):\n%s", s, u.screen())
		}
	}
	var decisions, prompts []string
	for _, e := range readAudit(t, auditPath) {
		switch e.Kind {
		case audit.KindPermissionDecision:
			decisions = append(decisions, string(e.Data))
		case audit.KindPrompt:
			prompts = append(prompts, string(e.Data))
		}
	}
	if len(decisions) != 1 || !strings.Contains(decisions[0], "cancel") {
		t.Fatalf("decisions %v, want the one ask cancelled", decisions)
	}
	if len(prompts) != 2 || !strings.Contains(prompts[1], "/echo all set") {
		t.Fatalf("prompts %v, want the second to be the line typed whole", prompts)
	}
}

// waitAudit waits until the audit log holds an entry of kind.
func waitAudit(t *testing.T, u *userTTY, path, kind string) {
	t.Helper()
	for i := 0; ; i++ {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), `"kind":"`+kind+`"`) {
			return
		}
		select {
		case <-u.done:
			t.Fatalf("tai exited before the audit log had %s:\n%s", kind, u.screen())
		case <-time.After(20 * time.Millisecond):
		}
		if i > 4500 {
			t.Fatalf("the audit log never had %s:\n%s", kind, b)
		}
	}
}

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tai run on a terminal at --approve all shows the work, not the noise:
// no automatic allows, no logger records, no clean agent exit, no raw
// status words. -v shows the allows (one dim line each) and the exit.
func TestRunIsQuietOnATerminal(t *testing.T) {
	t.Parallel()
	for _, verbose := range []bool{false, true} {
		ws, env := asUser(t)
		writeFile(t, filepath.Join(ws, "notes.txt"), "some notes\n")
		script, _ := filepath.Abs(filepath.Join("..", "testdata", "quiet.yaml"))
		args := []string{"run", "--approve", "all", "--agent-cmd", taiBin + " agent builtin --script " + script, "read the notes"}
		if verbose {
			args = append([]string{"-v"}, args...)
		}
		u := startInTerminalEnv(t, ws, env, args...)
		u.waitFor("all read")
		if code := u.exit(); code != 0 {
			t.Fatalf("exit %d\n%s", code, u.screen())
		}
		screen := u.screen()
		noises := []string{"? unasked call", "→ allow", "pending", "in_progress", filepath.Join(ws, "notes.txt") + " " + filepath.Join(ws, "notes.txt")}
		if !verbose {
			noises = append(noises, "level=WARN") // -v shows the logger's records
		}
		for _, noise := range noises {
			if strings.Contains(screen, noise) {
				t.Errorf("-v=%v: the screen shows %q:\n%s", verbose, noise, screen)
			}
		}
		if !strings.Contains(screen, "tai: warning: agent wrote a non-JSON line on stdout") && !verbose {
			t.Errorf("the warning is not in tai's style:\n%s", screen)
		}
		if got := strings.Contains(screen, "allowed: [read]"); got != verbose {
			t.Errorf("-v=%v: the automatic allow shown = %v:\n%s", verbose, got, screen)
		}
		if got := strings.Contains(screen, "◆ agent process"); got != verbose {
			t.Errorf("-v=%v: the clean exit shown = %v:\n%s", verbose, got, screen)
		}
	}
}

// While the agent is silent, a terminal shows a spinner with the turn's
// time and the last activity; Ctrl-C then ends the run cleanly, the line
// taken off first. (The wait for it is the agent's silence: nothing here
// asserts on time.)
func TestRunShowsAStatusLine(t *testing.T) {
	t.Parallel()
	ws, env := asUser(t)
	script, _ := filepath.Abs(filepath.Join("..", "testdata", "silent.yaml"))
	u := startInTerminalEnv(t, ws, env, "run", "--agent-cmd", taiBin+" agent builtin --script "+script, "think hard")
	u.waitFor(" working ")
	u.waitFor("· 1500 tokens")
	u.typ("\x03")
	u.exit()
	screen := u.screen()
	if !strings.Contains(screen, "\r\x1b[K■ turn ended: cancelled") {
		t.Fatalf("the status line was not taken off before the next output:\n%q", screen)
	}
}

// A pipe gets no status line, however long the agent is silent (its
// silence here is longer than the line's wait).
func TestNoStatusLineOnAPipe(t *testing.T) {
	t.Parallel()
	ws, env := asUser(t)
	script, _ := filepath.Abs(filepath.Join("..", "testdata", "silent-short.yaml"))
	cmd := exec.Command(taiBin, "run", "--agent-cmd", taiBin+" agent builtin --script "+script, "think")
	cmd.Dir = ws
	cmd.Env = append(append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(filepath.Dir(ws), "state")), env...)
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), "done thinking") {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.Contains(string(out), "working") || strings.Contains(string(out), "\x1b[K") {
		t.Fatalf("a status line on a pipe:\n%q", out)
	}
}

// In tai chat, the status line shows from the moment a line is sent: an
// agent that says nothing at all in its turn still shows a sign of life.
func TestChatShowsAStatusLine(t *testing.T) {
	t.Parallel()
	ws, env := asUser(t)
	script, _ := filepath.Abs(filepath.Join("..", "testdata", "chat-silent.yaml"))
	u := startInTerminalEnv(t, ws, env, "chat", "--agent-cmd", taiBin+" agent builtin --script "+script)
	u.waitFor("tai› ")
	u.typ("/echo first\r") // the session's first events come with the first turn
	u.waitFor("turn ended: end_turn")
	u.typ("think hard\r")
	u.waitFor(" working ")
	u.typ("\x03") // the turn, not the session
	u.waitFor("\r\x1b[K■ turn ended: cancelled")
	u.typ("\x04")
	u.exit() // 130: the session's last turn was cancelled
}
