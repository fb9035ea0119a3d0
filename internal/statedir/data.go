package statedir

import (
	"os"
	"path/filepath"
)

// Data is where tai keeps work an agent writes in, outside its state (which
// no agent may write): a worker's clones and worktrees.
// $XDG_DATA_HOME/tai, or ~/.local/share/tai.
func Data(elem ...string) string {
	base := os.Getenv("XDG_DATA_HOME")
	if !filepath.IsAbs(base) {
		if home, err := os.UserHomeDir(); err == nil {
			base = filepath.Join(home, ".local", "share")
		} else {
			base = filepath.Join(os.TempDir(), "tai-data")
		}
	}
	return filepath.Join(append([]string{base, "tai"}, elem...)...)
}
