package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/tai-dev/tai/feed"
)

// tai's own sequences on a terminal: colours (SGR) and the OSC 9
// notification, whose text holds no control character.
var taiSequences = regexp.MustCompile("\x1b\\[[0-9;]*m|\x1b\\]9;[^\x07\x1b]*\x07")

// What the human sees is what runs (issue 30 §5). The built-in agent asks
// three times, with titles that would erase or reverse themselves on a
// terminal, the first one hiding the command it carries (the issue's
// case). Through the real tai on a real terminal, as a user starts it
// (default output, default sandbox, the workspace its working directory,
// a user's HOME): every escape is shown escaped, not acted on; each
// question shows the command it would run, or says the agent gave none;
// and tai top --once, while the first question waits, shows the same.
// Every question is denied: nothing runs.
func TestWhatTheHumanSeesIsWhatRuns(t *testing.T) {
	t.Parallel()
	j := newJail(t)
	scr := writeScript(t, `steps:
  - permission: {title: "Run the unit tests; touch pwned\e[13D\e[K", kind: execute, command: "touch pwned"}
  - run: {ask: true, command: /bin/sh, args: ["-c", "echo hi\e[2K; touch ran"]}
  - permission: {title: "Build the \u202Edlrow\u202C docs\e[2K\r", kind: execute}
  - text: "done\e[2J"
`)
	rt := filepath.Join(t.TempDir(), "rt")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// XDG_RUNTIME_DIR: a user's session has one; the feed tai top reads is there.
	env := j.env("XDG_RUNTIME_DIR="+rt, "TERM=xterm-256color")
	// --approve ask: the question the human sees is the subject.
	cmd := exec.CommandContext(ctx, taiBin, "run", "--agent-cmd", builtinWith(scr), "--approve", "ask", "go")
	cmd.Dir, cmd.Env = j.ws, env
	tty, err := pty.Start(cmd) // stdin, stdout and stderr: the terminal
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	run := &onTTY{cmd: cmd, tty: tty}

	var top string
	asked, screen := run.answer(t, "deny always", func(n int) string {
		if n == 0 {
			top = topOnce(ctx, t, env, rt)
		}
		return "n"
	})
	if asked != 3 {
		t.Fatalf("asked %d times, want 3; terminal:\n%s", asked, screen)
	}
	// What is left once tai's own sequences are gone, and the terminal's
	// line ends (\r\n), holds no control or bidi character.
	plain := taiSequences.ReplaceAllString(screen, "")
	if rest := strings.ReplaceAll(plain, "\r\n", "\n"); strings.ContainsAny(rest, "\x1b\u202e\u202c\r\u009b") {
		i := strings.IndexAny(rest, "\x1b\u202e\u202c\r\u009b")
		t.Fatalf("the agent's escape reached the terminal at %q; terminal:\n%q", rest[max(0, i-60):min(len(rest), i+20)], screen)
	}
	for _, want := range []string{
		`Run the unit tests; touch pwned\x1b[13D\x1b[K`, // the title as it was sent
		"$ touch pwned", // and the command, on its own line
		`$ /bin/sh -c $'echo hi\x1b[2K; touch ran'`,
		`Build the \u202edlrow\u202c docs\x1b[2K\r`,
		"(command not given by the agent)",
		`done\x1b[2J`,
	} {
		if !strings.Contains(plain, want) {
			t.Errorf("the terminal lacks %q:\n%s", want, plain)
		}
	}
	for _, f := range []string{"pwned", "ran"} {
		if _, err := os.Stat(filepath.Join(j.ws, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: a denied command ran (%v)", f, err)
		}
	}
	if strings.ContainsAny(top, "\x1b\u202e") || !strings.Contains(top, `Run the unit tests; touch pwned\x1b[13D\x1b[K: $ touch pwned`) {
		t.Errorf("tai top --once:\n%q", top)
	}
}

// topOnce waits for the run's first ask in its feed, then returns what tai
// top --once shows.
func topOnce(ctx context.Context, t *testing.T, env []string, rt string) string {
	t.Helper()
	eps, err := feed.List(filepath.Join(rt, "tai")) // the feed is open before the agent starts
	if err != nil || len(eps) != 1 {
		t.Fatalf("feeds %v, %v", eps, err)
	}
	c := feed.Dial(eps[0].Path)
	defer c.Close()
	_, err = c.Events(ctx, 0, func(ev feed.Event) error {
		if strings.Contains(string(ev.Data), `"type":"`+feed.FrameAskOpened+`"`) {
			return errStop
		}
		return nil
	})
	if !errors.Is(err, errStop) {
		t.Fatalf("the feed: %v", err)
	}
	top := exec.CommandContext(ctx, taiBin, "top", "--once", "--width", "300")
	top.Env = env
	out, err := top.CombinedOutput()
	if err != nil {
		t.Fatalf("tai top --once: %v\n%s", err, out)
	}
	return string(out)
}
