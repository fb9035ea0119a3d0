// Package worktree creates, locks, inspects and removes the git worktrees
// tai's agents work in, safely.
//
// # Names
//
// A worktree for task T of run R lives on branch tai/R/T at
// <repo>/.tai/worktrees/R/T. The path is inside the repository on purpose:
// it is on the same filesystem (git links objects instead of copying), it is
// found by anyone who looks at the repository, it is stable (agents such as
// Claude Code key their history by cwd, so a moved worktree would orphan
// it), and "/.tai/" is added to .git/info/exclude so the user's checkout does
// not show it as untracked. tai's own records (base commit, owner, target)
// live in the git common directory, <git-dir>/tai/worktrees/R/T.json, so they
// survive the worktree directory being deleted by hand.
//
// # Safety
//
//   - A worktree in use is `git worktree lock`ed (so `git worktree prune`
//     and other tools leave it alone) and holds a cross-process flock
//     (<git-dir>/tai/locks/R/T.lock); the kernel drops the flock when its
//     process dies, even by SIGKILL, which is how "in use" is told from
//     "left locked by a crash".
//   - A branch is never deleted while it holds a commit that is neither
//     reachable from a target branch or a remote-tracking branch, nor in a
//     target exactly (the same blobs at every path it changed, or a target
//     commit with the very same change: whitespace counts, unlike git
//     cherry's patch ids). Remove and GC refuse such a branch without
//     Force, and never touch a worktree in use.
//   - Orphans are reconciled: a registration whose directory is gone is
//     pruned; a directory without registration is moved aside (never
//     deleted) when a worktree must be created in its place.
//   - Every git command runs as git -C <dir> from the repository's top level,
//     after checking that <dir> exists: never from a deleted directory. In a
//     linked worktree it runs only after checking that its .git names the
//     gitdir git registered for it, and with that gitdir given explicitly;
//     always with a fixed environment and with the config keys that run
//     commands (fsmonitor, hooks, pager, editor, external diff, textconv,
//     credential helpers, ssh) turned off: agents write in these
//     repositories.
//   - Other packages run git only through the named operations of Git
//     and Manager (clone, fetch, push, checkpoint, squash, diff, ...):
//     Git's run is unexported, so none composes a git command line.
//   - A git worktree add is journaled: the next Create removes what a
//     killed tai's add left half made (journal.go).
//   - Changes to the set of worktrees (add, lock, unlock, prune, remove)
//     and reads of it are serialised per repository, across processes.
package worktree

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/quartz"
	"github.com/gofrs/flock"

	"github.com/tai-dev/tai/internal/atomicfile"
)

// testHook, when set by a test, is called at named points of an operation
// (to interleave another process's change deterministically).
var testHook func(point string)

// BranchPrefix starts every branch tai creates.
const BranchPrefix = "tai/"

// ErrInUse is returned for a worktree another live process (or this one)
// holds.
var ErrInUse = errors.New("worktree in use")

// ErrUnmerged is returned when removing a branch would lose commits.
var ErrUnmerged = errors.New("branch has commits that are neither merged nor pushed")

// ErrDirty is returned when removing a worktree would lose uncommitted changes.
var ErrDirty = errors.New("worktree has uncommitted changes")

// Owner says who created a worktree.
type Owner struct {
	PID     int    `json:"pid"`
	Host    string `json:"host,omitempty"`
	Command string `json:"command,omitempty"` // e.g. "tai fleet run plan.yaml"
}

// Record is what tai keeps about a worktree it made.
type Record struct {
	Run     string    `json:"run"`
	Task    string    `json:"task"`
	Branch  string    `json:"branch"`
	Path    string    `json:"path"`
	Base    string    `json:"base"`             // commit the branch started from
	Target  string    `json:"target,omitempty"` // branch it is meant to be merged into
	Owner   Owner     `json:"owner"`
	Created time.Time `json:"created"`
}

