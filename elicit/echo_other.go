//go:build !linux

package elicit

// echoOff leaves the terminal as it is where tai does not know its
// termios; term.ReadPassword still turns echo off for the read itself.
func echoOff(int) (restore func()) { return func() {} }
