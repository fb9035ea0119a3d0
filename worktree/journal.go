package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A killed tai must not leave a worktree or a target that the next tai
// cannot use. Integrate rebases in the task's worktree and moves the
// target's ref; a kill in between leaves git's rebase state (HEAD
// detached, rebase-merge/), an index.lock in the worktree's git dir, or a
// ref lock on the target. git refuses to go on past any of them, and
// cannot tell a dead writer from a live one.
//
// tai can: before it starts, Integrate writes a journal, and it removes
// the journal when it is done. Whoever finds a journal holds the lock its
// writer held (the worktree's flock, or the target's), so the writer is
// dead and what it left is its own to undo. A rebase, or a lock, with no
// journal is somebody else's, and tai leaves it alone.

// worktreeJournal is the journal's name in a worktree's own git dir
// (<common dir>/worktrees/<name>/), which the agent working in the
// worktree cannot write under tai's sandbox.
const worktreeJournal = "tai-integrating"

// rebaseState names the rebase in progress in the git dir gd ("" if none).
func rebaseState(gd string) string {
	for _, d := range []string{"rebase-merge", "rebase-apply"} {
		if _, err := os.Lstat(filepath.Join(gd, d)); err == nil {
			return d
		}
	}
	return ""
}

// ErrForeignRebase is a worktree in the middle of a rebase tai did not
// start (the agent's, or someone's at a terminal): tai neither finishes
// nor aborts it, since it may hold resolutions in progress.
var ErrForeignRebase = errors.New("worktree is in the middle of a rebase tai did not start")

// beginWorktree writes the journal of an integration of the worktree
// with git dir gd into target.
func beginWorktree(gd, target string) error {
	if err := WriteFileAtomic(filepath.Join(gd, worktreeJournal), []byte(target+"\n"), 0o644); err != nil {
		return fmt.Errorf("worktree: journal: %w", err)
	}
	return nil
}

// endWorktree removes the journal, unless the integration left a rebase
// it could not abort: that one the next Create or Integrate undoes.
func endWorktree(gd string) {
	if rebaseState(gd) == "" {
		_ = os.Remove(filepath.Join(gd, worktreeJournal))
	}
}

// recoverWorktree undoes what a killed integration left in the worktree
// at dir (git dir gd, on branch): the rebase is aborted, which puts the
// branch back where it was and attaches HEAD to it (a rebase that
// finished has moved the branch to the rebased commits, and an abort of
// what is left moves it back: no commit is lost either way), and the
// index and HEAD locks of the killed git go. The caller holds the
// worktree's flock. It reports whether there was anything to undo.
func (m *Manager) recoverWorktree(ctx context.Context, dir, gd, branch string) (bool, error) {
	if _, err := os.Lstat(filepath.Join(gd, worktreeJournal)); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	for _, l := range []string{"index.lock", "HEAD.lock"} {
		if err := os.Remove(filepath.Join(gd, l)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return true, fmt.Errorf("worktree: removing a killed tai's lock: %w", err)
		}
	}
	if rebaseState(gd) != "" {
		if _, err := m.git(ctx, dir, "rebase", "--abort"); err != nil {
			// State git cannot abort from (a kill while it was being
			// written): drop it, and check the branch out again below.
			m.logger().Warn("aborting a killed tai's rebase failed; dropping its state", "worktree", dir, "err", err)
			if _, err := m.git(ctx, dir, "rebase", "--quit"); err != nil {
				return true, fmt.Errorf("worktree: undoing a killed tai's rebase in %s: %w", dir, err)
			}
		}
	}
	if ref, err := m.git(ctx, dir, "symbolic-ref", "-q", "HEAD"); err != nil || strings.TrimSpace(ref) != "refs/heads/"+branch {
		// Only tai's own rebase ran here since the branch was checked out:
		// what the worktree holds beyond the branch is that rebase's.
		if _, err := m.git(ctx, dir, "checkout", "-q", "--force", branch); err != nil {
			return true, fmt.Errorf("worktree: checking %s out again after a killed tai's rebase: %w", branch, err)
		}
	}
	if err := os.Remove(filepath.Join(gd, worktreeJournal)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return true, fmt.Errorf("worktree: journal: %w", err)
	}
	m.logger().Info("undid a killed tai's merge", "worktree", dir, "branch", branch)
	return true, nil
}

// targetJournal is the journal of an integration into a target, beside
// the target's lock file.
func targetJournal(lockPath string) string { return strings.TrimSuffix(lockPath, ".lock") + ".journal" }

// beginTarget is called with the target's lock (lockPath) held. It
// removes the ref lock on target that an integration into it, killed
// while it moved the ref, left, and writes this integration's journal.
// The returned func removes the journal.
func (m *Manager) beginTarget(lockPath, target string) (func(), error) {
	j := targetJournal(lockPath)
	if _, err := os.Lstat(j); err == nil {
		ref := filepath.Join(m.CommonDir, "refs", "heads", filepath.FromSlash(target)+".lock")
		if err := os.Remove(ref); err == nil {
			m.logger().Info("removed the ref lock a killed tai's merge left", "target", target, "lock", ref)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("worktree: removing a killed tai's ref lock: %w", err)
		}
	}
	if err := WriteFileAtomic(j, []byte(target+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("worktree: journal: %w", err)
	}
	return func() { _ = os.Remove(j) }, nil
}
