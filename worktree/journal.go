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

// A kill during `git worktree add` leaves a half-made worktree: its
// directory partly checked out, its gitdir under <common dir>/worktrees/
// with the index lock of the checkout git runs in it, and its "locked"
// file ("initializing", or tai's reason). Nothing there yet is an
// agent's (Create had not returned), so the next Create, which holds the
// worktree's flock the killed tai held, removes it whole and adds it
// again; the branch, and every commit on it, stays. The journal of an add
// is beside the worktree's flock: the gitdir it names does not exist
// before the add, and the agent cannot write there.

// addJournal is the journal of an add of task's worktree in run.
func (m *Manager) addJournal(run, task string) string {
	return strings.TrimSuffix(m.lockPath(run, task), ".lock") + ".adding"
}

// addWorktree runs `git worktree add args...` for task's worktree in run
// under its journal. The caller holds the worktree's flock and the
// repository's lock. A git that returns, even with an error, has cleaned
// up after itself (git removes a failed add's worktree): only a kill
// leaves the journal.
func (m *Manager) addWorktree(ctx context.Context, run, task string, args ...string) error {
	j := m.addJournal(run, task)
	if err := WriteFileAtomic(j, []byte(opAdd+" "+m.Path(run, task)+"\n"), 0o644); err != nil {
		return fmt.Errorf("worktree: journal: %w", err)
	}
	_, err := m.git(ctx, m.Repo, append([]string{"worktree", "add"}, args...)...)
	if rerr := os.Remove(j); rerr != nil && err == nil {
		return fmt.Errorf("worktree: journal: %w", rerr)
	}
	if err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	return nil
}

// recoverAdd removes the worktree a killed tai's add left half made, as
// its journal says: the gitdir registered for the worktree's path, locks
// and all, and the directory. The caller holds the worktree's flock (so
// the tai that wrote the journal is dead, and its git got the parent-death
// signal) and the repository's lock (so no other tai adds meanwhile).
// Without a journal it does nothing: a worktree, locked or not, that tai's
// add did not leave is somebody else's.
func (m *Manager) recoverAdd(run, task string) error {
	j := m.addJournal(run, task)
	if _, err := os.Lstat(j); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("worktree: journal: %w", err)
	}
	path := m.Path(run, task)
	dotgit := filepath.Join(path, ".git")
	admin := filepath.Join(m.CommonDir, "worktrees")
	ents, err := os.ReadDir(admin)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("worktree: %w", err)
	}
	removed := []string{}
	for _, e := range ents {
		gd := filepath.Join(admin, e.Name())
		b, err := os.ReadFile(filepath.Join(gd, "gitdir"))
		if err != nil {
			continue
		}
		if p := filepath.Clean(strings.TrimSpace(string(b))); p != dotgit && !sameFile(p, dotgit) {
			continue
		}
		if err := notHeld(gd); err != nil {
			return err
		}
		if err := os.RemoveAll(gd); err != nil {
			return fmt.Errorf("worktree: removing the gitdir a killed tai's add left: %w", err)
		}
		removed = append(removed, gd)
	}
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("worktree: removing the worktree a killed tai's add left: %w", err)
	}
	if err := os.Remove(j); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("worktree: journal: %w", err)
	}
	m.logger().Info("removed the worktree a killed tai's add left half made", "worktree", path, "gitdir", removed)
	return nil
}

// ErrLockHeld is a lock a killed tai's git left that a live process still
// holds open: a git that outlived it (a child of the killed git, which
// the parent-death signal does not reach). tai removes no such lock; the
// next try, once that git is done, finds it gone.
var ErrLockHeld = errors.New("a live process holds the lock a killed tai's git left")

// notHeld checks that no live process has the git dir gd's locks open.
func notHeld(gd string) error {
	locks := []string{filepath.Join(gd, "index.lock"), filepath.Join(gd, "HEAD.lock")}
	if who := openedBy(locks...); who != "" {
		return fmt.Errorf("worktree: %s: %w (%s); try again when it is done", gd, ErrLockHeld, who)
	}
	return nil
}