// Manager manages tai's worktrees of one repository. It is safe for
// concurrent use.
type Manager struct {
	Repo      string // top level of the main worktree
	CommonDir string // the git common directory
	Root      string // where worktrees go: <Repo>/.tai/worktrees
	Clock     quartz.Clock
	Log       *slog.Logger // what tai undid after a kill; nil: nowhere

	identity  []string // -c user.name/-c user.email when the repo has none
	runner    *Git     // runs every git command, once Open found the repository
	netOnce   sync.Once
	netRunner *Git // runner that may also fetch and push

	mu          sync.Mutex
	paths       map[string]*sync.Mutex
	versionOnce sync.Once
	mergeTree   bool        // git has merge-tree --write-tree
	noAddReason atomic.Bool // git's worktree add has no --reason (before 2.35)

	repoMu sync.Mutex // with <git-dir>/tai/repo.lock: one change to the repo's worktree set at a time
}

func (m *Manager) logger() *slog.Logger {
	if m.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return m.Log
}

// lockRepo serialises changes to the repository's shared state (worktree
// registrations, branches, info/exclude) across goroutines and processes:
// git itself does not make `worktree add` safe against a concurrent
// `worktree prune` or a concurrent read-modify-write of info/exclude.
func (m *Manager) lockRepo(ctx context.Context) (func(), error) {
	m.repoMu.Lock()
	path := filepath.Join(m.CommonDir, "tai", "repo.lock")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		m.repoMu.Unlock()
		return nil, fmt.Errorf("worktree: %w", err)
	}
	lk := flock.New(path)
	if _, err := lk.TryLockContext(ctx, 10*time.Millisecond); err != nil {
		m.repoMu.Unlock()
		return nil, fmt.Errorf("worktree: locking %s: %w", path, err)
	}
	return func() {
		_ = lk.Unlock()
		m.repoMu.Unlock()
	}, nil
}

// Open finds the repository containing dir.
func Open(ctx context.Context, dir string) (*Manager, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("worktree: %w", err)
	}
	m := &Manager{Repo: abs, Clock: quartz.NewReal(), paths: map[string]*sync.Mutex{}}
	out, err := m.git(ctx, abs, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return nil, fmt.Errorf("worktree: %s is not in a git repository: %w", abs, err)
	}
	m.CommonDir = strings.TrimSpace(out)
	bare, _ := m.git(ctx, abs, "rev-parse", "--is-bare-repository")
	if strings.TrimSpace(bare) == "true" {
		return nil, fmt.Errorf("worktree: %s is a bare repository", abs)
	}
	// The main worktree is the common dir's parent (…/.git).
	m.Repo = filepath.Dir(m.CommonDir)
	if filepath.Base(m.CommonDir) != ".git" {
		top, err := m.git(ctx, abs, "rev-parse", "--show-toplevel")
		if err != nil {
			return nil, fmt.Errorf("worktree: %w", err)
		}
		m.Repo = strings.TrimSpace(top)
	}
	m.Root = filepath.Join(m.Repo, ".tai", "worktrees")
	m.runner = &Git{Repo: m.Repo, CommonDir: m.CommonDir, AgentRoots: []string{m.Root}}
	if v, _ := m.git(ctx, m.Repo, "config", "user.email"); strings.TrimSpace(v) == "" {
		m.identity = []string{"-c", "user.name=tai", "-c", "user.email=tai@localhost"}
	}
	return m, nil
}

// ValidName reports whether s can be a run or task name: it becomes a path
// element and a branch name component. It is what
// ^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$ says, checked by hand: that expression
// compiles to a hundred states on every start of tai.
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > 100 || !nameByte(s[0], false) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !nameByte(s[i], true) {
			return false
		}
	}
	return !strings.Contains(s, "..") && !strings.HasSuffix(s, ".lock") && !strings.HasSuffix(s, ".")
}

func nameByte(c byte, inner bool) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	case inner:
		return c == '_' || c == '.' || c == '-'
	}
	return false
}

// Branch is the branch of task's worktree in run.
func Branch(run, task string) string { return BranchPrefix + run + "/" + task }

// Path is the directory of task's worktree in run.
func (m *Manager) Path(run, task string) string { return filepath.Join(m.Root, run, task) }

