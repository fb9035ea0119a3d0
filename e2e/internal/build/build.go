// Package build compiles the binaries tai's end-to-end tests run (the real
// tai, and test programs, with the race detector when TAI_E2E_RACE is set)
// and runs them to their end.
package build

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tai-dev/tai/internal/testutil"
)

// Binaries builds each package (an import path) and returns a new
// temporary directory for the tests' files (remove it when done) and the
// paths of the binaries, in order. They are built into that directory, or,
// when TAI_E2E_BIN_CACHE names a directory, once into it for every e2e
// package of the run (scripts/test.sh makes one per run of the suite):
// the race build of tai takes minutes on a busy machine, and each package
// paid it.
func Binaries(prefix string, pkgs ...string) (dir string, bins []string, err error) {
	dir, err = os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	race := os.Getenv("TAI_E2E_RACE") != ""
	cache := os.Getenv("TAI_E2E_BIN_CACHE")
	for _, pkg := range pkgs {
		var bin string
		if cache != "" {
			bin, err = cached(cache, pkg, race)
		} else {
			bin = filepath.Join(dir, binName(pkg))
			err = buildTo(bin, pkg, race)
		}
		if err != nil {
			os.RemoveAll(dir)
			return "", nil, err
		}
		bins = append(bins, bin)
	}
	return dir, bins, nil
}

// cached is pkg's binary in the cache directory, built by whichever test
// process gets there first; the others wait on its lock.
func cached(cache, pkg string, race bool) (string, error) {
	// A directory per variant: the binary keeps its name, which tests
	// rely on (tai's agent presets and dialects go by the command's name).
	variant := "plain"
	if race {
		variant = "race"
	}
	if err := os.MkdirAll(filepath.Join(cache, variant), 0o700); err != nil {
		return "", err
	}
	bin := filepath.Join(cache, variant, binName(pkg))
	lock, err := os.OpenFile(bin+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	// Built aside and renamed: a build cut short leaves no binary.
	if err := buildTo(bin+".tmp", pkg, race); err != nil {
		return "", err
	}
	return bin, os.Rename(bin+".tmp", bin)
}

// binName is the binary's name as go install would give it: the last
// element of the import path that is not a major version (nats-server/v2
// is nats-server).
func binName(pkg string) string {
	base := path.Base(pkg)
	if v, ok := strings.CutPrefix(base, "v"); ok && v != "" && strings.Trim(v, "0123456789") == "" {
		return path.Base(path.Dir(pkg))
	}
	return base
}

func buildTo(bin, pkg string, race bool) error {
	// tai_testhooks: the binaries honour test hooks such as
	// TAI_TEST_NO_LANDLOCK (a kernel without Landlock).
	args := []string{"build", "-tags", "tai_testhooks", "-o", bin}
	if race && strings.HasPrefix(pkg, "github.com/tai-dev/tai/") {
		// The binaries under test carry the race detector too (not the
		// third-party programs they run).
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s: %w", pkg, err)
	}
	return nil
}

// Tai is the import path of the tai command.
const Tai = "github.com/tai-dev/tai/cmd/tai"

// NATSServer is the import path of nats-server, at the version go.mod
// pins: the program tai hub runs (TAI_NATS_SERVER).
const NATSServer = "github.com/nats-io/nats-server/v2"

// Main is an e2e package's TestMain: it builds pkgs, hands the binaries to
// use, runs the tests and removes the binaries.
func Main(m *testing.M, prefix string, use func(dir string, bins []string), pkgs ...string) {
	dir, bins, err := Binaries(prefix, pkgs...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	use(dir, bins)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Outcome is a finished run of a binary.
type Outcome struct {
	Stdout, Stderr string
	Code           int
}

// Run runs bin with args in dir and env to its end. The deadline only
// guards against a hang in the binary; no test asserts on time.
func Run(t testing.TB, bin, dir string, env []string, args ...string) Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s: %v", filepath.Base(bin), err)
	}
	return Outcome{out.String(), errb.String(), code}
}

// Buffer collects what a running binary writes (its terminal, a pipe) for
// tests that read it while it is still being written.
type Buffer = testutil.Buffer
