package app

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestWidenPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	size := func() int {
		n, err := unix.FcntlInt(w.Fd(), unix.F_GETPIPE_SZ, 0)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if b, _ := os.ReadFile("/proc/sys/fs/pipe-max-size"); os.Geteuid() != 0 && strings.TrimSpace(string(b)) != strconv.Itoa(stdoutPipeBytes) {
		t.Skipf("pipe-max-size is %q here", b)
	}
	before := size()
	widenPipe(w)
	if got := size(); got < stdoutPipeBytes {
		t.Fatalf("pipe of %d bytes after widenPipe (was %d), want %d", got, before, stdoutPipeBytes)
	}
	// Not a pipe: left alone, and no harm done.
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	widenPipe(f)
	widenPipe(os.Stderr)
	if _, err := f.WriteString("ok"); err != nil {
		t.Fatal(err)
	}
}
