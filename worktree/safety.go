package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Unmerged returns the commits of branch that would be lost if it were
// deleted: those reachable from no target and no remote-tracking branch,
// unless a target holds the same work exactly. "Exactly" is by content,
// whitespace included (git cherry and patch-id ignore whitespace, and an
// indentation change is a different Python program):
//   - a target's tree has, at every path the branch changed since its
//     merge base with that target, the very blob (and mode) the branch has
//     (it was merged, cherry-picked, rebased or squashed in, and not
//     changed since); or
//   - for each remaining commit, a commit on the target since the merge
//     base makes the same change: the same paths from the same blobs to
//     the same blobs; or
//   - the branch's whole change is one commit on the target (a squash).
//
// When in doubt the commits count as unmerged: the branch is kept.
func (m *Manager) Unmerged(ctx context.Context, branch string, targets []string) ([]string, error) {
	var valid []string
	for _, t := range targets {
		if t != "" && t != branch && m.refExists(ctx, t) {
			valid = append(valid, t)
		}
	}
	ref := "refs/heads/" + branch
	args := []string{"rev-list", ref, "--not", "--remotes"}
	args = append(args, valid...)
	out, err := m.git(ctx, m.Repo, args...)
	if err != nil {
		return nil, fmt.Errorf("worktree: %w", err)
	}
	left := map[string]bool{}
	for _, c := range strings.Fields(out) {
		left[c] = true
	}
	if len(left) == 0 {
		return nil, nil
	}
	for _, t := range valid {
		mbOut, err := m.git(ctx, m.Repo, "merge-base", t, ref)
		if err != nil {
			continue // unrelated histories: nothing to compare
		}
		mb := strings.TrimSpace(mbOut)
		in, err := m.contentIn(ctx, mb, ref, t)
		if err != nil {
			return nil, err
		}
		if in {
			return nil, nil
		}
		onTarget, err := m.changes(ctx, mb+".."+t)
		if err != nil {
			return nil, err
		}
		have := map[string]bool{}
		for _, c := range onTarget {
			have[c.change] = true
		}
		whole, err := m.change(ctx, mb, ref)
		if err != nil {
			return nil, err
		}
		if whole != "" && have[whole] {
			return nil, nil // squash-merged
		}
		mine, err := m.changes(ctx, mb+".."+ref)
		if err != nil {
			return nil, err
		}
		for _, c := range mine {
			if have[c.change] && c.change != "" {
				delete(left, c.commit)
			}
		}
		if len(left) == 0 {
			return nil, nil
		}
	}
	res := make([]string, 0, len(left))
	for c := range left {
		res = append(res, c)
	}
	sort.Strings(res)
	return res, nil
}

