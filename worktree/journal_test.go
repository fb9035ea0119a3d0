package worktree

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// killedRebase runs, in the worktree at dir, a rebase onto target whose
// git is SIGKILLed after its first pick: the state a tai killed in the
// middle of Integrate leaves (rebase-merge/, HEAD detached).
func killedRebase(t *testing.T, dir, target string) {
	t.Helper()
	cmd := exec.Command("git", "rebase", "--no-autostash", target, "-x", "kill -9 $PPID")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("the rebase was not killed: %v\n%s", err, out)
	}
}

// integWorktree makes a repository with a branch integ, and task a's
// worktree on it with two commits of its own; integ moves on meanwhile.
func integWorktree(t *testing.T) (string, *Manager, *Handle) {
	t.Helper()
	ctx := context.Background()
	repo := newRepo(t)
	m := open(t, repo)
	if err := m.EnsureBranch(ctx, "integ", "HEAD"); err != nil {
		t.Fatal(err)
	}
	h, err := m.Create(ctx, "r", "a", "integ", "integ", Owner{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a1.txt", "a2.txt"} {
		write(t, filepath.Join(h.Path, f), f+"\n")
		if _, _, err := m.Commit(ctx, h.Path, f); err != nil {
			t.Fatal(err)
		}
	}
	commitOn(t, repo, "integ", "a-outside.txt", "o\n")
	return repo, m, h
}

func gitDirOf(t *testing.T, m *Manager, dir string) string {
	t.Helper()
	gd, err := m.worktreeGitDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return gd
}

// A tai killed in the middle of a merge leaves the worktree (and the
// target's ref) as git left them; the next Integrate undoes that and
// merges, losing no commit.
func TestIntegrateUndoesAKilledMerge(t *testing.T) {
	cases := []struct {
		name string
		kill func(t *testing.T, m *Manager, h *Handle, gd string)
	}{
		{"in the rebase", func(t *testing.T, m *Manager, h *Handle, gd string) {
			killedRebase(t, h.Path, "integ")
			write(t, filepath.Join(gd, "index.lock"), "")
		}},
		{"before the rebase detached HEAD", func(t *testing.T, m *Manager, h *Handle, gd string) {
			// git writes rebase-merge/ before it checks the target out: a
			// kill in between leaves HEAD on the branch, the state there.
			killedRebase(t, h.Path, "integ")
			sh(t, h.Path, "git", "symbolic-ref", "HEAD", "refs/heads/"+h.Branch)
			sh(t, h.Path, "git", "reset", "-q", "--hard")
		}},
		{"after the rebase", func(t *testing.T, m *Manager, h *Handle, gd string) {
			sh(t, h.Path, "git", "rebase", "-q", "--no-autostash", "integ")
		}},
		{"moving the target", func(t *testing.T, m *Manager, h *Handle, gd string) {
			// The journal of the target's lock is what says the ref lock
			// is a killed tai's; the lock itself is git's.
			unlock, err := m.targetLock(context.Background(), "integ")
			if err != nil {
				t.Fatal(err)
			}
			j := targetJournal(filepath.Join(m.CommonDir, "tai", "targets", "integ.lock"))
			b, err := os.ReadFile(j)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = os.WriteFile(j, b, 0o644) }() // unlock removes it; the killed tai did not
			unlock()
			write(t, filepath.Join(m.CommonDir, "refs", "heads", "integ.lock"), "")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			repo, m, h := integWorktree(t)
			defer h.Release(ctx)
			gd := gitDirOf(t, m, h.Path)
			if err := beginWorktree(gd, opIntegrate, "integ"); err != nil {
				t.Fatal(err)
			}
			c.kill(t, m, h, gd)

			head, err := m.Integrate(ctx, h.Record, "integ", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := sh(t, repo, "git", "rev-parse", "integ"); got != head {
				t.Fatalf("integ at %s, Integrate said %s", got, head)
			}
			files := sh(t, repo, "git", "ls-tree", "--name-only", "integ")
			for _, f := range []string{"a1.txt", "a2.txt", "a-outside.txt", "README"} {
				if !strings.Contains(files, f) {
					t.Errorf("integ lacks %s:\n%s", f, files)
				}
			}
			if n := sh(t, repo, "git", "rev-list", "--count", "integ"); n != "4" {
				t.Errorf("integ has %s commits, want 4 (init, outside, a1, a2): a pick was lost or doubled", n)
			}
			if ref := sh(t, h.Path, "git", "symbolic-ref", "HEAD"); ref != "refs/heads/"+h.Branch {
				t.Errorf("HEAD is %s, not the task's branch", ref)
			}
			if st := sh(t, h.Path, "git", "status", "--porcelain"); st != "" {
				t.Errorf("the worktree is not clean:\n%s", st)
			}
			left, _ := filepath.Glob(filepath.Join(m.CommonDir, "tai", "targets", "*.journal"))
			for _, p := range append(left, filepath.Join(gd, worktreeJournal), filepath.Join(gd, "rebase-merge"), filepath.Join(m.CommonDir, "refs", "heads", "integ.lock")) {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("%s is left", p)
				}
			}
		})
	}
}

