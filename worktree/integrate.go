package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gofrs/flock"
)

// ConflictError is a rebase that stopped on conflicts.
type ConflictError struct {
	Branch, Target string
	Files          []string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("merge conflict rebasing %s onto %s in %s", e.Branch, e.Target, strings.Join(e.Files, ", "))
}

// ErrGitTooOld is a git without what tai needs (merge-tree --write-tree,
// git 2.38).
var ErrGitTooOld = errors.New("git is too old")

// MergeTreeSupported reports whether this git has `merge-tree
// --write-tree` (2.38 and later).
func (m *Manager) MergeTreeSupported(ctx context.Context) bool {
	m.versionOnce.Do(func() {
		out, err := m.git(ctx, m.Repo, "version")
		if err != nil {
			return
		}
		var major, minor int
		if _, err := fmt.Sscanf(strings.TrimPrefix(strings.TrimSpace(out), "git version "), "%d.%d", &major, &minor); err == nil {
			m.mergeTree = major > 2 || major == 2 && minor >= 38
		}
	})
	return m.mergeTree
}

// Conflicts is a dry merge of branch into target with `git merge-tree
// --write-tree`: the files that would conflict, found without touching
// any worktree or ref. It fails with ErrGitTooOld on a git before 2.38.
func (m *Manager) Conflicts(ctx context.Context, target, branch string) ([]string, error) {
	if !m.MergeTreeSupported(ctx) {
		return nil, fmt.Errorf("worktree: merge-tree pre-flight: %w (need 2.38 or later)", ErrGitTooOld)
	}
	out, err := m.git(ctx, m.Repo, "merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", target, branch)
	if err == nil {
		return nil, nil
	}
	if exitCode(err) != 1 {
		return nil, fmt.Errorf("worktree: %w", err)
	}
	// <tree>\0<file>\0<file>\0 ... (then, without --no-messages, more)
	f := strings.Split(strings.TrimRight(out, "\x00"), "\x00")
	var files []string
	seen := map[string]bool{}
	for _, p := range f[1:] {
		if p != "" && !seen[p] {
			seen[p] = true
			files = append(files, p)
		}
	}
	return files, nil
}

// targetLock queues merges into one target across processes: two fleets
// on one target take turns. Taking it undoes what a holder killed while
// it moved the target's ref left (beginTarget).
func (m *Manager) targetLock(ctx context.Context, target string) (func(), error) {
	name := strings.NewReplacer("/", "%2F", "%", "%25").Replace(target)
	path := filepath.Join(m.CommonDir, "tai", "targets", name+".lock")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("worktree: %w", err)
	}
	lk := flock.New(path)
	if _, err := lk.TryLockContext(ctx, 10*time.Millisecond); err != nil {
		return nil, fmt.Errorf("worktree: locking %s: %w", path, err)
	}
	end, err := m.beginTarget(path, target)
	if err != nil {
		_ = lk.Unlock()
		return nil, err
	}
	return func() { end(); _ = lk.Unlock() }, nil
}

