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

// limitPlan is empty: no cgroups outside Linux.
type limitPlan struct{}

func planLimits(Limits) (limitPlan, LimitStatus) {
	return limitPlan{}, LimitStatus{Reason: "no cgroups outside Linux"}
}

type v1Cgroups struct {
	dir        [2]string
	join, home [2]int
}

func (limitPlan) limit(*cgroup, int) (v1Cgroups, error) {
	return v1Cgroups{join: [2]int{-1, -1}, home: [2]int{-1, -1}}, nil
}

func (*v1Cgroups) closeFds() {}

func (limitPlan) caught(string, [2]string) (int64, int64) { return 0, 0 }

func (limitPlan) sweepV1() {}

func removeV1([2]string) {}

func memTotal() int64 { return 0 }

func canHide(string, string) error { return ErrUnsupported }
