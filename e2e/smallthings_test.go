package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tai-dev/tai/e2e/internal/build"
)

// userEnv is a user-like environment under tmp: its own HOME and XDG
// directories.
func userEnv(t *testing.T, tmp string) []string {
	t.Helper()
	home := filepath.Join(tmp, "home")
	if err := os.MkdirAll(filepath.Join(home, "rt"), 0o700); err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(), "NO_COLOR=1", "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"), "XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"), "XDG_RUNTIME_DIR="+filepath.Join(home, "rt"))
}

// A write's diff names its file from the workspace (the reader knows
// where it is), and tai audit show lines its columns up. The run has the
// default sandbox, no --dir, a user-like HOME; it says nothing of the
// sandbox on stderr.
func TestDiffNamesWorkspaceFilesAndAuditShowLinesUp(t *testing.T) {
	tmp := t.TempDir()
	ws := filepath.Join(tmp, "work")
	if err := os.MkdirAll(filepath.Join(ws, "notes"), 0o700); err != nil {
		t.Fatal(err)
	}
	s := filepath.Join(tmp, "write.yaml")
	if err := os.WriteFile(s, []byte("steps:\n  - write: {path: notes/a.txt, content: \"hello\\n\"}\n  - text: done\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := userEnv(t, tmp)
	auditPath := filepath.Join(tmp, "audit.jsonl")
	// --approve all: the write must land for diff and audit to show it.
	o := build.Run(t, taiBin, ws, env, "run", "--agent-cmd", builtinWith(s), "--approve", "all", "--no-notify", "--audit", auditPath, "go")
	if o.Code != 0 {
		t.Fatalf("exit %d\n%s\n%s", o.Code, o.Stdout, o.Stderr)
	}
	if !strings.Contains(o.Stdout, "+++ b/notes/a.txt") || strings.Contains(o.Stdout, "b/"+strings.TrimPrefix(ws, "/")) {
		t.Errorf("the diff does not name the file from the workspace:\n%s", o.Stdout)
	}
	if strings.Contains(o.Stderr, "sandbox off") {
		t.Errorf("the default sandbox says it is off:\n%s", o.Stderr)
	}

	o = build.Run(t, taiBin, ws, env, "audit", "show", auditPath)
	if o.Code != 0 {
		t.Fatalf("audit show: exit %d\n%s", o.Code, o.Stderr)
	}
	lines := strings.Split(strings.TrimSuffix(o.Stdout, "\n"), "\n")
	col := -1
	for _, l := range lines {
		f := strings.Fields(l) // time, seq, session, kind, summary...
		if len(f) < 5 {
			continue
		}
		k := strings.Index(l, " "+f[3]+" ") + len(f[3]) + 1
		c := utf8.RuneCountInString(l[:k+strings.Index(l[k:], f[4])])
		if col == -1 {
			col = c
		}
		if c != col {
			t.Fatalf("tai audit show's columns do not line up:\n%s", o.Stdout)
		}
	}
}

// --sandbox off says so on stderr, once. (The setting under test is the
// non-default one.)
func TestSandboxOffSaysSo(t *testing.T) {
	tmp := t.TempDir()
	ws := filepath.Join(tmp, "work")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	s := filepath.Join(tmp, "hi.yaml")
	if err := os.WriteFile(s, []byte("steps:\n  - text: hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := build.Run(t, taiBin, ws, userEnv(t, tmp), "run", "--sandbox", "off", "--agent-cmd", builtinWith(s), "--no-notify", "-o", "json", "go")
	if o.Code != 0 || strings.Count(o.Stderr, "tai: sandbox off: the agent runs unconfined\n") != 1 {
		t.Fatalf("exit %d, stderr:\n%s", o.Code, o.Stderr)
	}
}

// tai sessions says when in one format, for tai's records and the
// agent's own list; --resume's completion offers a session continued in a
// second run once. Default sandbox, no --dir, a user-like HOME.
func TestSessionsOneTimeFormatAndCompletionOnce(t *testing.T) {
	tmp := t.TempDir()
	ws := filepath.Join(tmp, "work")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	env := userEnv(t, tmp)
	agent := taiBin + " agent builtin"
	for _, args := range [][]string{{"/echo one"}, {"-c", "/echo two"}} {
		o := build.Run(t, taiBin, ws, env, append([]string{"run", "--agent-cmd", agent, "--no-notify", "-o", "json"}, args...)...)
		if o.Code != 0 {
			t.Fatalf("run %v: exit %d\n%s", args, o.Code, o.Stderr)
		}
	}
	when := regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d  `)
	o := build.Run(t, taiBin, ws, env, "sessions", "--agent-cmd", agent)
	n := 0
	for _, l := range strings.Split(o.Stdout, "\n") {
		if strings.Contains(l, "builtin-") {
			n++
			if !when.MatchString(l) {
				t.Errorf("a line of tai sessions does not start with the time as the others: %q\n%s", l, o.Stdout)
			}
		}
	}
	if o.Code != 0 || n == 0 {
		t.Fatalf("tai sessions: exit %d\n%s\n%s", o.Code, o.Stdout, o.Stderr)
	}
	o = build.Run(t, taiBin, ws, env, "__complete", "run", "--resume", "")
	var ids []string
	for _, l := range strings.Split(o.Stdout, "\n") {
		if strings.HasPrefix(l, "builtin-") {
			ids = append(ids, strings.SplitN(l, "\t", 2)[0])
		}
	}
	if len(ids) != 1 {
		t.Fatalf("--resume completes %v, want the one session once:\n%s", ids, o.Stdout)
	}
}

// A command is quoted one way on a screen: the built-in agent's title,
// the ask's $ line and the terminal's exit line alike. Default sandbox,
// no --dir, a user-like HOME.
func TestOneQuotingOfACommand(t *testing.T) {
	tmp := t.TempDir()
	ws := filepath.Join(tmp, "work")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	s := filepath.Join(tmp, "run.yaml")
	if err := os.WriteFile(s, []byte("steps:\n  - run: {command: printf, args: [\"%s\\n\", \"a b\"], ask: true}\n  - text: done\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// --approve all: the command must run; its quoting is the subject.
	o := build.Run(t, taiBin, ws, userEnv(t, tmp), "run", "--agent-cmd", builtinWith(s), "--approve", "all", "--no-notify", "go")
	if o.Code != 0 {
		t.Fatalf("exit %d\n%s\n%s", o.Code, o.Stdout, o.Stderr)
	}
	const once = `printf $'%s\n' 'a b'` // as a shell reads it, one line
	for _, l := range strings.Split(o.Stdout, "\n") {
		if strings.Contains(l, "printf") && !strings.Contains(l, once) {
			t.Errorf("the command is quoted another way: %q\n%s", l, o.Stdout)
		}
	}
	if n := strings.Count(o.Stdout, once); n < 3 {
		t.Errorf("the command is shown %d times, not as the title, the ask and the exit:\n%s", n, o.Stdout)
	}
}
