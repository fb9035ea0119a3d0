//go:build !linux

package sandbox

import "net"

// Confined is false: outside Linux tai confines no agent (no launcher, no
// cgroup), so no process is inside a sandbox of its own.
func Confined(int) (bool, string) { return false, "" }

// ConfinedPeer is false, as Confined.
func ConfinedPeer(net.Conn) (bool, string) { return false, "" }