func (m *Manager) recordPath(run, task string) string {
	return filepath.Join(m.CommonDir, "tai", "worktrees", run, task+".json")
}

func (m *Manager) lockPath(run, task string) string {
	return filepath.Join(m.CommonDir, "tai", "locks", run, task+".lock")
}

// pathMu serialises this process's operations on one worktree.
func (m *Manager) pathMu(p string) *sync.Mutex {
	m.mu.Lock()
	defer m.mu.Unlock()
	mu, ok := m.paths[p]
	if !ok {
		mu = &sync.Mutex{}
		m.paths[p] = mu
	}
	return mu
}

// Handle is a worktree held by this process. Release it when done.
type Handle struct {
	Record
	m    *Manager
	lock *flock.Flock
	once sync.Once
}

// Release unlocks the worktree (git and flock). The worktree and its branch
// stay.
func (h *Handle) Release(ctx context.Context) error {
	var err error
	h.once.Do(func() {
		if _, statErr := os.Stat(h.Path); statErr == nil {
			// Under the repository lock: git's unlock deletes the file a
			// concurrent `worktree list` is reading.
			unlock, e := h.m.lockRepo(ctx)
			if e != nil {
				err = e
			} else {
				if _, e := h.m.git(ctx, h.m.Repo, "worktree", "unlock", h.Path); e != nil && !strings.Contains(e.Error(), "not locked") {
					err = fmt.Errorf("worktree unlock: %w", e)
				}
				unlock()
			}
		}
		if e := h.lock.Unlock(); e != nil && err == nil {
			err = fmt.Errorf("worktree flock: %w", e)
		}
	})
	return err
}