// The operations a worktree journal names.
const (
	opIntegrate = "integrate" // a rebase onto a target: HEAD detached, rebase state
	opCommit    = "commit"    // git add and commit: the index lock
	opReset     = "reset"     // git reset --hard: the index lock
	opAdd       = "add"       // git worktree add: a half-made worktree (addJournal)
)

// beginWorktree writes the journal of op (and its target, for an
// integration) in the worktree with git dir gd.
func beginWorktree(gd, op, target string) error {
	if err := WriteFileAtomic(filepath.Join(gd, worktreeJournal), []byte(strings.TrimSpace(op+" "+target)+"\n"), 0o644); err != nil {
		return fmt.Errorf("worktree: journal: %w", err)
	}
	return nil
}

// endWorktree removes the journal of op, unless an integration left a
// rebase it could not abort: that one the next Create or Integrate undoes.
func endWorktree(gd, op string) {
	if op != opIntegrate || rebaseState(gd) == "" {
		_ = os.Remove(filepath.Join(gd, worktreeJournal))
	}
}

// recoverWorktree undoes what a killed tai's git left in the worktree at
// dir (git dir gd, on branch), as its journal says: the index and HEAD
// locks of the killed git go; after an integration, its rebase is also
// aborted, which puts the branch back where it was and attaches HEAD to
// it (a rebase that finished has moved the branch to the rebased commits,
// and an abort of what is left moves it back: no commit is lost either
// way). Any other journal (a commit, a reset) leaves HEAD and the files
// alone: they are the agent's work, or what the caller sets again. The caller holds the worktree's flock. It reports whether
// there was anything to undo.
func (m *Manager) recoverWorktree(ctx context.Context, dir, gd, branch string) (bool, error) {
	j, err := os.ReadFile(filepath.Join(gd, worktreeJournal))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("worktree: journal: %w", err)
	}
	op, _, _ := strings.Cut(strings.TrimSpace(string(j)), " ")
	if err := notHeld(gd); err != nil {
		return true, err
	}
	for _, l := range []string{"index.lock", "HEAD.lock"} {
		if err := os.Remove(filepath.Join(gd, l)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return true, fmt.Errorf("worktree: removing a killed tai's lock: %w", err)
		}
	}
	if op == opIntegrate {
		if err := m.undoRebase(ctx, dir, gd, branch); err != nil {
			return true, err
		}
	}
	if err := os.Remove(filepath.Join(gd, worktreeJournal)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return true, fmt.Errorf("worktree: journal: %w", err)
	}
	m.logger().Info("undid what a killed tai left", "worktree", dir, "branch", branch, "op", op)
	return true, nil
}

// undoRebase aborts a killed integration's rebase and checks the branch
// out again.
func (m *Manager) undoRebase(ctx context.Context, dir, gd, branch string) error {
	if rebaseState(gd) != "" {
		if _, err := m.git(ctx, dir, "rebase", "--abort"); err != nil {
			// State git cannot abort from (a kill while it was being
			// written): drop it, and check the branch out again below.
			m.logger().Warn("aborting a killed tai's rebase failed; dropping its state", "worktree", dir, "err", err)
			if _, err := m.git(ctx, dir, "rebase", "--quit"); err != nil {
				return fmt.Errorf("worktree: undoing a killed tai's rebase in %s: %w", dir, err)
			}
		}
	}
	if ref, err := m.git(ctx, dir, "symbolic-ref", "-q", "HEAD"); err != nil || strings.TrimSpace(ref) != "refs/heads/"+branch {
		// Only tai's own rebase ran here since the branch was checked out:
		// what the worktree holds beyond the branch is that rebase's.
		if _, err := m.git(ctx, dir, "checkout", "-q", "--force", branch); err != nil {
			return fmt.Errorf("worktree: checking %s out again after a killed tai's rebase: %w", branch, err)
		}
	}
	return nil
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
