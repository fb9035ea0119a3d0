package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newRepo makes a repository with one commit on main.
func newRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	sh(t, dir, "git", "init", "-q", "-b", "main")
	sh(t, dir, "git", "config", "user.email", "t@example.com")
	sh(t, dir, "git", "config", "user.name", "T")
	write(t, filepath.Join(dir, "README"), "hello\n")
	sh(t, dir, "git", "add", "-A")
	sh(t, dir, "git", "commit", "-q", "-m", "init")
	return dir
}

func sh(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func open(t *testing.T, dir string) *Manager {
	t.Helper()
	m, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCreateNamesLockAndRecord(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	m := open(t, filepath.Join(repo))
	h, err := m.Create(ctx, "r1", "build", "HEAD", "main", Owner{PID: 42})
	if err != nil {
		t.Fatal(err)
	}
	if h.Branch != "tai/r1/build" || h.Path != filepath.Join(repo, ".tai", "worktrees", "r1", "build") {
		t.Fatalf("names: %+v", h.Record)
	}
	if h.Base != sh(t, repo, "git", "rev-parse", "HEAD") {
		t.Fatalf("base %s", h.Base)
	}
	// The user's checkout does not see .tai as untracked.
	if st := sh(t, repo, "git", "status", "--porcelain"); st != "" {
		t.Fatalf("status: %q", st)
	}
	// Locked for git, and held across processes.
	if out := sh(t, repo, "git", "worktree", "list", "--porcelain"); !strings.Contains(out, "locked tai run r1 task build") {
		t.Fatalf("not git-locked:\n%s", out)
	}
	if _, err := m.Create(ctx, "r1", "build", "HEAD", "main", Owner{PID: 43}); !errors.Is(err, ErrInUse) {
		t.Fatalf("second create: %v", err)
	}
	m2 := open(t, repo)
	if err := m2.Remove(ctx, h.Record, RemoveOptions{Force: true}); !errors.Is(err, ErrInUse) {
		t.Fatalf("remove in use even with force: %v", err)
	}
	write(t, filepath.Join(h.Path, "a.txt"), "one\ntwo\n")
	d, err := m.Diff(ctx, h.Path, h.Base)
	if err != nil || len(d.Files) != 1 || d.Insertions != 2 {
		t.Fatalf("diff %+v %v", d, err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Resume: the same worktree comes back with its partial work.
	h2, err := m2.Create(ctx, "r1", "build", "HEAD", "main", Owner{PID: 44})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(h2.Path, "a.txt")); err != nil || h2.Base != h.Base {
		t.Fatalf("partial work lost: %v %+v", err, h2.Record)
	}
	_ = h2.Release(ctx)
}

func TestOrphansReconciled(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		break_ func(t *testing.T, m *Manager, h *Handle)
		check  func(t *testing.T, m *Manager, h *Handle)
	}{
		{"directory deleted, registration left", func(t *testing.T, m *Manager, h *Handle) {
			if err := os.RemoveAll(h.Path); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, m *Manager, h *Handle) {
			// The branch and its commit survive.
			if _, err := os.Stat(filepath.Join(h.Path, "c.txt")); err != nil {
				t.Fatal("committed work lost")
			}
		}},
		{"directory and record deleted, registration left", func(t *testing.T, m *Manager, h *Handle) {
			if err := os.RemoveAll(h.Path); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(m.recordPath("r", "build")); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, m *Manager, h *Handle) {
			// The one-process add fails on the registration; the general
			// path prunes it and checks the surviving branch out again.
			if _, err := os.Stat(filepath.Join(h.Path, "c.txt")); err != nil {
				t.Fatal("committed work lost")
			}
			if rec, err := m.readRecord("r", "build"); err != nil || rec.Base != sh(t, m.Repo, "git", "rev-parse", "main") {
				t.Fatalf("record %+v, %v", rec, err)
			}
		}},
		{"registration deleted, directory left", func(t *testing.T, m *Manager, h *Handle) {
			write(t, filepath.Join(h.Path, "uncommitted.txt"), "keep me")
			_ = os.RemoveAll(filepath.Join(m.CommonDir, "worktrees", "build"))
		}, func(t *testing.T, m *Manager, h *Handle) {
			matches, _ := filepath.Glob(h.Path + ".orphan-*/uncommitted.txt")
			if len(matches) != 1 {
				t.Fatal("the orphan directory was not kept aside")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := newRepo(t)
			m := open(t, repo)
			h, err := m.Create(ctx, "r", "build", "HEAD", "main", Owner{})
			if err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(h.Path, "c.txt"), "c\n")
			if _, _, err := m.Commit(ctx, h.Path, "c"); err != nil {
				t.Fatal(err)
			}
			_ = h.Release(ctx)
			tt.break_(t, m, h)
			h2, err := m.Create(ctx, "r", "build", "HEAD", "main", Owner{})
			if err != nil {
				t.Fatal(err)
			}
			defer h2.Release(ctx)
			tt.check(t, m, h2)
		})
	}
}

func TestRemoveRefusesUnmergedAllowsSquash(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		land    func(t *testing.T, repo string, h *Handle) // what happens to the work
		force   bool
		wantErr error
	}{
		{"unmerged", func(t *testing.T, repo string, h *Handle) {}, false, ErrUnmerged},
		{"unmerged forced", func(t *testing.T, repo string, h *Handle) {}, true, nil},
		{"fast-forward merged", func(t *testing.T, repo string, h *Handle) {
			sh(t, repo, "git", "merge", "-q", "--ff-only", h.Branch)
		}, false, nil},
		{"squash merged", func(t *testing.T, repo string, h *Handle) {
			sh(t, repo, "git", "merge", "-q", "--squash", h.Branch)
			sh(t, repo, "git", "commit", "-q", "-m", "squashed")
		}, false, nil},
		{"cherry-picked", func(t *testing.T, repo string, h *Handle) {
			write(t, filepath.Join(repo, "other"), "x")
			sh(t, repo, "git", "add", "-A")
			sh(t, repo, "git", "commit", "-q", "-m", "moved on")
			sh(t, repo, "git", "cherry-pick", h.Branch+"~1")
			sh(t, repo, "git", "cherry-pick", h.Branch)
		}, false, nil},
		{"pushed", func(t *testing.T, repo string, h *Handle) {
			remote := t.TempDir()
			sh(t, remote, "git", "init", "-q", "--bare")
			sh(t, repo, "git", "remote", "add", "origin", remote)
			sh(t, repo, "git", "push", "-q", "origin", h.Branch)
		}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := newRepo(t)
			m := open(t, repo)
			h, err := m.Create(ctx, "r", "t1", "HEAD", "main", Owner{})
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range []string{"a", "b"} {
				write(t, filepath.Join(h.Path, s+".txt"), strings.Repeat(s+"\n", i+1))
				if _, _, err := m.Commit(ctx, h.Path, "add "+s); err != nil {
					t.Fatal(err)
				}
			}
			_ = h.Release(ctx)
			tt.land(t, repo, h)
			err = m.Remove(ctx, h.Record, RemoveOptions{Force: tt.force})
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			exists := m.branchExists(ctx, h.Branch)
			if exists != (tt.wantErr != nil) {
				t.Fatalf("branch exists = %v", exists)
			}
		})
	}
}

