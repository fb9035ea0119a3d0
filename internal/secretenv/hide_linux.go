package secretenv

import "golang.org/x/sys/unix"

// HideProcess makes this process not dumpable: its /proc files (environ,
// mem, cwd, fd) become root's, so a process of the same uid cannot read
// tai's environment or memory, where its secrets are. Landlock already
// keeps a confined agent out of them; this holds with --sandbox off too,
// and for any other process of the user. (Root, with CAP_SYS_PTRACE,
// reads them anyway.) What tai starts is dumpable again from its exec.
func HideProcess() error { return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }
