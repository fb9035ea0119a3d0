package app

import (
	"os"

	"golang.org/x/sys/unix"
)

// StdoutClosed reports whether tai was started with stdout closed (`tai …
// >&-`). The Go runtime opens /dev/null read-write on a closed 0, 1 or 2
// before main, so that no file takes their numbers; a shell's
// `> /dev/null` opens it write-only, which is output thrown away on
// purpose, not lost.
func StdoutClosed() bool {
	if l, err := os.Readlink("/proc/self/fd/1"); err != nil || l != os.DevNull {
		return false
	}
	fl, err := unix.FcntlInt(1, unix.F_GETFL, 0)
	return err == nil && fl&unix.O_ACCMODE == unix.O_RDWR
}