// A rebase, or a ref lock, that no tai journal claims is someone else's:
// tai refuses to merge over it and leaves it as it was.
func TestIntegrateLeavesWhatIsNotItsOwn(t *testing.T) {
	ctx := context.Background()
	repo, m, h := integWorktree(t)
	defer h.Release(ctx)
	gd := gitDirOf(t, m, h.Path)
	before := sh(t, repo, "git", "rev-parse", "integ")

	cmd := exec.Command("git", "rebase", "--no-autostash", "integ", "-x", "false")
	cmd.Dir = h.Path
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("the rebase did not stop:\n%s", out)
	}
	if _, err := m.Integrate(ctx, h.Record, "integ", nil); !errors.Is(err, ErrForeignRebase) {
		t.Fatalf("want ErrForeignRebase, got %v", err)
	}
	if rebaseState(gd) == "" {
		t.Fatal("the foreign rebase was undone")
	}
	sh(t, h.Path, "git", "rebase", "--abort")

	lock := filepath.Join(m.CommonDir, "refs", "heads", "integ.lock")
	write(t, lock, "")
	if _, err := m.Integrate(ctx, h.Record, "integ", nil); err == nil || !strings.Contains(err.Error(), "integ.lock") {
		t.Fatalf("want git's error on the held ref lock, got %v", err)
	}
	if _, err := os.Lstat(lock); err != nil {
		t.Fatalf("a ref lock no tai journal claims was removed: %v", err)
	}
	if now := sh(t, repo, "git", "rev-parse", "integ"); now != before {
		t.Fatalf("integ moved from %s to %s", before, now)
	}
	if ref := sh(t, h.Path, "git", "symbolic-ref", "HEAD"); ref != "refs/heads/"+h.Branch {
		t.Errorf("HEAD is %s after the refused merge", ref)
	}
}

// Taking a worktree back (a resumed run) undoes a killed merge in it:
// HEAD on the task's branch again, with every commit.
func TestCreateTakesBackAWorktreeAKilledMergeLeft(t *testing.T) {
	ctx := context.Background()
	_, m, h := integWorktree(t)
	tip := sh(t, h.Path, "git", "rev-parse", "HEAD")
	gd := gitDirOf(t, m, h.Path)
	if err := beginWorktree(gd, opIntegrate, "integ"); err != nil {
		t.Fatal(err)
	}
	killedRebase(t, h.Path, "integ")
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}

	h2, err := m.Create(ctx, "r", "a", "integ", "integ", Owner{})
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Release(ctx)
	if ref := sh(t, h2.Path, "git", "symbolic-ref", "HEAD"); ref != "refs/heads/"+h2.Branch {
		t.Errorf("HEAD is %s, not the task's branch", ref)
	}
	if now := sh(t, h2.Path, "git", "rev-parse", "HEAD"); now != tip {
		t.Errorf("the branch is at %s, was %s", now, tip)
	}
	if rebaseState(gd) != "" {
		t.Error("the rebase is still there")
	}
	if st := sh(t, h2.Path, "git", "status", "--porcelain"); st != "" {
		t.Errorf("the worktree is not clean:\n%s", st)
	}
}

// A tai killed in its commit of the agent's work leaves git's index lock;
// taking the worktree back removes it and keeps the work, uncommitted,
// for the next commit. An index lock no journal claims stays.
func TestCreateTakesBackAWorktreeAKilledCommitLeft(t *testing.T) {
	// A reset (the NATS coordinator's, of its merge worktree) leaves the
	// same lock, and is undone the same way.
	for _, op := range []string{opCommit, opReset} {
		t.Run(op, func(t *testing.T) {
			ctx := context.Background()
			repo := newRepo(t)
			m := open(t, repo)
			h, err := m.Create(ctx, "r", "a", "HEAD", "", Owner{})
			if err != nil {
				t.Fatal(err)
			}
			gd := gitDirOf(t, m, h.Path)
			write(t, filepath.Join(h.Path, "work.txt"), "work\n")
			tip := sh(t, h.Path, "git", "rev-parse", "HEAD")
			if err := beginWorktree(gd, op, ""); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(gd, "index.lock"), "")
			if err := h.Release(ctx); err != nil {
				t.Fatal(err)
			}

			h, err = m.Create(ctx, "r", "a", "HEAD", "", Owner{})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Release(ctx)
			if _, err := os.Lstat(filepath.Join(gd, "index.lock")); err == nil {
				t.Fatal("the killed commit's index lock is still there")
			}
			if now := sh(t, h.Path, "git", "rev-parse", "HEAD"); now != tip {
				t.Fatalf("a commit's recovery moved HEAD from %s to %s", tip, now)
			}
			if b, err := os.ReadFile(filepath.Join(h.Path, "work.txt")); err != nil || string(b) != "work\n" {
				t.Fatalf("the agent's work: %q %v", b, err)
			}
			if _, made, err := m.Commit(ctx, h.Path, "work"); err != nil || !made {
				t.Fatalf("commit after the recovery: made %v, %v", made, err)
			}
			if _, err := os.Lstat(filepath.Join(gd, worktreeJournal)); err == nil {
				t.Fatal("Commit left its journal")
			}

			write(t, filepath.Join(gd, "index.lock"), "")
			if err := h.Release(ctx); err != nil {
				t.Fatal(err)
			}
			h2, err := m.Create(ctx, "r", "a", "HEAD", "", Owner{})
			if err != nil {
				t.Fatal(err)
			}
			defer h2.Release(ctx)
			if _, err := os.Lstat(filepath.Join(gd, "index.lock")); err != nil {
				t.Fatal("an index lock no journal claims was removed")
			}
			_ = os.Remove(filepath.Join(gd, "index.lock"))
		})
	}
}

