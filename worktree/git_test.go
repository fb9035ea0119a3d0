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
	// A worker's operations (checkpoint, final commit, push, carry).
	g := m.NetGit()
	write(t, filepath.Join(h.Path, "y.txt"), "y\n")
	if made, err := g.CommitAll(ctx, h.Path, "checkpoint"); err != nil || !made {
		t.Fatalf("CommitAll: %v %v", made, err)
	}
	write(t, filepath.Join(h.Path, "z.txt"), "z\n")
	head, err := g.Squash(ctx, h.Path, h.Base, "final")
	if err != nil {
		t.Fatal(err)
	}
	bare := t.TempDir()
	sh(t, bare, "git", "init", "-q", "--bare")
	if err := g.Push(ctx, h.Path, bare, "+HEAD:refs/heads/x"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Carry(ctx, head, "main", "carried"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Patch(ctx, m.Repo, h.Base+".."+head, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("tai's git ran a program the repository's config names")
	}
}

// A named operation's values are never git's options: a URL, a ref or a
// revision starting with "-" is refused before git runs (a fetch from
// --upload-pack=CMD runs CMD).
func TestNamedOperationsRefuseOptions(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	m := open(t, repo)
	marker := filepath.Join(t.TempDir(), "ran")
	evil := "--upload-pack=touch " + marker
	g := m.NetGit()
	for name, err := range map[string]error{
		"clone":  (&Git{Network: true}).Clone(ctx, evil, filepath.Join(t.TempDir(), "c"), true),
		"fetch":  g.Fetch(ctx, evil, "+refs/heads/main:refs/x"),
		"spec":   g.Fetch(ctx, repo, "--upload-pack=x"),
		"push":   g.Push(ctx, repo, "--receive-pack=touch "+marker, "HEAD:refs/x"),
		"branch": m.SetBranch(ctx, "x", "--stdin"),
		"add":    g.AddDetached(ctx, "--lock", "HEAD"),
		"config": func() error { _, err := g.ConfigList(ctx, repo, "--exec-path=/tmp"); return err }(),
		"patch":  func() error { _, err := g.Patch(ctx, repo, "--output=/tmp/x", 0); return err }(),
	} {
		if !errors.Is(err, ErrOption) {
			t.Errorf("%s: %v, want ErrOption", name, err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("git ran a command given as a value")
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

// Every git tai runs goes through this package's one hardened runner, and
// outside it only through the named operations (ops.go): a raw git
// command line composed elsewhere skipped the hardening once (a NATS
// worker's helper), and an agent ran its commands outside the sandbox
// through it. Git's run is unexported, so the compiler refuses a raw
// Run; this test finds the other ways in: exec of "git" by name, and a
// Run or RunInput called on a Git (should one come back).
func TestEveryGitCallGoesThroughGit(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			// worktree is the runner; e2e is the user's side (its tests
			// make repositories with the user's git).
			if rel == "worktree" || rel == "e2e" || rel == "testdata" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
		if err != nil {
			return err
		}
		for _, w := range rawGit(f) {
			found = append(found, rel+": "+w)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: run git through worktree's named operations (worktree/ops.go)", f)
	}
}

// TestRawGit: what rawGit finds, and what it leaves.
func TestRawGit(t *testing.T) {
	for _, c := range []struct {
		src  string
		want int
	}{
		{`exec.Command("git", "push")`, 1},
		{`exec.CommandContext(ctx, "git", "fetch")`, 1},
		{`exec.LookPath("git")`, 1},
		{`c.wt.NetGit().Run(ctx, dir, "push")`, 1},
		{`m.Git().RunInput(ctx, dir, nil, "apply")`, 1},
		{`(&worktree.Git{}).Run(ctx, dir, "remote")`, 1},
		{`g := &worktree.Git{Repo: r}; g.Run(ctx, r, "fetch")`, 1},
		{`exec.Command("ls", "git")`, 0},
		{`c.wt.NetGit().Fetch(ctx, url, spec)`, 0},
		{`cmd.Run()`, 0},
	} {
		f, err := parser.ParseFile(token.NewFileSet(), "x.go", "package x\nfunc f() {\n"+c.src+"\n}\n", 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := rawGit(f); len(got) != c.want {
			t.Errorf("%s: found %v, want %d", c.src, got, c.want)
		}
	}
}

// rawGit lists the places in f that run git other than by a named
// operation.
func rawGit(f *ast.File) []string {
	var out []string
	gits := map[string]bool{} // names bound to a Git in f (by name: enough for a check)
	isGit := func(e ast.Expr) bool {
		switch x := e.(type) {
		case *ast.ParenExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		}
		if u, ok := e.(*ast.UnaryExpr); ok {
			e = u.X
		}
		switch x := e.(type) {
		case *ast.Ident:
			return gits[x.Name]
		case *ast.CompositeLit:
			sel, ok := x.Type.(*ast.SelectorExpr)
			return ok && sel.Sel.Name == "Git"
		case *ast.CallExpr:
			sel, ok := x.Fun.(*ast.SelectorExpr)
			return ok && (sel.Sel.Name == "Git" || sel.Sel.Name == "NetGit") && len(x.Args) == 0
		case *ast.SelectorExpr:
			return x.Sel.Name == "Git" // a *worktree.Git type
		}
		return false
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.AssignStmt:
			for i, r := range x.Rhs {
				if id, ok := x.Lhs[min(i, len(x.Lhs)-1)].(*ast.Ident); ok && isGit(r) {
					gits[id.Name] = true
				}
			}
		case *ast.Field:
			if isGit(x.Type) {
				for _, id := range x.Names {
					gits[id.Name] = true
				}
			}
		case *ast.CallExpr:
			sel, ok := x.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			switch sel.Sel.Name {
			case "Command", "CommandContext", "LookPath":
				for _, a := range x.Args {
					if lit, ok := a.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if s, _ := strconv.Unquote(lit.Value); s == "git" {
							out = append(out, "exec of git")
						}
						break
					}
				}
			case "Run", "RunInput":
				if isGit(sel.X) {
					out = append(out, "a raw git command line ("+sel.Sel.Name+")")
				}
			}
		}
		return true
	})
	return out
}
