//go:build !linux

package sandbox

import (
	"os"
	"os/exec"
)

// Launching is false: the launcher is Linux only.
func Launching() bool { return false }

// Main is never called outside Linux.
func Main() int { return 125 }

// ABI is 0: no Landlock outside Linux.
func ABI() int { return 0 }

func ruleset(*rules) (int, uint32, error) { return -1, 0, ErrUnsupported }

type cgroup struct {
	dir         string
	dirFd, kill int
}

func newCgroup(int) *cgroup { return nil }

func (c *cgroup) closeFds() {}

func specSocket() (int, *os.File, error) { return -1, nil, ErrUnsupported }

func sendWithRights(int, []byte, []int) error { return ErrUnsupported }

func closeFd(int) {}

func releaseCgroup(string) {}

func sweepCgroups() {}

func parentDeathSignal(*exec.Cmd) {}
