package worktree

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkCreate times tai's worktree creation (flock, orphan
// reconciliation, record, git worktree lock) against a raw `git worktree
// add` of the same kind, one of each in turn in every iteration (each in
// a repository of its own that grows alike), so that a busy machine
// disturbs both alike. x-git is tai's time over git's.
//
//	go test ./worktree -run '^$' -bench Create -benchtime 30x
func BenchmarkCreate(b *testing.B) {
	ctx := context.Background()
	raw, repo := newRepoB(b), newRepoB(b)
	m, err := Open(ctx, repo)
	if err != nil {
		b.Fatal(err)
	}
	var gitT, taiT time.Duration
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		cmd := exec.Command("git", "-C", raw, "worktree", "add", "-q", "-b", fmt.Sprintf("raw/%d", i), filepath.Join(raw, "raw", fmt.Sprint(i)), "HEAD")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v %s", err, out)
		}
		t1 := time.Now()
		h, err := m.Create(ctx, "bench", fmt.Sprintf("t%d", i), "HEAD", "main", Owner{PID: 1})
		if err != nil {
			b.Fatal(err)
		}
		gitT, taiT = gitT+t1.Sub(t0), taiT+time.Since(t1)
		_ = h.lock.Unlock() // keep git's lock, drop the flock fd
	}
	b.ReportMetric(taiT.Seconds()/gitT.Seconds(), "x-git")
	b.ReportMetric(float64(gitT.Microseconds())/1e3/float64(b.N), "git-ms")
	b.ReportMetric(float64(taiT.Microseconds())/1e3/float64(b.N), "tai-ms")
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
