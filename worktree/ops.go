package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The named git operations of tai's callers outside this package: a NATS
// worker's bare clone and the worktrees it makes from it, a coordinator's
// clone, the hub, compare, the policy's reading of a push. Git's Run is
// this package's own, so no other package composes a git command line:
// each operation here is one fixed shape of git's arguments, every value
// in it checked to be no option (a URL, a ref, a revision starting with
// "-" would be read by git as one: --upload-pack=... runs a command).

// ErrOption is a value given to a named git operation that git would read
// as an option.
var ErrOption = errors.New("a git argument starts with '-'")

// values refuses any of vs that git would read as an option, or that is
// empty where git needs a value.
func values(op string, vs ...string) error {
	for _, v := range vs {
		if v == "" || strings.HasPrefix(v, "-") {
			return fmt.Errorf("worktree: git %s %q: %w", op, v, ErrOption)
		}
	}
	return nil
}

// Clone clones url into dir: bare (a worker's clone, which holds only
// objects and refs) or with no checkout (a coordinator's, which merges in
// worktrees of its own). g is a Git outside any repository (Repo "").
func (g *Git) Clone(ctx context.Context, url, dir string, bare bool) error {
	if err := values("clone", url, dir); err != nil {
		return err
	}
	mode := "--no-checkout"
	if bare {
		mode = "--bare"
	}
	if _, err := g.run(ctx, "", "clone", mode, "--quiet", url, dir); err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	return nil
}

// Fetch fetches refspecs ("+src:dst") from url into g's repository.
func (g *Git) Fetch(ctx context.Context, url string, refspecs ...string) error {
	if err := values("fetch", append([]string{url}, refspecs...)...); err != nil {
		return err
	}
	if _, err := g.run(ctx, g.Repo, append([]string{"fetch", "--quiet", url}, refspecs...)...); err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	return nil
}

// Push pushes refspecs to url from dir (g's repository, or a worktree of
// it: "HEAD" is that worktree's).
func (g *Git) Push(ctx context.Context, dir, url string, refspecs ...string) error {
	if err := values("push", append([]string{url}, refspecs...)...); err != nil {
		return err
	}
	if _, err := g.run(ctx, dir, append([]string{"push", "--quiet", url}, refspecs...)...); err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	return nil
}

// HasCommit reports whether rev names a commit g's repository has.
func (g *Git) HasCommit(ctx context.Context, rev string) bool {
	if values("cat-file", rev) != nil {
		return false
	}
	_, err := g.run(ctx, g.Repo, "cat-file", "-e", rev+"^{commit}")
	return err == nil
}

// Ref is a reference and the object it names.
type Ref struct {
	Name, ID string
}

