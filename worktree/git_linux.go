package worktree

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// gitProcAttr makes a git outlive tai by no more than its SIGTERM
// handler: a git left running by a killed tai would go on changing a
// worktree the next tai is undoing (journal.go), and git's handler
// removes the lock files it holds, which a SIGKILL would leave behind.
func gitProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}

// openedBy names a live process that has one of paths open (a git still
// writing its lock: the grandchild a killed git's checkout started, which
// the parent-death signal does not reach), or "". It reads /proc, where a
// process's open files are links; the processes of other users are not
// readable there, and are not tai's gits.
func openedBy(paths ...string) string {
	want := map[string]bool{}
	for _, p := range paths {
		want[realPath(p)] = true
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return ""
	}
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		fds, err := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name())); err == nil && want[l] {
				return "pid " + p.Name()
			}
		}
	}
	return ""
}
