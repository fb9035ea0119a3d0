package readlimit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		path string
		max  int64
		bad  bool
	}{
		{"under", small, 11, false},
		{"exactly", small, 10, false},
		{"over", small, 9, true},
		{"endless", "/dev/zero", Config, true},
	} {
		b, err := ReadFile(tc.path, tc.max)
		if tc.bad {
			var tl *TooLargeError
			if !errors.As(err, &tl) || !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "larger than") {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err != nil || string(b) != "0123456789" {
			t.Errorf("%s: %q %v", tc.name, b, err)
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "nope"), 1); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// A file an agent may have written is read only when it is a regular file:
// a FIFO in its place is refused at once (ReadFile would wait for a
// writer), a device too (it would read without end), a symlink to a
// regular file is followed.
func TestReadRegularFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(small, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		ok         bool
	}{
		{"regular", small, true},
		{"symlink to regular", link, true},
		{"fifo", fifo, false},
		{"device", "/dev/zero", false},
		{"directory", dir, false},
	} {
		b, err := ReadRegularFile(tc.path, Config)
		if tc.ok != (err == nil) || tc.ok && string(b) != "0123456789" {
			t.Errorf("%s: %q %v", tc.name, b, err)
		}
	}
}
