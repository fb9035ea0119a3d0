package testutil

import (
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// EchoProbe is an output writer that records, for each write holding
// Marker (a prompt), whether the terminal FD echoed keys at that moment:
// for tests that a secret's prompt is written only once echo is off.
type EchoProbe struct {
	FD     int
	Marker string

	mu     sync.Mutex
	echoed []bool
}

func (e *EchoProbe) Write(b []byte) (int, error) {
	if strings.Contains(string(b), e.Marker) {
		tio, err := unix.IoctlGetTermios(e.FD, unix.TCGETS)
		e.mu.Lock()
		e.echoed = append(e.echoed, err != nil || tio.Lflag&unix.ECHO != 0)
		e.mu.Unlock()
	}
	return len(b), nil
}

// Echoed is, for each write of the marker so far, whether echo was on.
func (e *EchoProbe) Echoed() []bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]bool(nil), e.echoed...)
}

// EchoOn reports whether the terminal fd echoes keys.
func EchoOn(fd int) (bool, error) {
	tio, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return false, err
	}
	return tio.Lflag&unix.ECHO != 0, nil
}
