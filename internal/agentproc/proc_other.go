//go:build !linux

package agentproc

import "syscall"

// setParentDeathSignal has no equivalent outside Linux; tai's own exit
// handling still stops the group.
func setParentDeathSignal(*syscall.SysProcAttr) {}
