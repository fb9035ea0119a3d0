package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	tests := []struct {
		name string
		old  string // "" for no file before
		perm os.FileMode
	}{
		{"new file", "", 0o600},
		{"replaces", "old content that is longer", 0o644},
	}
	for _, tt := range tests {
		for _, w := range []struct {
			name  string
			write func(string, []byte, os.FileMode) error
		}{{"Write", Write}, {"Replace", Replace}} {
			t.Run(w.name+"/"+tt.name, func(t *testing.T) { testWrite(t, w.write, tt.old, tt.perm) })
		}
	}
}

func testWrite(t *testing.T, write func(string, []byte, os.FileMode) error, old string, perm os.FileMode) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.json")
	if old != "" {
		if err := os.WriteFile(p, []byte(old), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	if err := write(p, []byte("new"), perm); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil || string(got) != "new" {
		t.Fatalf("content %q, %v; want new", got, err)
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != perm {
		t.Errorf("mode %v, want %v", fi.Mode().Perm(), perm)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("%d entries left in the directory, want 1 (no temporary file)", len(ents))
	}
}

func TestWriteMissingDir(t *testing.T) {
	p := filepath.Join(t.TempDir(), "no", "f")
	if err := Write(p, []byte("x"), 0o600); err == nil {
		t.Fatal("no error for a missing directory")
	}
}
