// Package atomicfile writes a file so that a reader, even after a crash,
// sees either its old content or the new, never a part: the one way tai
// replaces a file it owns.
package atomicfile

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
)

// Write writes data to a temporary file in path's directory (which must
// exist) with permission perm, fsyncs it, renames it over path and fsyncs
// the directory so the rename survives a crash.
func Write(path string, data []byte, perm os.FileMode) error {
	return write(path, data, perm, true)
}

// Replace is Write without the fsyncs: readers still see the old content
// or the new, never a part, and a killed process loses nothing, but a
// crash of the machine may leave the old content, or an empty file. It is
// for a file tai rebuilds when it is unreadable (a worktree's record,
// rebuilt from git), where two fsyncs would be most of the write's cost.
func Replace(path string, data []byte, perm os.FileMode) error {
	return write(path, data, perm, false)
}

func write(path string, data []byte, perm os.FileMode, sync bool) error {
	dir := filepath.Dir(path)
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(dir, fmt.Sprintf(".%s.tmp-%x", filepath.Base(path), rnd))
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		// O_CREATE's mode is masked by the umask; perm is what was asked.
		err = f.Chmod(perm)
	}
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if !sync {
		return nil
	}
	// Best effort: the new content is in place either way.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