// Create makes (or, for a run being resumed, takes back) the worktree of
// task in run, on a new branch from base (a commit-ish), and locks it.
// target is recorded as the branch the work is meant for (may be "").
func (m *Manager) Create(ctx context.Context, run, task, base, target string, owner Owner) (*Handle, error) {
	if !ValidName(run) || !ValidName(task) {
		return nil, fmt.Errorf("worktree: invalid run or task name %q/%q", run, task)
	}
	path, branch := m.Path(run, task), Branch(run, task)
	mu := m.pathMu(path)
	mu.Lock()
	defer mu.Unlock()
	unlock, err := m.lockRepo(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()

	if err := m.ensureExcluded(); err != nil {
		return nil, err
	}
	lk, err := m.tryLock(run, task)
	if err != nil {
		return nil, err
	}
	h := &Handle{m: m, lock: lk}
	ok := false
	defer func() {
		if !ok {
			_ = lk.Unlock()
		}
	}()
	if err := m.recoverAdd(run, task); err != nil {
		return nil, err
	}

	_, statErr := os.Stat(path)
	dirExists := statErr == nil
	rec, recErr := m.readRecord(run, task)
	reason := fmt.Sprintf("tai run %s task %s (pid %d)", run, task, owner.PID)
	if !dirExists && recErr != nil {
		fresh, made, err := m.createFresh(ctx, run, task, base, target, reason, owner)
		if err != nil {
			return nil, err
		}
		if made {
			h.Record = fresh
			ok = true
			return h, nil
		}
	}
	regs, err := m.registered(ctx)
	if err != nil {
		return nil, err
	}
	reg, isReg := regs[path]

	switch {
	case isReg && dirExists:
		// Resuming: the worktree is there; keep it and its partial work,
		// but not a merge of a tai killed in it (which detached HEAD).
		if gd, err := m.worktreeGitDir(path); err == nil {
			if _, err := m.recoverWorktree(ctx, path, gd, branch); err != nil {
				return nil, err
			}
		}
		if reg.Branch != "refs/heads/"+branch {
			// HEAD detached by the merge just undone, or moved by the agent
			// (a branch of its own, a checkout of a commit) before tai was
			// stopped. Reattach looks at HEAD as it is now.
			if _, err := m.Reattach(ctx, path, branch); err != nil {
				return nil, err
			}
		}
	case isReg && !dirExists:
		// Registered but the directory is gone: prune the registration.
		if _, err := m.git(ctx, m.Repo, "worktree", "unlock", path); err != nil && !strings.Contains(err.Error(), "not locked") {
			return nil, fmt.Errorf("worktree: %w", err)
		}
		if _, err := m.git(ctx, m.Repo, "worktree", "prune"); err != nil {
			return nil, fmt.Errorf("worktree: %w", err)
		}
		isReg = false
	case !isReg && dirExists:
		// A directory git does not know: move it aside, never delete it.
		aside := fmt.Sprintf("%s.orphan-%d", path, m.Clock.Now().UnixNano())
		if err := os.Rename(path, aside); err != nil {
			return nil, fmt.Errorf("worktree: moving the orphan directory %s aside: %w", path, err)
		}
	}
	// The base is resolved once, and that one commit both starts the
	// branch and is recorded: resolving it again later would see a target
	// other tasks have moved on since, and every diff against it would
	// show their files.
	sha, err := m.RevParse(ctx, base)
	if err != nil {
		return nil, err
	}
	if !isReg {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("worktree: %w", err)
		}
		exists := m.branchExists(ctx, branch)
		if exists {
			// The branch survived its directory: check it out again, with
			// its commits.
			if err := m.addWorktree(ctx, run, task, path, branch); err != nil {
				return nil, err
			}
		} else {
			if err := m.addWorktree(ctx, run, task, "-b", branch, path, sha); err != nil {
				return nil, err
			}
			recErr = os.ErrNotExist
		}
	}
	if testHook != nil {
		testHook("created")
	}
	if recErr != nil {
		if m.branchExists(ctx, branch) {
			// A branch without its record: it started where it meets base.
			if mb, err := m.git(ctx, m.Repo, "merge-base", sha, "refs/heads/"+branch); err == nil {
				sha = strings.TrimSpace(mb)
			}
		}
		rec = m.newRecord(run, task, sha, target, owner)
	} else {
		rec.Owner = owner
	}
	if err := m.writeRecord(rec); err != nil {
		return nil, err
	}
	// A crash may have left it locked; lock it again with our reason.
	_, _ = m.git(ctx, m.Repo, "worktree", "unlock", path)
	if _, err := m.git(ctx, m.Repo, "worktree", "lock", "--reason", reason, path); err != nil {
		return nil, fmt.Errorf("worktree: %w", err)
	}
	h.Record = rec
	ok = true
	return h, nil
}

// createFresh is Create's path for a task that has nothing yet (no
// directory, no record), in one git process: `worktree add --lock
// --reason -b` makes the branch at base (with no upstream, as when the
// general path names the commit), checks it out and locks it, and the
// branch's new ref is the base recorded. Anything else (the path is
// still registered, the branch survived, base does not resolve, a git
// without --reason) makes the add fail and changes nothing, and Create
// takes the general path, which sorts each case out. Past the add, a
// failure is Create's, as on the general path.
func (m *Manager) createFresh(ctx context.Context, run, task, base, target, reason string, owner Owner) (Record, bool, error) {
	var rec Record
	path, branch := m.Path(run, task), Branch(run, task)
	if m.noAddReason.Load() || strings.HasPrefix(base, "-") {
		return rec, false, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return rec, false, fmt.Errorf("worktree: %w", err)
	}
	if err := m.addWorktree(ctx, run, task, "-q", "--no-track", "--lock", "--reason", reason, "-b", branch, path, base); err != nil {
		var ge *GitError
		if errors.As(err, &ge) && strings.Contains(ge.Stderr, "reason") && strings.Contains(ge.Stderr, "unknown") {
			m.noAddReason.Store(true) // before git 2.35
		}
		return rec, false, nil
	}
	if testHook != nil {
		testHook("created")
	}
	sha, err := m.branchHead(ctx, branch)
	if err != nil {
		return rec, false, err
	}
	rec = m.newRecord(run, task, sha, target, owner)
	if err := m.writeRecord(rec); err != nil {
		return rec, false, err
	}
	return rec, true, nil
}

