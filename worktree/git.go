package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
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

// git runs git -C dir args... from a directory that is known to exist (the
// repository's top level), never from a worktree that may have been
// deleted: a git run from a vanished cwd silently falls through to whatever
// repository encloses it.
func (m *Manager) git(ctx context.Context, dir string, args ...string) (string, error) {
	return m.gitIn(ctx, dir, nil, args...)
}

func (m *Manager) gitIn(ctx context.Context, dir string, stdin []byte, args ...string) (string, error) {
	if dir != m.Repo {
		if _, err := os.Stat(dir); err != nil {
			return "", fmt.Errorf("refusing to run git in %s: %w", dir, err)
		}
	}
	full := append([]string{"-C", dir,
		// tai's own git calls never run the user's hooks or pager.
		"-c", "core.hooksPath=/dev/null", "-c", "core.pager=cat", "-c", "advice.detachedHead=false",
		// No automatic gc in the middle of a fleet: it repacks refs other
		// tasks are updating.
		"-c", "gc.auto=0", "-c", "maintenance.auto=false"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = m.Repo
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C", "GIT_OPTIONAL_LOCKS=0")
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

// exitCode is the exit status of a failed git command, or -1.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}
