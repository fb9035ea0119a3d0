// Package userenv is a user's machine for tai's end-to-end tests: a HOME
// with the XDG directories, the test-built binaries first on PATH and a
// git identity; and the long-running commands a user starts (a hub, a
// worker), each in its own process group, stopped when the test ends.
package userenv

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tai-dev/tai/e2e/internal/build"
)

// User is a user's machine: Env is every command's environment.
type User struct {
	T    testing.TB
	Home string
	Env  []string
}

// New makes a user's HOME: the XDG directories under it, a bin directory
// first on PATH holding bins (symlinked by their names, as a user who
// installed them has them on PATH), and a git identity with main as the
// default branch.
func New(t testing.TB, bins ...string) *User {
	t.Helper()
	home := t.TempDir()
	bin := filepath.Join(home, "bin")
	rt := filepath.Join(home, "run")
	for _, d := range []string{bin, filepath.Join(home, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(rt, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, target := range bins {
		if err := os.Symlink(target, filepath.Join(bin, filepath.Base(target))); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\temail = user@example.com\n\tname = A User\n[init]\n\tdefaultBranch = main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"HOME=" + home,
		"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"TMPDIR=" + filepath.Join(home, "tmp"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_RUNTIME_DIR=" + rt,
		"SHELL=/bin/sh", "LANG=C.UTF-8", "NO_COLOR=1",
	}
	// The user's Go caches stay theirs (a command may build with them),
	// and the race detector's settings reach a race build.
	for _, k := range []string{"USER", "LOGNAME", "GORACE", "GOCOVERDIR", "GOCACHE", "GOMODCACHE", "GOPATH", "GOFLAGS", "GOTOOLCHAIN"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		if _, ok := os.LookupEnv(k); !ok {
			if out, err := exec.Command("go", "env", k).Output(); err == nil {
				env = append(env, k+"="+strings.TrimSpace(string(out)))
			}
		}
	}
	return &User{T: t, Home: home, Env: env}
}

// State is a path under tai's state directory.
func (u *User) State(parts ...string) string {
	return filepath.Join(append([]string{u.Home, ".local", "state", "tai"}, parts...)...)
}

// Git runs git in dir as the user; it fails the test on an error.
func (u *User) Git(dir string, args ...string) string {
	u.T.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, u.Env
	out, err := cmd.CombinedOutput()
	if err != nil {
		u.T.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Repo makes a git repository under HOME holding files, in one commit.
func (u *User) Repo(name string, files map[string]string) string {
	u.T.Helper()
	dir := filepath.Join(u.Home, name)
	for f, body := range files {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			u.T.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			u.T.Fatal(err)
		}
	}
	u.Git(dir, "init", "-q")
	u.Git(dir, "add", "-A")
	u.Git(dir, "commit", "-q", "-m", "init")
	return dir
}

// Command is a command the user runs in dir, in a process group of its
// own (so that a test can signal it and everything it started). A bare
// name is looked up on the user's PATH (exec.Command would use the
// test's).
func (u *User) Command(dir, name string, args ...string) *exec.Cmd {
	if p := filepath.Join(u.Home, "bin", name); !strings.Contains(name, "/") && fileExists(p) {
		name = p
	}
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, u.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// Daemon is a long-running command (a hub, a worker).
type Daemon struct {
	Cmd    *exec.Cmd
	Stdout *bufio.Reader
	Stderr *build.Buffer
	done   chan error
}

// Start starts cmd (made by Command) as a daemon, stopped with SIGTERM
// (then SIGKILL) when the test ends.
func Start(t testing.TB, cmd *exec.Cmd) *Daemon {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	d := &Daemon{Cmd: cmd, Stdout: bufio.NewReader(out), Stderr: &build.Buffer{}, done: make(chan error, 1)}
	cmd.Stderr = d.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- cmd.Wait() }()
	t.Cleanup(func() { _ = d.Stop() })
	return d
}

// Stop ends the daemon with SIGTERM, as a user's Ctrl-C would, and waits
// for it; SIGKILL only if it ignores that for a minute (a hang guard).
func (d *Daemon) Stop() error {
	_ = syscall.Kill(-d.Cmd.Process.Pid, syscall.SIGTERM)
	select {
	case err := <-d.done:
		d.done <- err
		return err
	case <-time.After(time.Minute):
		_ = syscall.Kill(-d.Cmd.Process.Pid, syscall.SIGKILL)
		err := <-d.done
		d.done <- err
		return errors.New("did not stop on SIGTERM")
	}
}

// Wait waits for the daemon to end by itself, and says how it ended.
func (d *Daemon) Wait() error {
	err := <-d.done
	d.done <- err
	return err
}

// Line reads the daemon's next stdout line.
func (d *Daemon) Line(t testing.TB) string {
	t.Helper()
	s, err := d.Stdout.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if s == "" {
		t.Fatalf("%v ended its output before a line; stderr:\n%s", d.Cmd.Args, d.Stderr.String())
	}
	return strings.TrimSpace(s)
}

// Hub starts `tai hub` as the README does, on a free port of 127.0.0.1
// (4222 may be taken on the test machine) with its default store and
// token, and returns its URL: its first stdout line.
func (u *User) Hub() (string, *Daemon) {
	u.T.Helper()
	d := Start(u.T, u.Command(u.Home, "tai", "hub", "--listen", "127.0.0.1:0"))
	url := d.Line(u.T)
	if !strings.HasPrefix(url, "nats://127.0.0.1:") {
		u.T.Fatalf("tai hub's first line is not its URL: %q\n%s", url, d.Stderr.String())
	}
	return url, d
}

// Worker starts `tai worker --nats URL --name NAME` with its default
// directory ($XDG_DATA_HOME/tai/worker/NAME). Nothing waits for it to be
// ready: the tasks wait for it on the hub's work queue.
func (u *User) Worker(url, name string, args ...string) *Daemon {
	u.T.Helper()
	return Start(u.T, u.Command(u.Home, "tai", append([]string{"worker", "--nats", url, "--name", name}, args...)...))
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
