//go:build unix

package audit

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes a non-blocking exclusive flock so two writers (two tai
// processes resuming the same run, say) cannot interleave lines and break
// the chain. The lock is released when the file is closed.
func lockFile(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		lerr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
	}); err != nil {
		return err
	}
	if errors.Is(lerr, syscall.EWOULDBLOCK) {
		return ErrLocked
	}
	return lerr
}
