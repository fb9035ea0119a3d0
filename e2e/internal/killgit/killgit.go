// Package killgit kills tai in the middle of a git command, for the e2e
// tests of what a killed tai leaves in a worktree.
package killgit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The git commands Dir can kill tai in.
const (
	// Rebase: the rebase gets an exec step that SIGKILLs tai and then
	// waits, so git is in the middle of the rebase (HEAD detached,
	// rebase-merge/) when tai dies, and then gets tai's parent-death
	// signal, or the test's kill of the group.
	Rebase = "rebase"
	// Add: git add is killed holding the index lock. The stand-in makes
	// the lock as git add does first, then SIGKILLs tai, and waits.
	Add = "add"
	// WorktreeAdd: git worktree add is killed while it checks the new
	// worktree out, holding the index lock in the new gitdir. The stand-in
	// runs the real add, leaves the lock as the killed checkout does,
	// then SIGKILLs tai, and waits.
	WorktreeAdd = "worktree add"
)

// Dir makes a directory holding a git that stands in for the real one:
// the first run of the git command sub (Rebase, Add or WorktreeAdd, by any process)
// kills the process that ran git, that is tai. Every other git command,
// and every later one, is the real git's. Put Dir first in tai's PATH.
func Dir(t testing.TB, sub string) string {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin, mark := t.TempDir(), filepath.Join(t.TempDir(), "killed")
	var kill string
	word, match := sub, "true"
	switch sub {
	case Rebase:
		kill = fmt.Sprintf(`exec %s "$@" -x "kill -9 $PPID; exec sleep 600"`, real)
	case Add:
		kill = `: > "$gd/index.lock"; kill -9 $PPID; exec sleep 600`
	case WorktreeAdd:
		// An add git refuses (the branch exists) is not the one to kill
		// in: the next add is. git runs from the repository's top level
		// (cwd): its gitdirs are under .git/worktrees.
		word, match = "worktree", `case " $* " in *" worktree add "*) true ;; *) false ;; esac`
		kill = fmt.Sprintf(`%s "$@" || { rc=$?; rm -f %s; exit $rc; }; for d in .git/worktrees/*/; do : > "${d}index.lock"; done; kill -9 $PPID; exec sleep 600`, real, mark)
	default:
		t.Fatalf("killgit: no way to kill tai in git %s", sub)
	}
	// The subcommand is the first argument that is not a global option
	// (tai's git runs as git --no-pager --git-dir=D --work-tree=W -C D
	// -c k=v ... SUB ...).
	script := fmt.Sprintf(`#!/bin/sh
gd=.git sub= skip=
for a; do
	if [ -n "$skip" ]; then skip=; continue; fi
	case "$a" in
	--git-dir=*) gd="${a#--git-dir=}" ;;
	-C|-c) skip=1 ;;
	-*) ;;
	*) sub="$a"; break ;;
	esac
done
if [ "$sub" = %[3]s ] && [ ! -e %[1]s ] && %[5]s; then
	: > %[1]s
	%[4]s
fi
exec %[2]s "$@"
`, mark, real, word, kill, match)
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// Env is env with Dir(t, sub) first in its PATH.
func Env(t testing.TB, env []string, sub string) []string {
	t.Helper()
	return append(env, "PATH="+Dir(t, sub)+string(os.PathListSeparator)+os.Getenv("PATH"))
}