// newRecord is a new task's record: base is the commit its branch
// started at; the owner's host is this one unless given.
func (m *Manager) newRecord(run, task, base, target string, owner Owner) Record {
	if owner.Host == "" {
		owner.Host, _ = os.Hostname()
	}
	return Record{Run: run, Task: task, Branch: Branch(run, task), Path: m.Path(run, task), Base: base, Target: target,
		Owner: owner, Created: m.Clock.Now().UTC()}
}

// branchHead is the commit a branch points at: read from its loose ref
// (where `worktree add -b` just wrote it), else asked of git (packed
// refs, reftable).
func (m *Manager) branchHead(ctx context.Context, branch string) (string, error) {
	if b, err := os.ReadFile(filepath.Join(m.CommonDir, "refs", "heads", filepath.FromSlash(branch))); err == nil {
		if id := strings.TrimSpace(string(b)); isObjectID(id) {
			return id, nil
		}
	}
	return m.RevParse(ctx, "refs/heads/"+branch)
}

// isObjectID reports whether s is a full SHA-1 or SHA-256 object id.
func isObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func (m *Manager) tryLock(run, task string) (*flock.Flock, error) {
	p := m.lockPath(run, task)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("worktree: %w", err)
	}
	lk := flock.New(p)
	got, err := lk.TryLock()
	if err != nil {
		return nil, fmt.Errorf("worktree: lock %s: %w", p, err)
	}
	if !got {
		return nil, fmt.Errorf("worktree %s/%s: %w by another process", run, task, ErrInUse)
	}
	return lk, nil
}

// inUse reports whether a process holds the worktree's flock.
func (m *Manager) inUse(run, task string) bool {
	lk := flock.New(m.lockPath(run, task))
	got, err := lk.TryLock()
	if err != nil || !got {
		return err == nil
	}
	_ = lk.Unlock()
	return false
}

