package remote

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tai-dev/tai/worktree"
)

// A resumed attempt carries its checkpoint onto the base it was offered:
// the target moved on since the checkpoint (another task merged), and a
// start from the bare checkpoint squashed onto the new base reverted that
// task's files (e2e/remote TestHubCoordinatesSubmittedRuns: s1.txt gone
// from the target after a coordinator restart).
func TestCheckpointOnMovedBase(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	repo := t.TempDir()
	// The fixture is made as a user makes a repository; tai's git is g.
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	commit := func(files map[string]string, msg string) string {
		t.Helper()
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(repo, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		run("add", "-A")
		run("commit", "-q", "-m", msg)
		return run("rev-parse", "HEAD")
	}
	run("init", "-q", "-b", "main")
	b1 := commit(map[string]string{"a.txt": "a\n"}, "base")
	run("checkout", "-q", "-b", "attempt1")
	ck := commit(map[string]string{"s0.txt": "s0\n", "a.txt": "a\nfrom s0\n"}, "checkpoint")
	run("checkout", "-q", "main")
	b2 := commit(map[string]string{"s1.txt": "s1\n"}, "s1 merged")

	g := &worktree.Git{Repo: repo, CommonDir: filepath.Join(repo, ".git")}
	tree := func(rev string) string { return run("ls-tree", "-r", "--name-only", rev) }
	t.Run("moved target", func(t *testing.T) {
		start, from := checkpointOnBase(ctx, g, ck, b2, log)
		if got := tree(start); got != "a.txt\ns0.txt\ns1.txt" {
			t.Fatalf("start %s (%s) holds %q", start, from, got)
		}
		if parent := run("rev-parse", start+"^"); parent != b2 {
			t.Fatalf("start's parent %s, want the base %s", parent, b2)
		}
		if a := run("show", start+":a.txt"); a != "a\nfrom s0" {
			t.Fatalf("a.txt %q", a)
		}
	})
	t.Run("same base", func(t *testing.T) {
		if start, _ := checkpointOnBase(ctx, g, ck, b1, log); start != ck {
			t.Fatalf("start %s, want the checkpoint %s", start, ck)
		}
	})
	t.Run("conflict starts over from the target", func(t *testing.T) {
		b3 := commit(map[string]string{"a.txt": "a\nfrom s2\n"}, "s2 merged")
		if start, from := checkpointOnBase(ctx, g, ck, b3, log); start != b3 || !strings.Contains(from, "conflicts") {
			t.Fatalf("start %s (%s), want the target %s", start, from, b3)
		}
	})
}
