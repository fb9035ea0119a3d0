//go:build !linux

package agentproc

// Proc identifies one process; process trees are only walked on Linux.
type Proc struct {
	pid, pgid int
	start     uint64
}

// Descendants is Linux-only (it reads /proc); elsewhere only the agent's
// process group is stopped.
func Descendants(int) []Proc { return nil }

func KillEscaped([]Proc, int) {}

// LiveDescendants is Linux-only too.
func LiveDescendants(int) []int { return nil }

// CPU is a sample of a process tree's CPU use (Linux only).
type CPU struct {
	Ticks   uint64
	Running int
}

// CPUOf is unknown off Linux.
func CPUOf(int) (CPU, bool) { return CPU{}, false }
