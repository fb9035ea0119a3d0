package worktree

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Reattach puts the HEAD of the worktree at dir back on branch where the
// agent left it elsewhere (a branch of its own, or detached) at a commit
// that has the branch's commits: branch is fast-forwarded there and
// checked out again, the files, the index and the agent's other branch
// as they are. It returns where HEAD was ("" if on branch). HEAD
// elsewhere without the branch's commits, or a rebase left in progress,
// is an error naming it: tai neither drops the agent's work nor guesses
// which of two lines of work is the task's.
func (m *Manager) Reattach(ctx context.Context, dir, branch string) (string, error) {
	gd, err := m.worktreeGitDir(dir)
	if err != nil {
		return "", err
	}
	ref, err := m.git(ctx, dir, "symbolic-ref", "-q", "HEAD")
	ref = strings.TrimSpace(ref)
	if err == nil && ref == "refs/heads/"+branch {
		return "", nil
	}
	head, err := m.RevParseIn(ctx, dir, "HEAD")
	if err != nil {
		return "", err
	}
	where := "a detached HEAD at " + head[:12]
	if b, ok := strings.CutPrefix(ref, "refs/heads/"); ok {
		where = "branch " + b
	}
	if st := rebaseState(gd); st != "" {
		return where, fmt.Errorf("worktree: the agent left a rebase in progress in %s (git's %s, on %s); finish it or abort it (git -C %s rebase --abort): %w", dir, st, where, dir, ErrForeignRebase)
	}
	tip, err := m.RevParse(ctx, "refs/heads/"+branch)
	if err != nil {
		return where, err
	}
	if !m.IsAncestor(ctx, tip, head) {
		return where, fmt.Errorf("worktree: the agent left %s on %s, which does not have %s's commits; tai merges only %s, and keeps both: %w", dir, where, branch, branch, ErrHeadMoved)
	}
	if _, err := m.git(ctx, m.Repo, "update-ref", "-m", "tai: the agent's commits on "+where, "refs/heads/"+branch, head, tip); err != nil {
		return where, fmt.Errorf("worktree: %w", err)
	}
	if _, err := m.git(ctx, dir, "symbolic-ref", "-m", "tai: back on "+branch, "HEAD", "refs/heads/"+branch); err != nil {
		return where, fmt.Errorf("worktree: %w", err)
	}
	m.logger().Info("put the worktree back on its branch", "worktree", dir, "branch", branch, "was", where)
	return where, nil
}

// ErrHeadMoved is a worktree whose HEAD the agent moved off the task's
// branch, to a commit without the branch's commits.
var ErrHeadMoved = errors.New("the worktree's HEAD is off its branch")
