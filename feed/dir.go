package feed

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// SocketExt ends every feed socket's name: RUN.sock.
const SocketExt = ".sock"

// DefaultDir is where the feeds of this user's runs live:
// $XDG_RUNTIME_DIR/tai, or tai-UID in the temp directory without one.
func DefaultDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, "tai")
	}
	return tempDir()
}

// tempDir is the feed directory without XDG_RUNTIME_DIR.
func tempDir() string { return filepath.Join(os.TempDir(), fmt.Sprintf("tai-%d", os.Getuid())) }

// ensureDir makes dir (0700) and checks that it is this user's own
// directory, not a symlink or someone else's planted in a shared /tmp.
func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("feed directory: %w", err)
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("feed directory: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("feed directory %s is not a directory", dir)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Getuid() {
		return fmt.Errorf("feed directory %s belongs to uid %d, not to this user (%d)", dir, sys.Uid, os.Getuid())
	}
	if st.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("feed directory: %w", err)
		}
	}
	return nil
}

// Endpoint is one live run's feed.
type Endpoint struct {
	Run  string `json:"run"`
	Path string `json:"path"`
}

// List returns the feeds in dir that answer, by run id. Sockets left by
// runs that died (nothing listens on them) are removed.
func List(dir string) ([]Endpoint, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing feeds: %w", err)
	}
	var out []Endpoint
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, SocketExt) || e.Type()&os.ModeSocket == 0 {
			continue
		}
		p := filepath.Join(dir, name)
		if live(p) {
			out = append(out, Endpoint{Run: strings.TrimSuffix(name, SocketExt), Path: p})
		}
	}
	return out, nil
}

// live reports whether something listens on the socket at p, removing it
// when nothing does (its run died without cleaning up).
func live(p string) bool {
	c, err := net.DialTimeout("unix", p, time.Second)
	if err == nil {
		c.Close()
		return true
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		_ = os.Remove(p)
	}
	return false
}