func (m *Manager) refExists(ctx context.Context, ref string) bool {
	_, err := m.git(ctx, m.Repo, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
	return err == nil
}

// contentIn: at every path that differs between from and branch, target's
// tree has exactly branch's blob and mode (or, for a deletion, no file).
func (m *Manager) contentIn(ctx context.Context, from, branch, target string) (bool, error) {
	out, err := m.git(ctx, m.Repo, "diff", "--name-only", "-z", "--no-renames", from, branch)
	if err != nil {
		return false, fmt.Errorf("worktree: %w", err)
	}
	paths := strings.Split(strings.TrimRight(out, "\x00"), "\x00")
	if len(paths) == 1 && paths[0] == "" {
		return false, nil // no change of its own: the commits may still be lost history
	}
	mine, err := m.entries(ctx, branch, paths)
	if err != nil {
		return false, err
	}
	theirs, err := m.entries(ctx, target, paths)
	if err != nil {
		return false, err
	}
	for _, p := range paths {
		if mine[p] != theirs[p] {
			return false, nil
		}
	}
	return true, nil
}

// entries maps each of paths to "mode blob" in commit's tree ("" if absent).
func (m *Manager) entries(ctx context.Context, commit string, paths []string) (map[string]string, error) {
	out, err := m.git(ctx, m.Repo, append([]string{"ls-tree", "-z", "--full-tree", commit, "--"}, paths...)...)
	if err != nil {
		return nil, fmt.Errorf("worktree: %w", err)
	}
	res := map[string]string{}
	for _, e := range strings.Split(out, "\x00") {
		meta, path, ok := strings.Cut(e, "\t")
		if !ok {
			continue
		}
		f := strings.Fields(meta) // mode type blob
		if len(f) == 3 {
			res[path] = f[0] + " " + f[2]
		}
	}
	return res, nil
}

type commitChange struct{ commit, change string }

// changes lists each non-merge commit of rng with its exact change: the
// sorted raw diff lines (modes, full blob ids, status, path).
func (m *Manager) changes(ctx context.Context, rng string) ([]commitChange, error) {
	out, err := m.git(ctx, m.Repo, "log", "--no-merges", "--raw", "--no-renames", "--no-abbrev", "-z", "--format=%x01%H", rng)
	if err != nil {
		return nil, fmt.Errorf("worktree: %w", err)
	}
	var res []commitChange
	for _, rec := range strings.Split(out, "\x01")[1:] {
		sha, raw, _ := strings.Cut(rec, "\x00")
		res = append(res, commitChange{commit: strings.TrimSpace(sha), change: rawSignature(raw)})
	}
	return res, nil
}

// change is the exact change from a to b (see changes).
func (m *Manager) change(ctx context.Context, a, b string) (string, error) {
	out, err := m.git(ctx, m.Repo, "diff", "--raw", "--no-renames", "--no-abbrev", "-z", a, b)
	if err != nil {
		return "", fmt.Errorf("worktree: %w", err)
	}
	return rawSignature(out), nil
}

// rawSignature normalises `--raw -z` output (":mode mode blob blob S\0path\0"...)
// into sorted "mode mode blob blob S path" lines.
func rawSignature(raw string) string {
	f := strings.Split(strings.Trim(raw, "\n\x00"), "\x00")
	var lines []string
	for i := 0; i+1 < len(f); i += 2 {
		meta := strings.TrimPrefix(strings.TrimSpace(f[i]), ":")
		lines = append(lines, meta+" "+f[i+1])
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// targets are the branches a tai branch counts as merged into: its
// recorded target and the main worktree's current branch.
func (m *Manager) targets(ctx context.Context, rec Record, extra []string) []string {
	t := append([]string{}, extra...)
	if rec.Target != "" {
		t = append(t, rec.Target)
	}
	if cur := m.CurrentBranch(ctx); cur != "" {
		t = append(t, cur)
	}
	return t
}

// RemoveOptions tune Remove.
type RemoveOptions struct {
	// Force removes even with uncommitted changes or unmerged commits. It
	// never removes a worktree a live process holds.
	Force bool
	// Targets are more branches that count as "merged into".
	Targets []string
}

// Remove deletes a worktree and its branch, if that loses nothing.
func (m *Manager) Remove(ctx context.Context, rec Record, o RemoveOptions) error {
	mu := m.pathMu(rec.Path)
	mu.Lock()
	defer mu.Unlock()
	unlock, err := m.lockRepo(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	lk, err := m.tryLock(rec.Run, rec.Task)
	if err != nil {
		return err
	}
	defer func() { _ = lk.Unlock() }()
	if _, err := os.Stat(rec.Path); err == nil && !o.Force {
		dirty, err := m.Dirty(ctx, rec.Path)
		if err != nil {
			return err
		}
		if dirty {
			return fmt.Errorf("%s: %w (commit it, or use --force)", rec.Path, ErrDirty)
		}
	}
	if m.branchExists(ctx, rec.Branch) && !o.Force {
		left, err := m.Unmerged(ctx, rec.Branch, m.targets(ctx, rec, o.Targets))
		if err != nil {
			return err
		}
		if len(left) > 0 {
			return fmt.Errorf("%s: %w: %d commit(s), e.g. %s (merge or push them, or use --force)", rec.Branch, ErrUnmerged, len(left), short(left[0]))
		}
	}
	regs, err := m.registered(ctx)
	if err != nil {
		return err
	}
	if _, ok := regs[rec.Path]; ok {
		_, _ = m.git(ctx, m.Repo, "worktree", "unlock", rec.Path)
		if _, err := m.git(ctx, m.Repo, "worktree", "remove", "--force", rec.Path); err != nil {
			return fmt.Errorf("worktree: %w", err)
		}
	} else if _, err := os.Stat(rec.Path); err == nil {
		if err := os.RemoveAll(rec.Path); err != nil {
			return fmt.Errorf("worktree: %w", err)
		}
	}
	if _, err := m.git(ctx, m.Repo, "worktree", "prune"); err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	if m.branchExists(ctx, rec.Branch) {
		if _, err := m.git(ctx, m.Repo, "branch", "-D", rec.Branch); err != nil {
			return fmt.Errorf("worktree: %w", err)
		}
	}
	_ = os.Remove(m.recordPath(rec.Run, rec.Task))
	_ = os.Remove(m.lockPath(rec.Run, rec.Task))
	_ = os.Remove(m.addJournal(rec.Run, rec.Task)) // a killed add's, of a worktree now gone
	for _, d := range []string{filepath.Dir(rec.Path), filepath.Dir(m.recordPath(rec.Run, rec.Task)), filepath.Dir(m.lockPath(rec.Run, rec.Task))} {
		_ = os.Remove(d) // only if empty
	}
	return nil
}

func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
