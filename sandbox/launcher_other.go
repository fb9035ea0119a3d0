//go:build !linux

package sandbox

import "os/exec"

// Launching is false: the launcher is Linux only.
func Launching() bool { return false }

// Main is never called outside Linux.
func Main() int { return 125 }

// ABI is 0: no Landlock outside Linux.
func ABI() int { return 0 }

func restrict(*rules) (int, error) { return 0, ErrUnsupported }

func releaseCgroup(string) {}

func sweepCgroups() {}

func parentDeathSignal(*exec.Cmd) {}

func cgroupMountHint() string { return "" }
