package readlimit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
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
