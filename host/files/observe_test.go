package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Observe reports what the agent wrote itself, confined like Read and
// Write: a symlink out of the workspace or a path outside is refused.
func TestObserve(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	s, err := New(ws)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := s.Observe(ctx, filepath.Join(ws, "a.txt"))
	if err != nil || res.Size != 6 || res.HashAfter != "sha256:5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03" {
		t.Fatalf("Observe(a.txt) = %+v, %v", res, err)
	}
	for _, p := range []string{filepath.Join(outside, "secret"), filepath.Join(ws, "link")} {
		var oe *OutsideError
		if _, err := s.Observe(ctx, p); !errors.As(err, &oe) {
			t.Errorf("Observe(%s) = %v, want an OutsideError", p, err)
		}
	}
	if _, err := s.Observe(ctx, ws); err == nil {
		t.Error("a directory was observed as a file")
	}
	if _, err := s.Observe(ctx, filepath.Join(ws, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
