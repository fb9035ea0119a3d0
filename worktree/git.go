package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// GitError is a git command that failed, with what it printed.
type GitError struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *GitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

func (e *GitError) Unwrap() error { return e.Err }

// ErrGitDir is a worktree whose .git no longer points at the gitdir git
// made for it under the repository's .git/worktrees/: tai refuses to run
// git there, since the gitdir (and its config) would be whoever rewrote it.
var ErrGitDir = errors.New("worktree's .git does not point at its registered gitdir")

// safeConfig turns off, for tai's own git calls, every configuration key
// that makes git run a command or talk to the network, whoever set it: the
// agents work in these repositories and may have written their config.
// Command-line -c wins over every config file.
var safeConfig = []string{
	"core.fsmonitor=false",
	"core.hooksPath=/dev/null",
	"core.pager=cat",
	"core.editor=false",
	"sequence.editor=false",
	"core.askPass=",
	"core.sshCommand=",
	"core.gitProxy=",
	"credential.helper=",
	"protocol.allow=never",
	"commit.gpgSign=false",
	"tag.gpgSign=false",
	"rebase.updateRefs=false",
	"rebase.autoStash=false",
	"submodule.recurse=false",
	"core.untrackedCache=false",
	"advice.detachedHead=false",
	// No automatic gc in the middle of a fleet: it repacks refs other
	// tasks are updating.
	"gc.auto=0",
	"maintenance.auto=false",
}

// gitEnv is the fixed environment of tai's git calls: only what git needs
// to find the user's identity and programs; nothing inherited that points
// it at another repository, config or command (GIT_DIR, GIT_CONFIG_*,
// GIT_EXTERNAL_DIFF, GIT_SSH_COMMAND, ...).
func gitEnv() []string {
	env := []string{
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_PAGER=cat",
		"GIT_EDITOR=false",
		"GIT_ASKPASS=",
		"SSH_ASKPASS=",
		"GIT_NO_REPLACE_OBJECTS=1",
		"LC_ALL=C",
	}
	for _, k := range []string{"PATH", "HOME", "XDG_CONFIG_HOME", "TMPDIR", "USER", "LOGNAME",
		// The user's identity, when set in the environment.
		"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// git runs git -C dir args... from a directory that is known to exist (the
// repository's top level), never from a worktree that may have been
// deleted: a git run from a vanished cwd silently falls through to whatever
// repository encloses it.
func (m *Manager) git(ctx context.Context, dir string, args ...string) (string, error) {
	return m.gitIn(ctx, dir, nil, args...)
}

func (m *Manager) gitIn(ctx context.Context, dir string, stdin []byte, args ...string) (string, error) {
	full := []string{"--no-pager"}
	if dir != m.Repo {
		if _, err := os.Stat(dir); err != nil {
			return "", fmt.Errorf("refusing to run git in %s: %w", dir, err)
		}
		// A linked worktree: use the gitdir git registered for it, named
		// explicitly, so a rewritten .git file is refused here and cannot
		// be swapped in between the check and the run.
		gd, err := m.worktreeGitDir(dir)
		if err != nil {
			return "", err
		}
		full = append(full, "--git-dir="+gd, "--work-tree="+dir)
	}
	full = append(full, "-C", dir)
	for _, c := range safeConfig {
		full = append(full, "-c", c)
	}
	if len(args) > 0 && (args[0] == "diff" || args[0] == "log" || args[0] == "show") {
		// An external diff or textconv driver is a command too (named by
		// .gitattributes, which the agent writes).
		args = append([]string{args[0], "--no-ext-diff", "--no-textconv"}, args[1:]...)
	}
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = m.Repo
	cmd.Env = gitEnv()
	cmd.SysProcAttr = gitProcAttr()
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), &GitError{Args: args, Stderr: errb.String(), Err: err}
	}
	return out.String(), nil
}

// worktreeGitDir checks that the linked worktree at dir is one git
// registered in this repository: its .git is a regular file naming a
// directory directly under <common dir>/worktrees/, whose gitdir file
// points back at dir/.git and whose commondir is this repository's. It
// returns that gitdir. The agent working in dir can rewrite dir/.git, but
// not (under tai's sandbox) the repository's .git/worktrees.
func (m *Manager) worktreeGitDir(dir string) (string, error) {
	dotgit := filepath.Join(dir, ".git")
	bad := func(why string, a ...any) error {
		return fmt.Errorf("refusing to run git in %s: %w (%s)", dir, ErrGitDir, fmt.Sprintf(why, a...))
	}
	fi, err := os.Lstat(dotgit)
	if err != nil {
		return "", bad("%v", err)
	}
	if !fi.Mode().IsRegular() {
		return "", bad("%s is a %s, not the file git writes", dotgit, fi.Mode().Type())
	}
	b, err := os.ReadFile(dotgit)
	if err != nil {
		return "", bad("%v", err)
	}
	gd, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok || strings.ContainsAny(gd, "\n\x00") {
		return "", bad("%s is not a gitdir link", dotgit)
	}
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(dir, gd)
	}
	gd = filepath.Clean(gd)
	if !sameFile(filepath.Dir(gd), filepath.Join(m.CommonDir, "worktrees")) {
		return "", bad("it points at %s, outside %s", gd, filepath.Join(m.CommonDir, "worktrees"))
	}
	if fi, err := os.Lstat(gd); err != nil || !fi.IsDir() {
		return "", bad("%s is not a directory", gd)
	}
	back, err := os.ReadFile(filepath.Join(gd, "gitdir"))
	if err != nil {
		return "", bad("%v", err)
	}
	if !sameFile(strings.TrimSpace(string(back)), dotgit) {
		return "", bad("%s belongs to %s", gd, strings.TrimSpace(string(back)))
	}
	cd, err := os.ReadFile(filepath.Join(gd, "commondir"))
	if err != nil {
		return "", bad("%v", err)
	}
	c := strings.TrimSpace(string(cd))
	if !filepath.IsAbs(c) {
		c = filepath.Join(gd, c)
	}
	if !sameFile(c, m.CommonDir) {
		return "", bad("%s's common dir is %s", gd, c)
	}
	return gd, nil
}

// sameFile: a and b name the same existing file (symlinked temp dirs
// make equal paths look different).
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// exitCode is the exit status of a failed git command, or -1.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}
