package secretenv

import (
	"testing"

	"golang.org/x/sys/unix"
)

// A hidden process is not dumpable: its /proc files are root's, and a
// process of the same uid (an agent) reads neither its environ nor its
// memory.
func TestHideProcess(t *testing.T) {
	if err := HideProcess(); err != nil {
		t.Fatal(err)
	}
	d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil || d != 0 {
		t.Fatalf("dumpable = %d, %v; want 0", d, err)
	}
}
