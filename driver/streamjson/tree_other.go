//go:build !linux

package streamjson

// proc identifies one process; process trees are only walked on Linux.
type proc struct {
	pid, pgid int
	start     uint64
}

// descendants is Linux-only (it reads /proc); elsewhere only the agent's
// process group is stopped.
func descendants(int) []proc { return nil }

func killEscaped([]proc, int) {}
