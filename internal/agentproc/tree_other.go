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
