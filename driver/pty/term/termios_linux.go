package term

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// KeysCooked reports whether the PTY's line discipline is in canonical
// mode: the kernel, not the application, is reading the keys (line by
// line, echoing them). A TUI reads keys in raw mode; back in canonical
// mode, it has exited or is between processes (gemini restarts itself
// after its trust dialog), and keys typed now are lost. On a PTY master
// the mode ioctls act on the slave, so the master's fd shows the app's
// mode.
func (p *Process) KeysCooked() (bool, error) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if p.closed {
		return false, fmt.Errorf("reading the pty's mode: %w", os.ErrClosed)
	}
	rc, err := p.ptmx.SyscallConn()
	if err != nil {
		return false, fmt.Errorf("reading the pty's mode: %w", err)
	}
	var t *unix.Termios
	var ierr error
	if err := rc.Control(func(fd uintptr) { t, ierr = unix.IoctlGetTermios(int(fd), unix.TCGETS) }); err != nil {
		return false, fmt.Errorf("reading the pty's mode: %w", err)
	}
	if ierr != nil {
		return false, fmt.Errorf("reading the pty's mode: %w", ierr)
	}
	return t.Lflag&unix.ICANON != 0, nil
}

// OutputPending reports whether the application wrote output that has
// not reached the Screen and Output yet: bytes waiting in the PTY, or a
// chunk being applied. An app that printed its answer and went back to
// waiting for input is at rest before tai has read what it printed (on a
// busy machine, for long), so its rest says nothing until then.
func (p *Process) OutputPending() bool {
	if p.inflight.Load() {
		return true
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if p.closed {
		return false
	}
	rc, err := p.ptmx.SyscallConn()
	if err != nil {
		return false
	}
	n, ierr := 0, error(nil)
	if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); err != nil || ierr != nil {
		return false
	}
	return n > 0 || p.inflight.Load()
}
