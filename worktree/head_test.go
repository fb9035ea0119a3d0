package worktree

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestReattach(t *testing.T) {
	for _, c := range []struct {
		name, move, was string
		err             error
	}{
		{"on its branch", "", "", nil},
		{"own branch ahead", "git checkout -q -b mine && echo c > c && git add c && git commit -qm c", "branch mine", nil},
		{"detached at its tip", "git checkout -q --detach", "a detached HEAD at ", nil},
		{"detached behind", "git checkout -q --detach HEAD~1", "a detached HEAD at ", ErrHeadMoved},
		{"rebase in progress", "git checkout -q -b mine && git rebase -q -x false HEAD~1", "a detached HEAD at ", ErrForeignRebase},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			repo := newRepo(t)
			m := open(t, repo)
			h, err := m.Create(ctx, "r", "a", "HEAD", "", Owner{})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Release(ctx)
			write(t, filepath.Join(h.Path, "a"), "a\n")
			if _, _, err := m.Commit(ctx, h.Path, "a"); err != nil {
				t.Fatal(err)
			}
			if c.move != "" {
				_, _ = shErr(h.Path, c.move)
			}
			head := sh(t, h.Path, "git", "rev-parse", "HEAD")
			was, err := m.Reattach(ctx, h.Path, h.Branch)
			if !errors.Is(err, c.err) || len(was) < len(c.was) || was[:len(c.was)] != c.was {
				t.Fatalf("Reattach: %q, %v; want %q..., %v", was, err, c.was, c.err)
			}
			if err != nil {
				return
			}
			if ref := sh(t, h.Path, "git", "symbolic-ref", "HEAD"); ref != "refs/heads/"+h.Branch {
				t.Fatalf("HEAD is %s", ref)
			}
			if tip := sh(t, repo, "git", "rev-parse", h.Branch); tip != head {
				t.Fatalf("the branch is at %s, the agent's HEAD was %s", tip, head)
			}
		})
	}
}

// shErr runs a shell line in dir, failing or not.
func shErr(dir, line string) (string, error) {
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}
