// Package agentproc is how tai starts and stops the processes it runs for
// agents (the agents themselves, their TUIs, the commands they ask for):
// each in a process group of its own that can be stopped whole, none
// outliving tai, and their exit and stderr described the same way by every
// driver.
package agentproc

import "syscall"

// Group returns attributes for a child in a process group of its own, so
// that signalling -pid stops it and everything it started. On Linux the
// child is also killed when tai dies, even by kill -9.
func Group() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(a)
	return a
}

// Session returns attributes for a child that leads a new session with the
// given terminal as its controlling terminal (a TUI in a PTY).
func Session() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setsid: true, Setctty: true}
	setParentDeathSignal(a)
	return a
}
