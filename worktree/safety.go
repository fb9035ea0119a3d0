package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gofrs/flock"
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

// Info is one worktree as `tai worktree list` shows it.
type Info struct {
	Record
	Registered bool   `json:"registered"`
	DirExists  bool   `json:"dir_exists"`
	GitLocked  bool   `json:"git_locked"`
	InUse      bool   `json:"in_use"`
	Dirty      bool   `json:"dirty"`
	Unmerged   int    `json:"unmerged_commits"`
	State      string `json:"state"` // in-use | active | merged | unmerged | dirty | orphan-dir | missing-dir | no-branch
}

// List returns tai's worktrees: every record, every registered worktree on
// a tai/ branch or under Root, and every directory under Root.
func (m *Manager) List(ctx context.Context) ([]Info, error) {
	regs, err := m.listRegistered(ctx)
	if err != nil {
		return nil, err
	}
	byPath := map[string]*Info{}
	add := func(r Record) *Info {
		if i, ok := byPath[r.Path]; ok {
			return i
		}
		i := &Info{Record: r}
		byPath[r.Path] = i
		return i
	}
	recRoot := filepath.Join(m.CommonDir, "tai", "worktrees")
	runs, _ := os.ReadDir(recRoot)
	for _, run := range runs {
		files, _ := os.ReadDir(filepath.Join(recRoot, run.Name()))
		for _, f := range files {
			if task, ok := strings.CutSuffix(f.Name(), ".json"); ok && !strings.HasPrefix(f.Name(), ".") {
				if r, err := m.readRecord(run.Name(), task); err == nil {
					add(r)
				}
			}
		}
	}
	for p, reg := range regs {
		br := strings.TrimPrefix(reg.Branch, "refs/heads/")
		if !strings.HasPrefix(p, m.Root+string(filepath.Separator)) && !strings.HasPrefix(br, BranchPrefix) {
			continue
		}
		run, task := runTask(m.Root, p)
		add(Record{Run: run, Task: task, Branch: br, Path: p})
	}
	dirs, _ := os.ReadDir(m.Root)
	for _, run := range dirs {
		tasks, _ := os.ReadDir(filepath.Join(m.Root, run.Name()))
		for _, t := range tasks {
			if t.IsDir() {
				p := filepath.Join(m.Root, run.Name(), t.Name())
				add(Record{Run: run.Name(), Task: t.Name(), Branch: Branch(run.Name(), t.Name()), Path: p})
			}
		}
	}
	var list []Info
	for p, i := range byPath {
		reg, ok := regs[p]
		i.Registered, i.GitLocked = ok, ok && reg.Locked
		_, err := os.Stat(p)
		i.DirExists = err == nil
		i.InUse = ValidName(i.Run) && ValidName(i.Task) && m.inUse(i.Run, i.Task)
		if i.DirExists && i.Registered {
			var err error
			if i.Dirty, err = m.Dirty(ctx, p); err != nil {
				i.Dirty = true // when in doubt (a rewritten .git), keep it
			}
		}
		hasBranch := i.Branch != "" && m.branchExists(ctx, i.Branch)
		if hasBranch {
			left, err := m.Unmerged(ctx, i.Branch, m.targets(ctx, i.Record, nil))
			if err != nil {
				return nil, err
			}
			i.Unmerged = len(left)
		}
		switch {
		case i.InUse:
			i.State = "in-use"
		case i.DirExists && !i.Registered:
			i.State = "orphan-dir"
		case i.Registered && !i.DirExists:
			i.State = "missing-dir"
		case i.Dirty:
			i.State = "dirty"
		case !hasBranch:
			i.State = "no-branch"
		case i.Unmerged > 0:
			i.State = "unmerged"
		default:
			i.State = "merged"
		}
		list = append(list, *i)
	}
	sort.Slice(list, func(a, b int) bool { return list[a].Path < list[b].Path })
	return list, nil
}

func runTask(root, p string) (string, string) {
	rel, err := filepath.Rel(root, p)
	if err != nil || strings.HasPrefix(rel, "..") {
		return "", filepath.Base(p)
	}
	run, task, _ := strings.Cut(rel, string(filepath.Separator))
	return run, task
}

// GCOptions tune GC.
type GCOptions struct {
	DryRun bool
	// Force also removes dirty worktrees and unmerged branches (never one in use).
	Force bool
	// OlderThan keeps worktrees created more recently (0 = any age).
	OlderThan time.Duration
	Targets   []string
}

// GCAction is what GC did (or, dry, would do) with one worktree.
type GCAction struct {
	Path   string `json:"path"`
	Branch string `json:"branch"`
	Action string `json:"action"` // remove | keep | prune
	Reason string `json:"reason"`
}

// GC removes tai's worktrees whose work is safe elsewhere: merged (also by
// squash) or pushed, clean and not in use. Registrations whose directory
// is gone are pruned.
func (m *Manager) GC(ctx context.Context, o GCOptions) ([]GCAction, error) {
	list, err := m.List(ctx)
	if err != nil {
		return nil, err
	}
	var acts []GCAction
	for _, i := range list {
		a := GCAction{Path: i.Path, Branch: i.Branch, Action: "keep"}
		switch {
		case i.InUse:
			a.Reason = fmt.Sprintf("in use (pid %d)", i.Owner.PID)
		case o.OlderThan > 0 && !i.Created.IsZero() && m.Clock.Since(i.Created) < o.OlderThan:
			a.Reason = "younger than " + o.OlderThan.String()
		case i.State == "dirty" && !o.Force:
			a.Reason = "uncommitted changes (use --force)"
		case i.State == "orphan-dir" && !o.Force:
			a.Reason = "directory unknown to git, may hold uncommitted work (use --force)"
		case i.Unmerged > 0 && !o.Force:
			a.Reason = fmt.Sprintf("%d commit(s) neither merged nor pushed (use --force)", i.Unmerged)
		default:
			a.Action = "remove"
			a.Reason = i.State
			if o.Force && (i.Unmerged > 0 || i.Dirty) {
				a.Reason += " (forced)"
			}
		}
		if a.Action == "remove" && !o.DryRun {
			if err := m.Remove(ctx, i.Record, RemoveOptions{Force: o.Force, Targets: o.Targets}); err != nil {
				if errors.Is(err, ErrInUse) || errors.Is(err, ErrUnmerged) || errors.Is(err, ErrDirty) {
					a.Action, a.Reason = "keep", err.Error()
				} else {
					return acts, err
				}
			}
		}
		acts = append(acts, a)
	}
	if !o.DryRun {
		if _, err := m.git(ctx, m.Repo, "worktree", "prune"); err != nil {
			return acts, fmt.Errorf("worktree: %w", err)
		}
	}
	return acts, nil
}

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
// on one target take turns.
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
	return func() { _ = lk.Unlock() }, nil
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
// worktree is as it was.
func (m *Manager) Integrate(ctx context.Context, rec Record, target string, check func(ctx context.Context, dir string) error) (string, error) {
	if p, ok, err := m.CheckedOut(ctx, target); err != nil {
		return "", err
	} else if ok {
		return "", fmt.Errorf("worktree: target branch %s is checked out in %s; tai never moves a checked-out branch (use another target)", target, p)
	}
	// The worktree's .git is checked before anything else runs in it.
	if _, err := m.worktreeGitDir(rec.Path); err != nil {
		return "", err
	}
	unlock, err := m.targetLock(ctx, target)
	if err != nil {
		return "", err
	}
	defer unlock()
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