// ensureExcluded keeps .tai/ out of the user's `git status`.
func (m *Manager) ensureExcluded() error {
	p := filepath.Join(m.CommonDir, "info", "exclude")
	b, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("worktree: %w", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) == "/.tai/" {
			return nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	prefix := ""
	if len(b) > 0 && !strings.HasSuffix(string(b), "\n") {
		prefix = "\n"
	}
	_, err = f.WriteString(prefix + "# tai's worktrees\n/.tai/\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	return nil
}

// Lookup returns tai's record of task's worktree in run.
func (m *Manager) Lookup(run, task string) (Record, error) { return m.readRecord(run, task) }

// HasCommits reports whether the repository's HEAD is a commit (a new
// repository has none until the first commit).
func (m *Manager) HasCommits(ctx context.Context) bool {
	_, err := m.git(ctx, m.Repo, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	return err == nil
}

// IsAncestor reports whether commit a is an ancestor of (or equal to) b.
func (m *Manager) IsAncestor(ctx context.Context, a, b string) bool {
	_, err := m.git(ctx, m.Repo, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

func (m *Manager) readRecord(run, task string) (Record, error) {
	b, err := os.ReadFile(m.recordPath(run, task))
	if err != nil {
		return Record{}, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("worktree record %s: %w", m.recordPath(run, task), err)
	}
	return r, nil
}

func (m *Manager) writeRecord(r Record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	// Not fsynced: a record a crash of the machine left empty or old is
	// rebuilt from the branch by the next Create, like a missing one.
	return writeFile(atomicfile.Replace, m.recordPath(r.Run, r.Task), append(b, '\n'), 0o644)
}

// WriteFileAtomic writes data to path through a temporary file in the same
// directory, fsynced and renamed over path, then fsyncs the directory: a
// reader sees the old or the new content, never a mix, even after a crash.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return writeFile(atomicfile.Write, path, data, perm)
}

// writeFile makes path's directory and writes data with write.
func writeFile(write func(string, []byte, os.FileMode) error, path string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return write(path, data, perm)
}

// registration is one entry of `git worktree list --porcelain`.
type registration struct {
	Path     string
	Head     string
	Branch   string // refs/heads/...
	Locked   bool
	Prunable bool
}

// registered lists git's worktrees. Callers hold the repository lock
// (lockRepo), which keeps tai's own changes out; another program's may
// still race git's read of a worktree's files ("failed to read
// .git/worktrees/X/locked" when it is unlocked meanwhile), so such a
// transient failure is retried.
func (m *Manager) registered(ctx context.Context) (map[string]registration, error) {
	var out string
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		out, err = m.git(ctx, m.Repo, "worktree", "list", "--porcelain")
		var ge *GitError
		if err == nil || !errors.As(err, &ge) || !strings.Contains(ge.Stderr, "failed to read") || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("worktree: %w", err)
	}
	regs := map[string]registration{}
	var cur *registration
	flush := func() {
		if cur != nil {
			regs[cur.Path] = *cur
		}
		cur = nil
	}
	for _, line := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "worktree":
			flush()
			cur = &registration{Path: filepath.Clean(v)}
		case "HEAD":
			cur.Head = v
		case "branch":
			cur.Branch = v
		case "locked":
			cur.Locked = true
		case "prunable":
			cur.Prunable = true
		}
	}
	flush()
	return regs, nil
}

// CheckedOut returns the worktree where branch is checked out, if any.
func (m *Manager) CheckedOut(ctx context.Context, branch string) (string, bool, error) {
	unlock, err := m.lockRepo(ctx)
	if err != nil {
		return "", false, err
	}
	regs, err := m.registered(ctx)
	unlock()
	if err != nil {
		return "", false, err
	}
	for _, r := range regs {
		if r.Branch == "refs/heads/"+branch {
			return r.Path, true, nil
		}
	}
	return "", false, nil
}

func (m *Manager) branchExists(ctx context.Context, branch string) bool {
	_, err := m.git(ctx, m.Repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	return err == nil
}

// RevParse resolves rev to a commit id.
func (m *Manager) RevParse(ctx context.Context, rev string) (string, error) {
	out, err := m.git(ctx, m.Repo, "rev-parse", "--verify", rev+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("worktree: %w", err)
	}
	return strings.TrimSpace(out), nil
}

// CurrentBranch is the branch checked out in the main worktree ("" if
// detached).
func (m *Manager) CurrentBranch(ctx context.Context) string {
	out, err := m.git(ctx, m.Repo, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// EnsureBranch creates branch at rev if it does not exist. The create is
// atomic (update-ref with the zero id as the expected old value): of two
// fleets starting on one new target at once, one creates it and the other
// finds it made.
func (m *Manager) EnsureBranch(ctx context.Context, branch, rev string) error {
	if m.branchExists(ctx, branch) {
		return nil
	}
	sha, err := m.RevParse(ctx, rev)
	if err != nil {
		return err
	}
	if testHook != nil {
		testHook("ensure-branch")
	}
	if _, err := m.git(ctx, m.Repo, "update-ref", "-m", "tai: create "+branch, "refs/heads/"+branch, sha, zeroOID(sha)); err != nil {
		if m.branchExists(ctx, branch) {
			return nil // made by another process since we looked
		}
		return fmt.Errorf("worktree: %w", err)
	}
	return nil
}

// zeroOID is the all-zero object id of sha's length (SHA-1 or SHA-256).
func zeroOID(sha string) string { return strings.Repeat("0", len(sha)) }

// Commit stages everything in the worktree at dir and commits it. It
// returns the new HEAD and whether a commit was made. The caller holds
// the worktree: a Commit killed half-way (git add on a big tree takes a
// while) leaves the index lock, which the next Create removes.
func (m *Manager) Commit(ctx context.Context, dir, message string) (string, bool, error) {
	gd, err := m.worktreeGitDir(dir)
	if err != nil {
		return "", false, err
	}
	if err := beginWorktree(gd, opCommit, ""); err != nil {
		return "", false, err
	}
	defer endWorktree(gd, opCommit)
	if _, err := m.Git().AddAll(ctx, dir); err != nil {
		return "", false, fmt.Errorf("worktree: %w", err)
	}
	made := false
	if _, err := m.git(ctx, dir, "diff", "--cached", "--quiet"); err != nil {
		if exitCode(err) != 1 {
			return "", false, fmt.Errorf("worktree: %w", err)
		}
		args := append(append([]string{}, m.identity...), "commit", "--no-verify", "-q", "-m", message)
		if _, err := m.git(ctx, dir, args...); err != nil {
			return "", false, fmt.Errorf("worktree: %w", err)
		}
		made = true
	}
	head, err := m.RevParseIn(ctx, dir, "HEAD")
	return head, made, err
}

// ResetHard sets the worktree at dir, index and files, to rev, as `git
// reset --hard` does. The caller holds the worktree: a reset killed
// half-way leaves the index lock, which the next Create removes.
func (m *Manager) ResetHard(ctx context.Context, dir, rev string) error {
	gd, err := m.worktreeGitDir(dir)
	if err != nil {
		return err
	}
	if err := beginWorktree(gd, opReset, ""); err != nil {
		return err
	}
	defer endWorktree(gd, opReset)
	if _, err := m.git(ctx, dir, "reset", "-q", "--hard", rev); err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	return nil
}

// RevParseIn resolves rev in the worktree at dir.
func (m *Manager) RevParseIn(ctx context.Context, dir, rev string) (string, error) {
	out, err := m.git(ctx, dir, "rev-parse", "--verify", rev+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("worktree: %w", err)
	}
	return strings.TrimSpace(out), nil
}

// FileStat is one file's change.
type FileStat struct {
	Path    string `json:"path"`
	Added   int    `json:"added"`
	Deleted int    `json:"deleted"`
}

// DiffStat is a worktree's change against its base.
type DiffStat struct {
	Files      []FileStat `json:"files"`
	Insertions int        `json:"insertions"`
	Deletions  int        `json:"deletions"`
}

// Summary is "3 files changed, +10 -2: a.go, b.go, c.go".
func (d DiffStat) Summary() string {
	if len(d.Files) == 0 {
		return "no changes"
	}
	names := make([]string, 0, len(d.Files))
	for _, f := range d.Files {
		names = append(names, f.Path)
	}
	return fmt.Sprintf("%d file(s) changed, +%d -%d: %s", len(d.Files), d.Insertions, d.Deletions, strings.Join(names, ", "))
}

// Diff returns the change of the worktree at dir (committed, staged,
// unstaged and untracked) against base.
func (m *Manager) Diff(ctx context.Context, dir, base string) (DiffStat, error) {
	d, err := m.Git().NumStat(ctx, dir, base)
	if err != nil {
		return d, err
	}
	out, err := m.git(ctx, dir, "ls-files", "--others", "--exclude-standard")
	if err != nil {
		return d, fmt.Errorf("worktree: %w", err)
	}
	for _, p := range strings.Fields(out) {
		n := 0
		if b, err := os.ReadFile(filepath.Join(dir, p)); err == nil {
			n = strings.Count(string(b), "\n")
		}
		d.Files = append(d.Files, FileStat{Path: p, Added: n})
		d.Insertions += n
	}
	return d, nil
}

// Patch returns the unified diff of the worktree at dir against base,
// cut to max bytes (0 = no cut).
func (m *Manager) Patch(ctx context.Context, dir, base string, max int) (string, error) {
	return m.Git().Patch(ctx, dir, base, max)
}

// WorkDiff is what was done in the worktree at dir since base (Git.WorkDiff).
func (m *Manager) WorkDiff(ctx context.Context, dir, base string, max int) (string, error) {
	return m.Git().WorkDiff(ctx, dir, base, max)
}

// Dirty reports whether the worktree at dir has uncommitted changes.
func (m *Manager) Dirty(ctx context.Context, dir string) (bool, error) {
	out, err := m.git(ctx, dir, "status", "--porcelain", "--untracked-files=normal")
	if err != nil {
		return false, fmt.Errorf("worktree: %w", err)
	}
	return strings.TrimSpace(out) != "", nil
}
