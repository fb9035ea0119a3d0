package worktree

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitLog puts a git on PATH that logs each call's subcommand to a file
// and runs the real one; with oldGit set it refuses `worktree add
// --reason`, as git before 2.35 does. It returns the log's reader.
func gitLog(t *testing.T, oldGit bool) func() []string {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	logf := filepath.Join(dir, "calls")
	refuse := ""
	if oldGit {
		refuse = `case " $* " in *" worktree add "*"--reason"*) echo "error: unknown option \` + "`" + `reason'" >&2; exit 129;; esac` + "\n"
	}
	script := "#!/bin/sh\n" +
		`sub=""; skip=0; for a in "$@"; do if [ $skip = 1 ]; then skip=0; continue; fi; case "$a" in -c|-C) skip=1;; --*) ;; *) sub="$sub $a"; break;; esac; done` + "\n" +
		`echo "$sub" >> ` + logf + "\n" + refuse +
		`exec ` + real + ` "$@"` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() []string {
		b, _ := os.ReadFile(logf)
		_ = os.Remove(logf)
		return strings.Fields(strings.ReplaceAll(string(b), "\n", " |"))
	}
}

// A task with nothing yet costs one git process, as a bare `git worktree
// add` does (and the manager's first reads its config, once); on a git without `worktree add --reason` the general path
// does it, and the next task does not try again.
func TestCreateFreshInOneGitProcess(t *testing.T) {
	for _, oldGit := range []bool{false, true} {
		t.Run(map[bool]string{false: "git", true: "git-before-2.35"}[oldGit], func(t *testing.T) {
			ctx := context.Background()
			repo := newRepo(t)
			calls := gitLog(t, oldGit)
			m := open(t, repo)
			calls() // Open's
			for i, task := range []string{"a", "b"} {
				h, err := m.Create(ctx, "r", task, "HEAD", "main", Owner{PID: 1})
				if err != nil {
					t.Fatal(err)
				}
				got := strings.Join(calls(), " ")
				want := "worktree |"
				if oldGit {
					want = "worktree | rev-parse | rev-parse | worktree | rev-parse | merge-base | worktree | worktree |"
					if i == 0 {
						want = "worktree | " + want // the add that finds out
					}
				}
				if i == 0 {
					// The first add reads the config for the drivers it
					// turns off; the next finds it unchanged.
					want = "config | " + want
				}
				if got != want {
					t.Errorf("task %s: git %s, want %s", task, got, want)
				}
				if h.Base != sh(t, repo, "git", "rev-parse", "HEAD") || sh(t, h.Path, "git", "rev-parse", "HEAD") != h.Base {
					t.Errorf("task %s: base %s", task, h.Base)
				}
				if out := sh(t, repo, "git", "worktree", "list", "--porcelain"); !strings.Contains(out, "locked tai run r task "+task+" (pid 1)") {
					t.Errorf("task %s not locked with its reason:\n%s", task, out)
				}
				rec, err := m.readRecord("r", task)
				if err != nil || rec.Base != h.Base || rec.Branch != "tai/r/"+task || rec.Owner.PID != 1 || rec.Owner.Host == "" {
					t.Errorf("task %s: record %+v, %v", task, rec, err)
				}
				_ = h.Release(ctx)
				calls() // Release's
			}
		})
	}
}

// A task started from a remote-tracking branch gets a branch of its own,
// with no upstream: tai's branches are merged by tai, never pushed or
// pulled by git's defaults.
func TestCreateFromARemoteBranchHasNoUpstream(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	sh(t, repo, "git", "remote", "add", "origin", "https://example.invalid/repo.git")
	sh(t, repo, "git", "update-ref", "refs/remotes/origin/main", "HEAD")
	m := open(t, repo)
	h, err := m.Create(ctx, "r", "x", "origin/main", "main", Owner{PID: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	if out, err := exec.Command("git", "-C", repo, "config", "--get-regexp", `^branch\.tai/`).CombinedOutput(); err == nil {
		t.Fatalf("the task's branch has an upstream:\n%s", out)
	}
	if h.Base != sh(t, repo, "git", "rev-parse", "origin/main") {
		t.Fatalf("base %s", h.Base)
	}
}

// A record a crash of the machine left empty (it is written without
// fsync) is rebuilt from the branch: the base it started from, and the
// work on it, come back.
func TestCreateRebuildsAnEmptyRecord(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	m := open(t, repo)
	h, _ := createCommitted(t, m, "build", "c.txt", "c\n")
	commitOn(t, repo, "main", "other.txt", "main moved on\n")
	if err := os.WriteFile(m.recordPath("r", "build"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h2, err := m.Create(ctx, "r", "build", "main", "main", Owner{PID: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Release(ctx)
	if h2.Base != h.Base {
		t.Fatalf("base %s, want %s (where the branch started)", h2.Base, h.Base)
	}
	if _, err := os.Stat(filepath.Join(h2.Path, "c.txt")); err != nil {
		t.Fatal("the branch's work is gone")
	}
	if rec, err := m.readRecord("r", "build"); err != nil || rec.Base != h.Base || rec.Owner.PID != 2 {
		t.Fatalf("record %+v, %v", rec, err)
	}
}

// createCommitted creates task's worktree in run r from HEAD, commits
// file in it and releases it: the handle, and the commit.
func createCommitted(t *testing.T, m *Manager, task, file, content string) (*Handle, string) {
	t.Helper()
	ctx := context.Background()
	h, err := m.Create(ctx, "r", task, "HEAD", "main", Owner{PID: 1})
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(h.Path, file), content)
	id, _, err := m.Commit(ctx, h.Path, "add "+file)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	return h, id
}
