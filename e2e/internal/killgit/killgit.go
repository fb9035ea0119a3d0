// Package killgit kills tai in the middle of a git rebase, for the e2e
// tests of what a killed tai leaves in a worktree.
package killgit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Dir makes a directory holding a git that stands in for the real one.
// The first rebase run through it (by any process) gets an exec step that
// SIGKILLs the process that ran git, that is tai, and then waits, so git
// is in the middle of the rebase when tai dies (and gets tai's
// parent-death signal, or the test's kill of the group). Every other
// git command, and every later rebase, is the real git's. Put Dir first
// in tai's PATH.
func Dir(t testing.TB) string {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin, mark := t.TempDir(), filepath.Join(t.TempDir(), "killed")
	script := fmt.Sprintf(`#!/bin/sh
for a; do
	if [ "$a" = rebase ] && [ ! -e %[1]s ]; then
		: > %[1]s
		exec %[2]s "$@" -x "kill -9 $PPID; exec sleep 600"
	fi
done
exec %[2]s "$@"
`, mark, real)
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// Env is env with Dir(t) first in its PATH.
func Env(t testing.TB, env []string) []string {
	t.Helper()
	return append(env, "PATH="+Dir(t)+string(os.PathListSeparator)+os.Getenv("PATH"))
}