// A tai killed during `git worktree add` leaves a half-made worktree: its
// gitdir with the checkout's index lock and git's "locked" file, and the
// add's journal. The next Create removes it and adds the worktree again,
// after which git works there (the NATS coordinator's reset --hard hit
// that lock); the branch keeps its commits. Without the journal, the lock
// is not tai's to remove. The state is made as the kill leaves it: no kill
// timing.
func TestCreateUndoesAKilledAdd(t *testing.T) {
	for _, c := range []struct {
		name    string
		journal bool
		commit  bool // the branch has a commit of its own (a resumed task's)
		held    bool // a live process (a git that outlived tai) has the lock open
		// window is how far git got when it was killed: "" in the
		// checkout; "no HEAD" before it wrote the gitdir's HEAD (nor
		// checked anything out); "no gitdir" before it wrote the gitdir
		// file that names the worktree.
		window string
	}{
		{"new branch", true, false, false, ""},
		{"branch with commits", true, true, false, ""},
		{"no journal", false, false, false, ""},
		{"lock held open", true, false, true, ""},
		{"killed before HEAD was written", true, false, false, "no HEAD"},
		{"killed before HEAD was written, branch with commits", true, true, false, "no HEAD"},
		{"killed before the gitdir file was written", true, false, false, "no gitdir"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			repo := newRepo(t)
			m := open(t, repo)
			path, branch := m.Path("r", "a"), Branch("r", "a")
			want := sh(t, repo, "git", "rev-parse", "HEAD")
			if c.commit {
				sh(t, repo, "git", "branch", branch)
				want = commitOn(t, repo, branch, "mine.txt", "mine\n")
			}
			if c.journal {
				write(t, m.addJournal("r", "a"), opAdd+" "+path+"\n")
			}
			if c.commit {
				sh(t, repo, "git", "worktree", "add", "-q", path, branch)
			} else {
				sh(t, repo, "git", "worktree", "add", "-q", "-b", branch, path, "HEAD")
			}
			gd := gitDirOf(t, m, path)
			write(t, filepath.Join(gd, "index.lock"), "")
			write(t, filepath.Join(gd, "locked"), "initializing")
			if c.window != "" {
				// git had made the worktree's directory and its .git file,
				// and its gitdir with "locked": nothing checked out.
				ents, err := os.ReadDir(path)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range ents {
					if e.Name() != ".git" {
						if err := os.RemoveAll(filepath.Join(path, e.Name())); err != nil {
							t.Fatal(err)
						}
					}
				}
				drop := []string{"HEAD", "ORIG_HEAD", "index", "index.lock", "logs", "refs"}
				if c.window == "no gitdir" {
					drop = append(drop, "gitdir", "commondir")
				}
				for _, f := range drop {
					if err := os.RemoveAll(filepath.Join(gd, f)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if c.held {
				// This process stands in for the live git: the lock is
				// refused until it closes it.
				f, err := os.Open(filepath.Join(gd, "index.lock"))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := m.Create(ctx, "r", "a", "HEAD", "main", Owner{PID: 1}); !errors.Is(err, ErrLockHeld) {
					t.Fatalf("Create with the lock held open: %v, want ErrLockHeld", err)
				}
				if _, err := os.Stat(filepath.Join(gd, "index.lock")); err != nil {
					t.Fatalf("the held lock was removed: %v", err)
				}
				f.Close()
			}

			h, err := m.Create(ctx, "r", "a", "HEAD", "main", Owner{PID: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Release(ctx)
			gd = gitDirOf(t, m, h.Path)
			if _, err := os.Stat(filepath.Join(gd, "index.lock")); err == nil != !c.journal {
				t.Fatalf("index.lock there: %v, want %v", err == nil, !c.journal)
			}
			if !c.journal {
				return // the lock is somebody else's: Create left it
			}
			if _, err := os.Stat(m.addJournal("r", "a")); err == nil {
				t.Fatal("the add's journal is left")
			}
			if err := m.ResetHard(ctx, h.Path, "HEAD"); err != nil {
				t.Fatal(err)
			}
			if got := sh(t, repo, "git", "rev-parse", branch); got != want {
				t.Fatalf("%s at %s, want %s", branch, got, want)
			}
			if c.commit {
				if _, err := os.Stat(filepath.Join(h.Path, "mine.txt")); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
