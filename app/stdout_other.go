//go:build !linux

package app

// StdoutClosed is false where tai cannot tell (see the Linux one).
func StdoutClosed() bool { return false }