// Integrate brings the worktree's branch onto target without touching any
// checkout of target: behind every other merge into target (of this or
// another process), it checks with merge-tree that the branch merges
// cleanly (a conflict is named with its files, no worktree touched), then
// rebases the branch inside its own worktree onto target, runs check (if
// any) in the worktree, verifies that the result fast-forwards target and
// moves target's ref with a compare-and-swap update-ref (retried from the
// rebase if something else moved it meanwhile). It refuses a target
// checked out in any worktree (moving it would leave that checkout's files
// stale). It returns the new target commit. A conflict is a
// *ConflictError naming the files; a rebase that stops is aborted, so the
// worktree is as it was. The caller holds the worktree (its Handle): what
// an Integrate killed half-way left in it is undone first (see
// journal.go), and a rebase someone else started there is refused
// (ErrForeignRebase).
func (m *Manager) Integrate(ctx context.Context, rec Record, target string, check func(ctx context.Context, dir string) error) (string, error) {
	if p, ok, err := m.CheckedOut(ctx, target); err != nil {
		return "", err
	} else if ok {
		return "", fmt.Errorf("worktree: target branch %s is checked out in %s; tai never moves a checked-out branch (use another target)", target, p)
	}
	// The worktree's .git is checked before anything else runs in it.
	gd, err := m.worktreeGitDir(rec.Path)
	if err != nil {
		return "", err
	}
	unlock, err := m.targetLock(ctx, target)
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := m.recoverWorktree(ctx, rec.Path, gd, rec.Branch); err != nil {
		return "", err
	}
	if st := rebaseState(gd); st != "" {
		return "", fmt.Errorf("worktree: %s: %w (git's %s; finish it, or run git -C %s rebase --abort)", rec.Path, ErrForeignRebase, st, rec.Path)
	}
	if err := beginWorktree(gd, opIntegrate, target); err != nil {
		return "", err
	}
	defer endWorktree(gd, opIntegrate)
	for attempt := 0; ; attempt++ {
		head, err := m.integrateOnce(ctx, rec, target, check)
		if errors.Is(err, errTargetMoved) && attempt < 5 {
			continue
		}
		return head, err
	}
}

// errTargetMoved: target's ref changed between the rebase and the update.
var errTargetMoved = errors.New("target moved")

func (m *Manager) integrateOnce(ctx context.Context, rec Record, target string, check func(ctx context.Context, dir string) error) (string, error) {
	old, err := m.RevParse(ctx, "refs/heads/"+target)
	if err != nil {
		return "", err
	}
	if m.MergeTreeSupported(ctx) {
		files, err := m.Conflicts(ctx, old, "refs/heads/"+rec.Branch)
		if err != nil {
			return "", err
		}
		if len(files) > 0 {
			return "", &ConflictError{Branch: rec.Branch, Target: target, Files: files}
		}
	}
	if _, err := m.git(ctx, rec.Path, append(append([]string{}, m.identity...), "rebase", "--no-autostash", old)...); err != nil {
		out, _ := m.git(ctx, rec.Path, "diff", "--name-only", "--diff-filter=U")
		files := strings.Fields(out)
		_, _ = m.git(ctx, rec.Path, "rebase", "--abort")
		if len(files) == 0 {
			return "", fmt.Errorf("worktree: rebase: %w", err)
		}
		return "", &ConflictError{Branch: rec.Branch, Target: target, Files: files}
	}
	if check != nil {
		if err := check(ctx, rec.Path); err != nil {
			return "", fmt.Errorf("check failed on %s: %w", rec.Branch, err)
		}
	}
	head, err := m.RevParseIn(ctx, rec.Path, "HEAD")
	if err != nil {
		return "", err
	}
	if _, err := m.git(ctx, m.Repo, "merge-base", "--is-ancestor", old, head); err != nil {
		return "", fmt.Errorf("worktree: %s does not fast-forward %s: %w", rec.Branch, target, err)
	}
	if _, err := m.git(ctx, m.Repo, "update-ref", "-m", "tai: fast-forward "+target+" to "+rec.Branch, "refs/heads/"+target, head, old); err != nil {
		if now, e := m.RevParse(ctx, "refs/heads/"+target); e == nil && now != old {
			return "", errTargetMoved
		}
		return "", fmt.Errorf("worktree: %w", err)
	}
	return head, nil
}

// listRegistered reads git's worktree registrations under the repository
// lock; where tai has made nothing yet (no <git-dir>/tai), there is no tai
// change to serialise against, and a read-only caller (doctor, list)
// leaves the repository as it found it.
func (m *Manager) listRegistered(ctx context.Context) (map[string]registration, error) {
	if _, err := os.Stat(filepath.Join(m.CommonDir, "tai")); errors.Is(err, fs.ErrNotExist) {
		return m.registered(ctx)
	}
	unlock, err := m.lockRepo(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return m.registered(ctx)
}
