package sandbox

import (
	"fmt"
	"strconv"
	"strings"
)

// Limits cap each process tree tai launches for an agent (the agent, each
// command it serves), on that tree's cgroup: a fork bomb or a runaway
// allocation ends inside it, not in the user's task limit or the kernel's
// OOM killer, which could pick tai. A zero field is no limit.
type Limits struct {
	Pids   int64 // pids.max: processes and threads
	Memory int64 // memory.max, bytes
}

// DefaultPids is the default pids.max: far above what an agent, its
// language servers and a parallel build use (a Node agent runs ~20
// threads, make -j of a big tree a few hundred), far below the user
// slice's default TasksMax (a third of the kernel's thread limit).
const DefaultPids = 4096

// DefaultLimits are the limits a run gets unless its policy says
// otherwise: DefaultPids, and memory at three quarters of the machine's
// (none where that is unknown), so that the
// runaway is OOM-killed in its cgroup while a quarter stays for tai and
// the rest of the machine. No fixed cap below that: a big build may
// rightly need most of a big machine.
func DefaultLimits() Limits {
	return Limits{Pids: DefaultPids, Memory: memTotal() / 4 * 3 &^ (1<<20 - 1)}
}

// LimitStatus is what the limits were on a run's launches, and what they
// caught.
type LimitStatus struct {
	// Pids and Memory are the limits in force (0: none).
	Pids   int64 `json:"pids"`
	Memory int64 `json:"memory"`
	// Via is the cgroup hierarchy that holds them: "cgroup2", "cgroup1"
	// (a hybrid layout, where pids and memory are v1 controllers), or
	// both joined by "+".
	Via string `json:"via,omitempty"`
	// Reason says why a limit asked for is not in force.
	Reason string `json:"reason,omitempty"`
	// PidsMaxHits counts the forks the pids limit refused (pids.events
	// "max"), OOMKills the processes the memory limit killed
	// (memory.events "oom_kill"), over the run's launches.
	PidsMaxHits int64 `json:"pids_max_hits,omitempty"`
	OOMKills    int64 `json:"oom_kills,omitempty"`
}

// ParseSize reads a memory size: bytes ("1073741824"), or a number with a
// binary unit (K, M, G, T, with or without "iB"; "4GiB", "512M"). "off"
// and "0" are 0: no limit.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "off" {
		return 0, nil
	}
	num := strings.TrimRight(t, "KMGTiBkmgtb")
	unit := strings.ToUpper(strings.TrimSuffix(strings.TrimSuffix(t[len(num):], "B"), "i"))
	shift := map[string]uint{"": 0, "K": 10, "M": 20, "G": 30, "T": 40}
	sh, ok := shift[unit]
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if !ok || err != nil || n < 0 || n > (1<<62)>>sh {
		return 0, fmt.Errorf("memory %q: want bytes or a size such as 4GiB or 512MiB, or off", s)
	}
	return n << sh, nil
}

// FormatSize spells a byte count with the largest binary unit that divides
// it ("4GiB"); 0 is "off".
func FormatSize(n int64) string {
	if n == 0 {
		return "off"
	}
	for _, u := range []struct {
		name  string
		shift uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// ProbeLimits says which of want a run here would have in force, and why
// not the others, for tai doctor. Like a run, it enables the controllers
// below tai's cgroup where it can.
func ProbeLimits(want Limits) LimitStatus {
	_, st := planLimits(want)
	return st
}

// CanHideProcesses says whether a run here would hide the user's other
// processes from its agent (Config.HideProcesses), and why not: where it
// cannot, the agent shares tai's PID namespace and /proc, and can read
// the command lines and, same uid, the environments (/proc/PID/environ)
// of the user's other processes, tai's included. For tai doctor: it
// starts a launcher once, as a run would.
func CanHideProcesses() (bool, string) {
	if err := canHide("", ""); err != nil {
		return false, err.Error()
	}
	return true, ""
}
