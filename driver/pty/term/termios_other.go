//go:build !linux

package term

import "errors"

// KeysCooked is known only on Linux.
func (p *Process) KeysCooked() (bool, error) {
	return false, errors.New("reading the pty's mode: not supported on this system")
}

// OutputPending knows only of a chunk being applied off Linux.
func (p *Process) OutputPending() bool { return p.inflight.Load() }
