package worktree

import "syscall"

// gitProcAttr makes a git outlive tai by no more than its SIGTERM
// handler: a git left running by a killed tai would go on changing a
// worktree the next tai is undoing (journal.go), and git's handler
// removes the lock files it holds, which a SIGKILL would leave behind.
func gitProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
