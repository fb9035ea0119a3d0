//go:build !linux

package worktree

import "syscall"

// gitProcAttr: there is no parent-death signal outside Linux; the journal
// (journal.go) still undoes what a killed tai's git left.
func gitProcAttr() *syscall.SysProcAttr { return nil }

// openedBy: outside Linux there is no /proc to ask; the journal alone
// says the writer is dead.
func openedBy(...string) string { return "" }
