package worktree

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The -c settings every git call carries: the keys that run a command or
// reach the network are off, whatever the config says; a runner that
// fetches and pushes may use the transports of a URL, never ext::.
func TestGitPrefixTurnsOffWhatRunsCommands(t *testing.T) {
	repo := newRepo(t)
	sh(t, repo, "git", "config", "filter.lfs.clean", "git-lfs clean -- %f")
	sh(t, repo, "git", "config", "filter.lfs.required", "true")
	sh(t, repo, "git", "config", "merge.npm.driver", "npm-merge %A %O %B")
	sh(t, repo, "git", "config", "merge.renames", "true") // no driver
	common := filepath.Join(repo, ".git")
	for _, c := range []struct {
		name    string
		g       *Git
		args    []string
		want    []string
		notWant []string
	}{
		{"local, a worktree command", &Git{Repo: repo, CommonDir: common}, []string{"status"},
			[]string{"core.fsmonitor=false", "core.hooksPath=/dev/null", "diff.external=", "core.sshCommand=", "credential.helper=",
				"protocol.allow=never", "gpg.program=false", "filter.lfs.clean=", "filter.lfs.smudge=", "filter.lfs.process=",
				"filter.lfs.required=false", "merge.npm.driver="},
			[]string{"protocol.file.allow=always", "merge.renames.driver="}},
		{"local, plumbing reads no config", &Git{Repo: repo, CommonDir: common}, []string{"rev-parse", "HEAD"},
			[]string{"core.fsmonitor=false", "credential.helper="}, []string{"filter.lfs.clean="}},
		{"network", &Git{Repo: repo, CommonDir: common, Network: true}, []string{"fetch"},
			[]string{"core.hooksPath=/dev/null", "protocol.allow=never", "protocol.file.allow=always", "protocol.ssh.allow=always"},
			[]string{"protocol.ext.allow=always", "credential.helper="}},
		{"no repository", &Git{Network: true}, []string{"clone"},
			[]string{"core.fsmonitor=false", "protocol.allow=never", "protocol.https.allow=always"}, []string{"-C"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pre, err := c.g.prefix(context.Background(), c.g.Repo, runsDrivers(c.args))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if i := slices.Index(pre, w); i < 1 || pre[i-1] != "-c" {
					t.Errorf("%s is not set: %q", w, pre)
				}
			}
			for _, w := range c.notWant {
				if slices.Contains(pre, w) {
					t.Errorf("%s is set: %q", w, pre)
				}
			}
		})
	}
}

// What the config of a repository names runs nothing when tai's git
// stages, commits, merges or checks out: a filter and a merge driver
// .gitattributes picks, fsmonitor, hooks.
func TestGitRunsNoProgramTheConfigNames(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	marker := filepath.Join(t.TempDir(), "ran")
	touch := "touch " + marker
	for k, v := range map[string]string{"filter.evil.clean": touch, "filter.evil.smudge": touch, "filter.evil.required": "true",
		"merge.evil.driver": touch, "core.fsmonitor": touch, "diff.evil.textconv": touch, "diff.evil.command": touch} {
		sh(t, repo, "git", "config", k, v)
	}
	write(t, filepath.Join(repo, ".git", "hooks", "post-commit"), "#!/bin/sh\n"+touch+"\n")
	if err := os.Chmod(filepath.Join(repo, ".git", "hooks", "post-commit"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := open(t, repo)
	h, err := m.Create(ctx, "r", "a", "HEAD", "main", Owner{PID: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Release(ctx) }()
	write(t, filepath.Join(h.Path, ".gitattributes"), "* filter=evil merge=evil diff=evil\n")
	write(t, filepath.Join(h.Path, "x.txt"), "x\n")
	if _, _, err := m.Commit(ctx, h.Path, "work"); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(h.Path, "x.txt"), "y\n")
	if _, err := m.Diff(ctx, h.Path, h.Base); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Patch(ctx, h.Path, h.Base, 1000); err != nil {
		t.Fatal(err)
	}
	if err := m.ResetHard(ctx, h.Path, "HEAD"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("tai's git ran a program the repository's config names")
	}
}

// Config that comes from a file inside an agent's worktree (an include of
// a tracked file, there or still to be made) is refused: the agent could
// set a driver there between tai's read of the config and its command.
func TestGitRefusesConfigFromAnAgentsWorktree(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, repo, wt string)
	}{
		{"include of a file there", func(t *testing.T, repo, wt string) {
			write(t, filepath.Join(wt, "shared.gitconfig"), "[core]\n\tbare = false\n")
			sh(t, repo, "git", "config", "include.path", filepath.Join(wt, "shared.gitconfig"))
		}},
		{"include of a file not there yet", func(t *testing.T, repo, wt string) {
			sh(t, repo, "git", "config", "include.path", filepath.Join(wt, "later.gitconfig"))
		}},
		{"includeIf", func(t *testing.T, repo, wt string) {
			sh(t, repo, "git", "config", "includeIf.gitdir:/.path", filepath.Join(wt, "later.gitconfig"))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo := newRepo(t)
			m := open(t, repo)
			h, err := m.Create(ctx, "r", "a", "HEAD", "main", Owner{PID: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = h.Release(ctx) }()
			c.setup(t, repo, h.Path)
			write(t, filepath.Join(h.Path, "x.txt"), "x\n")
			_, _, err = m.Commit(ctx, h.Path, "work")
			if !errors.Is(err, ErrAgentConfig) {
				t.Fatalf("commit: %v, want %v", err, ErrAgentConfig)
			}
		})
	}
}

// A git repository inside the worktree where git add -A would take it (as
// a gitlink without its files) is refused, saying where; one in an
// ignored directory is not looked at.
func TestCommitRefusesAnEmbeddedRepository(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name, gitPath, repoDir, ignore string
		refused                        bool
	}{
		{"nested repository", "sub/inner/.git/HEAD", "sub/inner", "", true},
		{"gitdir file", "sub/.git", "sub", "", true},
		{"ignored", "deps/x/.git/HEAD", "deps/x", "deps/\n", false},
		{"none", "", "", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo := newRepo(t)
			m := open(t, repo)
			h, err := m.Create(ctx, "r", "a", "HEAD", "main", Owner{PID: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = h.Release(ctx) }()
			if c.gitPath != "" {
				p := filepath.Join(h.Path, c.gitPath)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				write(t, p, "ref: refs/heads/main\n")
				write(t, filepath.Join(h.Path, c.repoDir, "f.txt"), "f\n")
			}
			if c.ignore != "" {
				write(t, filepath.Join(h.Path, ".gitignore"), c.ignore)
			}
			write(t, filepath.Join(h.Path, "x.txt"), "x\n")
			_, _, err = m.Commit(ctx, h.Path, "work")
			if c.refused {
				if !errors.Is(err, ErrEmbedded) || !strings.Contains(err.Error(), "sub") {
					t.Fatalf("commit: %v, want %v naming the directory", err, ErrEmbedded)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Every git tai runs goes through Git: no package but this one starts a
// git process itself (tests aside).
func TestEveryGitCallGoesThroughGit(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if rel == "worktree" || rel == "e2e" || rel == "testdata" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "Command" && sel.Sel.Name != "CommandContext") {
				return true
			}
			for _, a := range call.Args {
				if lit, ok := a.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, _ := strconv.Unquote(lit.Value); s == "git" {
						t.Errorf("%s: runs git itself; use worktree.Git", fset.Position(call.Pos()))
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
