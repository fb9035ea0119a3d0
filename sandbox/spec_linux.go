//go:build linux

package sandbox

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// specSocket makes the spec's socket pair: tai's end (a descriptor, for
// sendmsg) and the launcher's (fd 3 in it).
func specSocket() (int, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, nil, err
	}
	return fds[0], os.NewFile(uintptr(fds[1]), "spec"), nil
}

// sendWithRights writes b whole to the socket fd, the descriptors riding
// on its first bytes. MSG_NOSIGNAL: a launcher gone early is an EPIPE,
// not a signal.
func sendWithRights(fd int, b []byte, fds []int) error {
	oob := unix.UnixRights(fds...)
	for len(b) > 0 {
		n, err := unix.SendmsgN(fd, b, oob, nil, unix.MSG_NOSIGNAL)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		b, oob = b[n:], nil
	}
	return nil
}

func closeFd(fd int) {
	if fd >= 0 {
		_ = unix.Close(fd)
	}
}
