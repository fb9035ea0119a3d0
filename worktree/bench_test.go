package worktree

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkCreate compares tai's worktree creation (flock, orphan
// reconciliation, record, git worktree lock) with a raw `git worktree add`
// in the same repository, in the same run:
//
//	go test ./worktree -run '^$' -bench Create
func BenchmarkCreate(b *testing.B) {
	ctx := context.Background()
	b.Run("raw-git-worktree-add", func(b *testing.B) {
		repo := newRepoB(b)
		for i := range b.N {
			cmd := exec.Command("git", "-C", repo, "worktree", "add", "-q", "-b", fmt.Sprintf("raw/%d", i), filepath.Join(repo, "raw", fmt.Sprint(i)), "HEAD")
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v %s", err, out)
			}
		}
	})
	b.Run("tai-create", func(b *testing.B) {
		repo := newRepoB(b)
		m, err := Open(ctx, repo)
		if err != nil {
			b.Fatal(err)
		}
		for i := range b.N {
			h, err := m.Create(ctx, "bench", fmt.Sprintf("t%d", i), "HEAD", "main", Owner{PID: 1})
			if err != nil {
				b.Fatal(err)
			}
			_ = h.lock.Unlock() // keep git's lock, drop the flock fd
		}
	})
}

func newRepoB(b *testing.B) string {
	dir := b.TempDir()
	for _, a := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "T"}, {"commit", "-q", "--allow-empty", "-m", "init"}} {
		cmd := exec.Command("git", append([]string{"-C", dir}, a...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v %s", err, out)
		}
	}
	return dir
}
