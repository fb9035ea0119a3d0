// Package realagent sets up a real npm agent offline for an end-to-end
// test: a throw-away HOME with the agent's settings, a git repo, and
// `tai model serve` playing a script, the agent's environment pointed at it.
package realagent

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tai-dev/tai/e2e/internal/modelsrv"
)

// Agent is what a real agent needs to run offline.
type Agent struct {
	Name string
	// Bin is the environment variable that holds its installed executable.
	Bin string
	// Node: it needs TAI_NODE22_BIN first in PATH.
	Node bool
	// Files are the files of its throw-away HOME (paths relative to it,
	// with slashes), Env its environment, given the model server's URL.
	Files func(url string) map[string]string
	Env   func(url string) []string
}

// Setup is one prepared run of an agent.
type Setup struct {
	Dir  string // the test's temporary directory: home and repo are in it
	Home string
	Repo string
	URL  string // the model server's
	Exe  string // the agent's executable
	// Env is the agent's whole environment: HOME, TMPDIR, PATH, the XDG
	// directories under HOME, then the agent's own.
	Env []string
}

// Start prepares a's run against taiBin's model server playing script (a
// path under modelserver/testdata/scripts, relative to the test package
// directory two levels below the repository root, as e2e/<pkg> is). It
// returns ok false, having set up nothing, when the agent is not
// installed: the caller says whether that skips or fails.
func Start(t *testing.T, taiBin string, a Agent, script string) (s Setup, ok bool) {
	t.Helper()
	exe, node := os.Getenv(a.Bin), os.Getenv("TAI_NODE22_BIN")
	if exe == "" || (a.Node && node == "") {
		return Setup{}, false
	}
	dir := t.TempDir()
	s = Setup{Dir: dir, Home: filepath.Join(dir, "home"), Repo: filepath.Join(dir, "repo"), Exe: exe}
	for _, d := range []string{filepath.Join(s.Home, "tmp"), s.Repo} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	git := exec.Command("git", "init", "-q", "-b", "main")
	git.Dir = s.Repo
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	abs, err := filepath.Abs(filepath.Join("..", "..", "modelserver", "testdata", "scripts", script))
	if err != nil {
		t.Fatal(err)
	}
	s.URL = modelsrv.Start(t, taiBin, abs, s.Repo, "").URL
	for name, body := range a.Files(s.URL) {
		p := filepath.Join(s.Home, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := os.Getenv("PATH")
	if a.Node {
		path = node + string(os.PathListSeparator) + path
	}
	s.Env = append([]string{
		"HOME=" + s.Home, "TMPDIR=" + filepath.Join(s.Home, "tmp"), "LANG=C.UTF-8", "SHELL=/bin/bash", "PATH=" + path,
		"XDG_CONFIG_HOME=" + filepath.Join(s.Home, ".config"), "XDG_DATA_HOME=" + filepath.Join(s.Home, ".local", "share"),
		"XDG_CACHE_HOME=" + filepath.Join(s.Home, ".cache"),
	}, a.Env(s.URL)...)
	return s, true
}
