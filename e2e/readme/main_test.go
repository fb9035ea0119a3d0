// Package readme_test runs the README's commands as written, through the
// real tai binary: each line is copied from the README (marked
// readme(`…`)), only its placeholders substituted (RUN, TASK, a run id, the
// hub's URL, plan.yaml by a shipped example), and run with `sh -c`, with
// the test-built tai first on PATH, a user-like HOME and XDG directories,
// the default sandbox and no extra flags. Each case checks what the README
// promises: exit codes, files landed, JSON fields, audit entries.
// TestREADMECommandsCovered fails when a README command has no case.
package readme_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/tai-dev/tai/e2e/internal/build"
	"github.com/tai-dev/tai/e2e/internal/userenv"
)

var (
	buildOnce             sync.Once
	buildDir              string
	taiBin, natsServer    string
	buildErr              error
	repoRoot, examplesDir string
)

func TestMain(m *testing.M) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	repoRoot, examplesDir = root, filepath.Join(root, "examples")
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// binaries builds tai and nats-server on first use: the check test needs
// neither.
func binaries(t *testing.T) {
	t.Helper()
	buildOnce.Do(func() {
		var bins []string
		buildDir, bins, buildErr = build.Binaries("tai-e2e-readme-", build.Tai, build.NATSServer)
		if buildErr == nil {
			taiBin, natsServer = bins[0], bins[1]
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
}

// user is a user's machine: a HOME with the XDG directories, a bin
// directory first on PATH holding tai (and nats-server, as a user who
// installed it has it on PATH), and a git identity.
type user struct {
	t    *testing.T
	home string
	env  []string
}

func newUser(t *testing.T) *user {
	t.Helper()
	binaries(t)
	x := userenv.New(t, taiBin, natsServer)
	return &user{t: t, home: x.Home, env: x.Env}
}

func (u *user) state(parts ...string) string {
	return filepath.Join(append([]string{u.home, ".local", "state", "tai"}, parts...)...)
}

// repo makes a git repository with one commit under HOME.
func (u *user) repo(name string) string {
	u.t.Helper()
	dir := filepath.Join(u.home, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		u.t.Fatal(err)
	}
	writeFile(u.t, filepath.Join(dir, "README.md"), "# "+name+"\n")
	u.git(dir, "init", "-q")
	u.git(dir, "add", "-A")
	u.git(dir, "commit", "-q", "-m", "init")
	return dir
}

func (u *user) git(dir string, args ...string) string {
	u.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, u.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		u.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// outcome is a finished command line.
type outcome struct {
	line           string // as run, placeholders substituted
	stdout, stderr string
	code           int
}

func (o outcome) String() string {
	return fmt.Sprintf("%s\nexit %d\nstdout:\n%s\nstderr:\n%s", o.line, o.code, o.stdout, o.stderr)
}

// substitute replaces the README line's placeholders (old, new pairs, in
// order) and fails the test when one is not in the line: a case whose
// README line changed must be looked at.
func substitute(t *testing.T, line string, subs ...string) string {
	t.Helper()
	for i := 0; i+1 < len(subs); i += 2 {
		if !strings.Contains(line, subs[i]) {
			t.Fatalf("the README line %q has no %q to substitute", line, subs[i])
		}
		line = strings.ReplaceAll(line, subs[i], subs[i+1])
	}
	return line
}

// sh runs a README line, placeholders substituted, with sh -c in dir, to
// its end. The deadline only guards against a hang; nothing asserts on
// time.
func (u *user) sh(dir, line string, subs ...string) outcome {
	u.t.Helper()
	line = substitute(u.t, line, subs...)
	o := build.Run(u.t, "/bin/sh", dir, u.env, "-c", line)
	return outcome{line, o.Stdout, o.Stderr, o.Code}
}

// must is sh that expects exit 0.
func (u *user) must(dir, line string, subs ...string) outcome {
	u.t.Helper()
	o := u.sh(dir, line, subs...)
	if o.code != 0 {
		u.t.Fatalf("want exit 0:\n%s", o)
	}
	return o
}

// daemon is a long-running README command (a hub, a worker).
type daemon = userenv.Daemon

// start starts a README line in its own process group, stopped with
// SIGTERM (then SIGKILL) when the test ends.
func (u *user) start(dir, line string, subs ...string) *daemon {
	u.t.Helper()
	line = substitute(u.t, line, subs...)
	cmd := exec.Command("/bin/sh", "-c", "exec "+line)
	cmd.Dir, cmd.Env = dir, u.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return userenv.Start(u.t, cmd)
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// added is the one entry of dir ending in ext that is not in before
// (a listing taken with listing before the command ran), without ext.
func added(t *testing.T, dir, ext string, before map[string]bool) string {
	t.Helper()
	var got []string
	for name := range listing(dir, ext) {
		if !before[name] {
			got = append(got, name)
		}
	}
	if len(got) != 1 {
		t.Fatalf("want one new %q entry in %s, got %v", ext, dir, got)
	}
	return got[0]
}

// listing is the names (without ext) of dir's entries ending in ext.
func listing(dir, ext string) map[string]bool {
	out := map[string]bool{}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ext) {
			out[strings.TrimSuffix(e.Name(), ext)] = true
		}
	}
	return out
}