func TestGCDryRunAndList(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	m := open(t, repo)
	var hs []*Handle
	for _, task := range []string{"merged", "unmerged", "busy"} {
		h, err := m.Create(ctx, "r", task, "HEAD", "main", Owner{PID: 7})
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(h.Path, task+".txt"), task+"\n")
		if _, _, err := m.Commit(ctx, h.Path, task); err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	_ = hs[0].Release(ctx)
	_ = hs[1].Release(ctx)
	defer hs[2].Release(ctx)
	sh(t, repo, "git", "merge", "-q", "--squash", hs[0].Branch)
	sh(t, repo, "git", "commit", "-q", "-m", "squash merged")

	list, err := m.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, i := range list {
		states[i.Task] = i.State
	}
	want := map[string]string{"merged": "merged", "unmerged": "unmerged", "busy": "in-use"}
	for k, v := range want {
		if states[k] != v {
			t.Errorf("%s: state %q, want %q", k, states[k], v)
		}
	}
	for _, dry := range []bool{true, false} {
		acts, err := m.GC(ctx, GCOptions{DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, a := range acts {
			got[filepath.Base(a.Path)] = a.Action
		}
		if dry || got["merged"] != "" {
			if got["merged"] != "remove" || got["unmerged"] != "keep" || got["busy"] != "keep" {
				t.Fatalf("dry=%v: %+v", dry, acts)
			}
		}
		_, err = os.Stat(hs[0].Path)
		if dry != (err == nil) {
			t.Fatalf("dry=%v: merged worktree exists=%v", dry, err == nil)
		}
	}
	if !m.branchExists(ctx, hs[1].Branch) || !m.branchExists(ctx, hs[2].Branch) {
		t.Fatal("gc deleted work")
	}
}

func TestIntegrate(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	m := open(t, repo)
	if err := m.EnsureBranch(ctx, "integ", "HEAD"); err != nil {
		t.Fatal(err)
	}
	mk := func(task, file, content string) *Handle {
		h, err := m.Create(ctx, "r", task, "integ", "integ", Owner{})
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(h.Path, file), content)
		if _, _, err := m.Commit(ctx, h.Path, task); err != nil {
			t.Fatal(err)
		}
		return h
	}
	a, b, c := mk("a", "x.txt", "from a\n"), mk("b", "x.txt", "from b\n"), mk("c", "y.txt", "c\n")
	defer a.Release(ctx)
	defer b.Release(ctx)
	defer c.Release(ctx)
	if _, err := m.Integrate(ctx, a.Record, "integ", nil); err != nil {
		t.Fatal(err)
	}
	var ce *ConflictError
	if !m.MergeTreeSupported(ctx) {
		t.Fatal("this git has no merge-tree --write-tree (2.38+)")
	}
	reflog := sh(t, b.Path, "git", "reflog", "HEAD")
	if _, err := m.Integrate(ctx, b.Record, "integ", nil); !errors.As(err, &ce) || ce.Files[0] != "x.txt" {
		t.Fatalf("want conflict on x.txt, got %v", err)
	}
	// Found by the merge-tree pre-flight: b's worktree was never touched.
	if now := sh(t, b.Path, "git", "reflog", "HEAD"); now != reflog {
		t.Fatalf("the conflict check moved b's HEAD:\n%s", now)
	}
	if d, _ := m.Dirty(ctx, b.Path); d {
		t.Fatal("rebase not aborted")
	}
	checked := ""
	head, err := m.Integrate(ctx, c.Record, "integ", func(ctx context.Context, dir string) error { checked = dir; return nil })
	if err != nil || checked != c.Path {
		t.Fatal(err)
	}
	if got := sh(t, repo, "git", "rev-parse", "integ"); got != head {
		t.Fatal("target not moved")
	}
	if sh(t, repo, "git", "show", "integ:x.txt") != "from a" || sh(t, repo, "git", "show", "integ:y.txt") != "c" {
		t.Fatal("content")
	}
	// The user's checkout was not touched, and main cannot be a target.
	if st := sh(t, repo, "git", "status", "--porcelain"); st != "" {
		t.Fatal(st)
	}
	if _, err := m.Integrate(ctx, c.Record, "main", nil); err == nil || !strings.Contains(err.Error(), "checked out") {
		t.Fatalf("main: %v", err)
	}
}

// An agent that can only edit files in its worktree rewrites the
// worktree's .git to point at a gitdir it made, with core.fsmonitor set to
// a command: tai's git calls there refuse to run, and the command never
// runs. Config in the repository itself that would run a command is
// overridden.
func TestGitDirRedirectAndConfigCommandsRefused(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	m := open(t, repo)
	h, err := m.Create(ctx, "r", "t", "HEAD", "main", Owner{PID: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Release(ctx) }()
	marks := t.TempDir()
	plant := func(dir, marker string) {
		evil := filepath.Join(dir, "evil")
		write(t, filepath.Join(evil, "HEAD"), "ref: refs/heads/main\n")
		write(t, filepath.Join(evil, "config"), "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch "+marker+"\n")
		for _, d := range []string{"objects", "refs"} {
			if err := os.MkdirAll(filepath.Join(evil, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		write(t, filepath.Join(dir, ".git"), "gitdir: evil\n")
	}
	// The planted gitdir is a real attack: plain git in there runs it.
	control := t.TempDir()
	write(t, filepath.Join(control, "x"), "x\n")
	plant(control, filepath.Join(marks, "control"))
	cmd := exec.Command("git", "status", "--porcelain")
	cmd.Dir = control
	_ = cmd.Run()
	if _, err := os.Stat(filepath.Join(marks, "control")); err != nil {
		t.Fatalf("the planted fsmonitor did not run under plain git (the test proves nothing): %v", err)
	}

	marker := filepath.Join(marks, "pwned")
	write(t, filepath.Join(h.Path, "work.txt"), "work\n")
	plant(h.Path, marker)
	calls := map[string]func() error{
		"commit": func() error { _, _, err := m.Commit(ctx, h.Path, "x"); return err },
		"diff":   func() error { _, err := m.Diff(ctx, h.Path, h.Base); return err },
		"dirty":  func() error { _, err := m.Dirty(ctx, h.Path); return err },
		"patch":  func() error { _, err := m.Patch(ctx, h.Path, h.Base, 0); return err },
		"integrate": func() error {
			_, err := m.Integrate(ctx, h.Record, "main-copy", nil)
			return err
		},
	}
	sh(t, repo, "git", "branch", "main-copy", "main")
	for name, call := range calls {
		err := call()
		if !errors.Is(err, ErrGitDir) {
			t.Errorf("%s: err = %v, want ErrGitDir", name, err)
		}
		if err != nil && !strings.Contains(err.Error(), h.Path) {
			t.Errorf("%s: error does not name the worktree: %v", name, err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("tai's git ran the agent's fsmonitor command")
	}
	// gc keeps the tampered worktree (its state is unknown).
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	acts, err := m.GC(ctx, GCOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range acts {
		if a.Path == h.Path && a.Action != "keep" {
			t.Fatalf("gc %+v", a)
		}
	}

	// Commands in the repository's own config are off for tai's git.
	m2 := open(t, newRepo(t))
	h2, err := m2.Create(ctx, "r", "t", "HEAD", "main", Owner{PID: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h2.Release(ctx) }()
	cfgMarker := filepath.Join(marks, "config")
	sh(t, m2.Repo, "git", "config", "core.fsmonitor", "touch "+cfgMarker)
	sh(t, m2.Repo, "git", "config", "diff.external", "touch "+cfgMarker+";")
	write(t, filepath.Join(h2.Path, ".gitattributes"), "* diff=evil\n")
	sh(t, m2.Repo, "git", "config", "diff.evil.textconv", "touch "+cfgMarker+"; cat")
	sh(t, m2.Repo, "git", "config", "diff.evil.command", "touch "+cfgMarker)
	write(t, filepath.Join(h2.Path, "README"), "changed\n")
	if _, err := m2.Diff(ctx, h2.Path, h2.Base); err != nil {
		t.Fatal(err)
	}
	if _, err := m2.Patch(ctx, h2.Path, h2.Base, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m2.Commit(ctx, h2.Path, "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cfgMarker); err == nil {
		t.Fatal("tai's git ran a command from the repository's config")
	}
}

// commitOn adds a commit writing file=content on branch without a checkout
// (as another task's merge would), and returns it.
func commitOn(t *testing.T, repo, branch, file, content string) string {
	t.Helper()
	tmp := t.TempDir()
	idx := filepath.Join(tmp, "index")
	env := append(os.Environ(), "GIT_INDEX_FILE="+idx)
	runEnv := func(stdin string, args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = repo, env
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	runEnv("", "read-tree", "refs/heads/"+branch)
	blob := runEnv(content, "hash-object", "-w", "--stdin")
	runEnv("", "update-index", "--add", "--cacheinfo", "100644,"+blob+","+file)
	tree := runEnv("", "write-tree")
	c := runEnv("", "commit-tree", tree, "-p", "refs/heads/"+branch, "-m", "add "+file)
	runEnv("", "update-ref", "refs/heads/"+branch, c)
	return c
}

// The target moves (another task merged) between the worktree being made
// and its base being recorded: the recorded base is the commit the branch
// started from, so the diff shows only the task's own change.
func TestCreateRecordsTheBaseItStartedFrom(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	m := open(t, repo)
	sh(t, repo, "git", "branch", "target", "main")
	testHook = func(point string) {
		if point == "created" {
			commitOn(t, repo, "target", "other.txt", "another task's\n")
		}
	}
	defer func() { testHook = nil }()
	h, err := m.Create(ctx, "r", "x", "refs/heads/target", "target", Owner{PID: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Release(ctx) }()
	head := sh(t, h.Path, "git", "rev-parse", "HEAD")
	if h.Base != head {
		t.Fatalf("recorded base %s, but the worktree started at %s", h.Base, head)
	}
	write(t, filepath.Join(h.Path, "x.txt"), "x\n")
	d, err := m.Diff(ctx, h.Path, h.Base)
	if err != nil {
		t.Fatal(err)
	}
	if d.Summary() != "1 file(s) changed, +1 -0: x.txt" {
		t.Fatalf("diff shows other tasks' files: %s", d.Summary())
	}
}

// A branch whose only difference from the target is indentation is not
// merged (git cherry and patch-id would say it is): gc keeps it, and its
// commit stays reachable.
func TestUnmergedCountsWhitespace(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	m := open(t, repo)
	_, mine := createCommitted(t, m, "py", "p.py", "if x:\n    y()\n    z()\n")
	commitOn(t, repo, "main", "p.py", "if x:\n    y()\nz()\n")
	sh(t, repo, "git", "reset", "-q", "--hard")
	if out := sh(t, repo, "git", "cherry", "main", "tai/r/py"); !strings.HasPrefix(out, "-") {
		t.Fatalf("git cherry no longer ignores whitespace (%q): the test proves nothing", out)
	}
	left, err := m.Unmerged(ctx, "tai/r/py", []string{"main"})
	if err != nil || len(left) != 1 || left[0] != mine {
		t.Fatalf("unmerged = %v, %v; want [%s]", left, err, mine)
	}
	acts, err := m.GC(ctx, GCOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) != 1 || acts[0].Action != "keep" {
		t.Fatalf("gc: %+v", acts)
	}
	sh(t, repo, "git", "cat-file", "-e", mine)
	// The exact same content on main: merged, gc removes it.
	commitOn(t, repo, "main", "p.py", "if x:\n    y()\n    z()\n")
	if left, err := m.Unmerged(ctx, "tai/r/py", []string{"main"}); err != nil || len(left) != 0 {
		t.Fatalf("exact content on main: unmerged = %v, %v", left, err)
	}
}

// Two processes create one new target at once: both succeed, and the
// branch is where the first put it.
func TestEnsureBranchIsAtomic(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	m, other := open(t, repo), open(t, repo)
	first := sh(t, repo, "git", "rev-parse", "HEAD")
	second := commitOn(t, repo, "main", "b.txt", "b\n")
	testHook = func(point string) {
		if point == "ensure-branch" {
			testHook = nil
			if err := other.EnsureBranch(ctx, "tai-fleet/new", first); err != nil {
				t.Errorf("other: %v", err)
			}
		}
	}
	defer func() { testHook = nil }()
	if err := m.EnsureBranch(ctx, "tai-fleet/new", second); err != nil {
		t.Fatalf("the second creator failed: %v", err)
	}
	if got := sh(t, repo, "git", "rev-parse", "tai-fleet/new"); got != first {
		t.Fatalf("target moved to %s by the second creator, want %s", got, first)
	}
}

// Worktrees made, listed, locked and released from many goroutines and
// two managers (as two processes) at once: no git errors about the
// transient files of another's operation.
func TestConcurrentWorktreeOperations(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	ms := []*Manager{open(t, repo), open(t, repo)}
	errs := make(chan error, 64)
	done := make(chan struct{})
	for i := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			m := ms[i%2]
			for j := range 4 {
				h, err := m.Create(ctx, "c", fmt.Sprintf("t%d-%d", i, j), "HEAD", "main", Owner{PID: 1})
				if err != nil {
					errs <- err
					return
				}
				if _, _, err := m.CheckedOut(ctx, "main"); err != nil {
					errs <- err
				}
				if _, err := m.List(ctx); err != nil {
					errs <- err
				}
				if err := h.Release(ctx); err != nil {
					errs <- err
				}
			}
		}()
	}
	for range 8 {
		<-done
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Merges into one target from two processes take turns, and one that
// finds the target moved since its rebase rebases again.
func TestIntegrateQueuesBehindAnotherProcess(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	m, other := open(t, repo), open(t, repo)
	if err := m.EnsureBranch(ctx, "integ", "HEAD"); err != nil {
		t.Fatal(err)
	}
	var hs []*Handle
	for i, mm := range []*Manager{m, other} {
		h, err := mm.Create(ctx, "q", fmt.Sprintf("t%d", i), "integ", "integ", Owner{})
		if err != nil {
			t.Fatal(err)
		}
		defer h.Release(ctx)
		write(t, filepath.Join(h.Path, fmt.Sprintf("f%d.txt", i)), "x\n")
		if _, _, err := mm.Commit(ctx, h.Path, "c"); err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	// The other process's merge lands while ours is checking.
	moved := false
	check := func(ctx context.Context, dir string) error {
		if !moved {
			moved = true
			commitOn(t, repo, "integ", "outside.txt", "o\n")
		}
		return nil
	}
	if _, err := m.Integrate(ctx, hs[0].Record, "integ", check); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Integrate(ctx, hs[1].Record, "integ", nil); err != nil {
		t.Fatal(err)
	}
	files := sh(t, repo, "git", "ls-tree", "--name-only", "integ")
	for _, f := range []string{"f0.txt", "f1.txt", "outside.txt"} {
		if !strings.Contains(files, f) {
			t.Fatalf("%s missing from the target:\n%s", f, files)
		}
	}
}

// git's `worktree list` fails when another process unlocks a worktree
// while it reads it ("failed to read .git/worktrees/X/locked"): that
// transient state is retried, not reported. A git wrapper fails the first
// list exactly so.
func TestWorktreeListToleratesTransientLockFile(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	m := open(t, repo)
	h, err := m.Create(ctx, "r", "t09", "HEAD", "main", Owner{PID: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Release(ctx) }()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin, flag := t.TempDir(), filepath.Join(t.TempDir(), "failed-once")
	write(t, filepath.Join(bin, "git"), fmt.Sprintf(`#!/bin/sh
case "$*" in
*"worktree list"*)
	if [ ! -e %[1]s ]; then
		: > %[1]s
		echo "fatal: failed to read '.git/worktrees/t09/locked': No such file or directory" >&2
		exit 128
	fi;;
esac
exec %[2]s "$@"
`, flag, real))
	if err := os.Chmod(filepath.Join(bin, "git"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	list, err := m.List(ctx)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if _, err := os.Stat(flag); err != nil {
		t.Fatal("the wrapper was not used: the test proves nothing")
	}
	if len(list) != 1 || list[0].Task != "t09" {
		t.Fatalf("list %+v", list)
	}
}
