// Package build compiles the binaries tai's end-to-end tests run: the real
// tai, and test programs, with the race detector when TAI_E2E_RACE is set.
package build

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
)

// Binaries builds each package (an import path) into a new temporary
// directory and returns the directory (remove it when done) and the paths
// of the binaries, in order.
func Binaries(prefix string, pkgs ...string) (dir string, bins []string, err error) {
	dir, err = os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	for _, pkg := range pkgs {
		bin := filepath.Join(dir, path.Base(pkg))
		args := []string{"build", "-o", bin}
		if os.Getenv("TAI_E2E_RACE") != "" {
			// The binaries under test carry the race detector too.
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, pkg)...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			os.RemoveAll(dir)
			return "", nil, fmt.Errorf("building %s: %w", pkg, err)
		}
		bins = append(bins, bin)
	}
	return dir, bins, nil
}

// Tai is the import path of the tai command.
const Tai = "github.com/tai-dev/tai/cmd/tai"
