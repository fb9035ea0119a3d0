// Package readlimit reads the files tai reads for itself (policy and config
// TOML, --mcp @FILE, plans, scripts) with a size limit, so that a huge or
// endless file (/dev/zero, a pipe without end) is an error at once instead
// of memory growing until the process is killed; and the files an agent
// may have written only when they are regular files (ReadRegularFile).
package readlimit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// Limits for the files tai reads. Each is far above any real file of its
// kind.
const (
	Config = 1 << 20  // policy.toml, config.toml, --mcp @FILE
	Plan   = 4 << 20  // fleet plans and their prompt files
	Script = 16 << 20 // built-in agent and model server scripts
	Stdin  = 64 << 20 // a prompt read from stdin (tai run -)
	State  = 64 << 20 // state tai keeps for itself (policy memory)
)

// TooLargeError is a file over its limit.
type TooLargeError struct {
	Name string
	Max  int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %s: not read", e.Name, human(e.Max))
}

// ErrTooLarge matches every *TooLargeError with errors.Is.
var ErrTooLarge = errors.New("file too large")

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// ReadFile reads path, at most max bytes. It never reads more than max+1
// bytes, whatever the file is.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, path, max)
}

// ReadRegularFile is ReadFile for a file an agent may have written (its
// credentials, an installed package.json): only a regular file is read.
// A FIFO or device put in its place is refused without blocking, where
// ReadFile would wait for a writer or read without end.
func ReadRegularFile(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s): not read", path, fi.Mode().Type())
	}
	return Read(f, path, max)
}

// Read reads r to its end, at most max bytes; name is the error's.
func Read(r io.Reader, name string, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, &TooLargeError{Name: name, Max: max}
	}
	return b, nil
}

func human(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
