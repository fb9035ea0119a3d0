// Package procattr holds the process attributes tai starts agents and their
// commands with, so that every child can be stopped as a group and none
// outlives tai.
package procattr

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