// Refs lists the references under prefix (refs/tai/RUN/TASK/).
func (g *Git) Refs(ctx context.Context, prefix string) ([]Ref, error) {
	if err := values("for-each-ref", prefix); err != nil {
		return nil, err
	}
	out, err := g.run(ctx, g.Repo, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
	if err != nil {
		return nil, fmt.Errorf("worktree: %w", err)
	}
	var refs []Ref
	for l := range strings.Lines(out) {
		if name, id, ok := strings.Cut(strings.TrimSpace(l), " "); ok {
			refs = append(refs, Ref{Name: name, ID: id})
		}
	}
	return refs, nil
}

// IsAncestor reports whether commit a is an ancestor of (or equal to) b.
func (g *Git) IsAncestor(ctx context.Context, a, b string) bool {
	if values("merge-base", a, b) != nil {
		return false
	}
	_, err := g.run(ctx, g.Repo, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

// ErrCarryConflict is a commit whose change conflicts with the commit it
// was to be carried onto.
var ErrCarryConflict = errors.New("the change conflicts with the commit it is carried onto")

// Carry makes a commit on onto with commit's change merged in three-way
// (from where the two forked), touching no worktree or ref, and returns
// it. A conflict is ErrCarryConflict.
func (g *Git) Carry(ctx context.Context, commit, onto, message string) (string, error) {
	if err := values("merge-tree", commit, onto); err != nil {
		return "", err
	}
	out, err := g.run(ctx, g.Repo, "merge-tree", "--write-tree", "--no-messages", onto, commit)
	tree, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	if exitCode(err) == 1 {
		return "", fmt.Errorf("worktree: carrying %.12s onto %.12s: %w", commit, onto, ErrCarryConflict)
	}
	if err != nil || tree == "" {
		return "", fmt.Errorf("worktree: carrying %.12s onto %.12s: %w", commit, onto, err)
	}
	c, err := g.run(ctx, g.Repo, "commit-tree", tree, "-p", onto, "-m", message)
	if err != nil {
		return "", fmt.Errorf("worktree: %w", err)
	}
	return strings.TrimSpace(c), nil
}

// CommitAll commits everything in the worktree at dir (AddAll), running
// no hook. It reports whether there was anything to commit.
func (g *Git) CommitAll(ctx context.Context, dir, message string) (bool, error) {
	changed, err := g.AddAll(ctx, dir)
	if err != nil || !changed {
		return false, err
	}
	if _, err := g.run(ctx, dir, "commit", "-q", "--no-verify", "-m", message); err != nil {
		return false, fmt.Errorf("worktree: %w", err)
	}
	return true, nil
}

// Squash makes the worktree at dir, everything in it committed or not,
// one commit on base (none when it holds no change from base), and
// returns its HEAD.
func (g *Git) Squash(ctx context.Context, dir, base, message string) (string, error) {
	if err := values("reset", base); err != nil {
		return "", err
	}
	if _, err := g.AddAll(ctx, dir); err != nil {
		return "", err
	}
	if _, err := g.run(ctx, dir, "reset", "-q", "--soft", base); err != nil {
		return "", fmt.Errorf("worktree: %w", err)
	}
	if _, err := g.run(ctx, dir, "diff", "--cached", "--quiet"); err != nil {
		if exitCode(err) != 1 {
			return "", fmt.Errorf("worktree: %w", err)
		}
		if _, err := g.run(ctx, dir, "commit", "-q", "--no-verify", "-m", message); err != nil {
			return "", fmt.Errorf("worktree: %w", err)
		}
	}
	return g.Head(ctx, dir)
}

// Head is the commit checked out in dir.
func (g *Git) Head(ctx context.Context, dir string) (string, error) {
	out, err := g.run(ctx, dir, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return "", fmt.Errorf("worktree: %w", err)
	}
	return strings.TrimSpace(out), nil
}

// Patch is the unified diff of dir (a worktree: its files against rev; the
// repository: rev, a commit range "a..b", against its end), cut to max
// bytes (0: no cut).
func (g *Git) Patch(ctx context.Context, dir, rev string, max int) (string, error) {
	if err := values("diff", rev); err != nil {
		return "", err
	}
	out, err := g.run(ctx, dir, "diff", "--no-color", rev, "--")
	if err != nil {
		return "", fmt.Errorf("worktree: %w", err)
	}
	if max > 0 && len(out) > max {
		out = out[:max] + "\n[... diff cut at " + strconv.Itoa(max) + " bytes]\n"
	}
	return out, nil
}

// WorkDiff is what was done in dir since rev: the diff of the files git
// tracks (cut at max bytes, 0: whole) and the names of the new files it
// does not track yet, which a diff leaves out.
func (g *Git) WorkDiff(ctx context.Context, dir, rev string, max int) (string, error) {
	patch, err := g.Patch(ctx, dir, rev, max)
	if err != nil {
		return "", err
	}
	if untracked, err := g.Untracked(ctx, dir); err == nil && len(untracked) > 0 {
		patch += "\nNew files, not tracked by git yet:\n  " + strings.Join(untracked, "\n  ") + "\n"
	}
	return patch, nil
}

// Untracked are the files in dir git does not track and does not ignore,
// relative to dir.
func (g *Git) Untracked(ctx context.Context, dir string) ([]string, error) {
	out, err := g.run(ctx, dir, "ls-files", "-z", "--others", "--exclude-standard", "--", ".")
	if err != nil {
		return nil, fmt.Errorf("worktree: %w", err)
	}
	var files []string
	for _, f := range strings.Split(out, "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files, nil
}

// NumStat is git's diffstat of dir against rev (as Patch), tracked files
// only.
func (g *Git) NumStat(ctx context.Context, dir, rev string) (DiffStat, error) {
	var d DiffStat
	if err := values("diff", rev); err != nil {
		return d, err
	}
	out, err := g.run(ctx, dir, "diff", "--numstat", "--no-renames", rev, "--")
	if err != nil {
		return d, fmt.Errorf("worktree: %w", err)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.SplitN(l, "\t", 3)
		if len(f) != 3 {
			continue
		}
		a, _ := strconv.Atoi(f[0])
		del, _ := strconv.Atoi(f[1])
		d.Files = append(d.Files, FileStat{Path: f[2], Added: a, Deleted: del})
		d.Insertions += a
		d.Deletions += del
	}
	return d, nil
}

// AddDetached checks commit out at dir, a new worktree of g's repository
// with a detached HEAD (tai's scratch space: a worker's attempt, an
// answerer's view).
func (g *Git) AddDetached(ctx context.Context, dir, commit string) error {
	if err := values("worktree add", dir, commit); err != nil {
		return err
	}
	if _, err := g.run(ctx, g.Repo, "worktree", "add", "--detach", "--force", dir, commit); err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	return nil
}

// RemoveWorktree removes the scratch worktree at dir, whatever state it is
// in (locked, half made, with changes), and its registration.
func (g *Git) RemoveWorktree(ctx context.Context, dir string) error {
	if err := values("worktree remove", dir); err != nil {
		return err
	}
	_, _ = g.run(ctx, g.Repo, "worktree", "unlock", dir)
	_, _ = g.run(ctx, g.Repo, "worktree", "remove", "--force", "--force", dir)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	if _, err := g.run(ctx, g.Repo, "worktree", "prune"); err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	return nil
}

// RemoteURL is the URL of the remote name of the repository at dir.
func (g *Git) RemoteURL(ctx context.Context, dir, name string) (string, error) {
	if err := values("remote get-url", name); err != nil {
		return "", err
	}
	out, err := g.run(ctx, dir, "remote", "get-url", name)
	if err != nil {
		return "", fmt.Errorf("worktree: %w", err)
	}
	return strings.TrimSpace(out), nil
}

// ConfigList is `git config --list -z` as git would read it in dir with
// the global options place (--git-dir=..., --work-tree=...: where a
// command line puts the repository). Reading config runs nothing.
func (g *Git) ConfigList(ctx context.Context, dir string, place ...string) (string, error) {
	for _, p := range place {
		if !strings.HasPrefix(p, "--git-dir=") && !strings.HasPrefix(p, "--work-tree=") {
			return "", fmt.Errorf("worktree: git config: %q is not --git-dir= or --work-tree=: %w", p, ErrOption)
		}
	}
	out, err := g.run(ctx, dir, append(place[:len(place):len(place)], "config", "--list", "-z")...)
	if err != nil {
		return "", fmt.Errorf("worktree: %w", err)
	}
	return out, nil
}

// SetBranch points branch at commit, whatever it pointed at.
func (m *Manager) SetBranch(ctx context.Context, branch, commit string) error {
	if err := values("update-ref", branch, commit); err != nil {
		return err
	}
	if _, err := m.git(ctx, m.Repo, "update-ref", "refs/heads/"+branch, commit); err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	return nil
}

// History is `git log --format=format rng` in the repository.
func (m *Manager) History(ctx context.Context, format, rng string) (string, error) {
	if err := values("log", rng); err != nil {
		return "", err
	}
	out, err := m.git(ctx, m.Repo, "log", "--format="+format, rng, "--")
	if err != nil {
		return "", fmt.Errorf("worktree: %w", err)
	}
	return out, nil
}
