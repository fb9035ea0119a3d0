//go:build linux

package agentproc

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"syscall"
)

// Proc identifies one process across pid reuse: its start time (in clock
// ticks since boot) changes when the pid is recycled.
type Proc struct {
	pid, pgid int
	start     uint64
}

// statOf reads a process's parent, group, start time and state from
// /proc/PID/stat.
func statOf(pid int) (ppid int, p Proc, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, Proc{}, 0, false
	}
	// "pid (comm) state ppid pgrp session ... starttime(22nd) ...": comm
	// may hold spaces and parentheses, so split after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, Proc{}, 0, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 20 {
		return 0, Proc{}, 0, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgid, err2 := strconv.Atoi(string(f[2]))
	start, err3 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, Proc{}, 0, false
	}
	return ppid, Proc{pid: pid, pgid: pgid, start: start}, f[0][0], true
}

// Descendants lists the processes below root (children, grandchildren,
// ...), read from /proc. Agents such as Claude Code start their shells
// with setsid, outside the agent's process group, so signalling the group
// alone leaves those shells (and what they run) behind.
func Descendants(root int) []Proc {
	var out []Proc
	if walkChildren(root, func(pid int) {
		if _, p, _, ok := statOf(pid); ok {
			out = append(out, p)
		}
	}) {
		return out
	}
	return scanDescendants(root)
}

// LiveDescendants lists the pids below root that have not exited (zombies
// left out).
func LiveDescendants(root int) []int {
	var out []int
	if walkChildren(root, func(pid int) {
		if _, _, state, ok := statOf(pid); ok && state != 'Z' {
			out = append(out, pid)
		}
	}) {
		return out
	}
	for _, p := range scanDescendants(root) {
		if _, _, state, ok := statOf(p.pid); ok && state != 'Z' {
			out = append(out, p.pid)
		}
	}
	return out
}

// haveChildren says whether the kernel lists a task's children
// (/proc/PID/task/TID/children, CONFIG_PROC_CHILDREN).
var haveChildren = sync.OnceValue(func() bool {
	_, err := os.Stat("/proc/thread-self/children")
	return err == nil
})

// walkChildren calls f with each process below root, breadth first, read
// from the children lists of each process's threads: a handful of small
// reads, where a scan of /proc reads every process's stat. It reports
// false, having called nothing, where the kernel has no such lists.
func walkChildren(root int, f func(pid int)) bool {
	if !haveChildren() {
		return false
	}
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		dir := "/proc/" + strconv.Itoa(pid) + "/task/"
		tasks, err := os.ReadDir(dir)
		if err != nil {
			continue // gone
		}
		for _, t := range tasks {
			b, err := os.ReadFile(dir + t.Name() + "/children")
			if err != nil {
				continue
			}
			for _, field := range bytes.Fields(b) {
				if kid, err := strconv.Atoi(string(field)); err == nil {
					f(kid)
					queue = append(queue, kid)
				}
			}
		}
	}
	return true
}

// scanDescendants is Descendants by a scan of every process in /proc.
func scanDescendants(root int) []Proc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]Proc{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, p, _, ok := statOf(pid); ok {
			children[ppid] = append(children[ppid], p)
		}
	}
	var out []Proc
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
	}
	return out
}

// KillEscaped SIGKILLs the processes of tree that left the agent's process
// group (agentPgid, which the caller kills as a whole) and are still alive.
// A group whose leader is in tree is killed whole, so that what an escaped
// shell started later goes too; any other escaped process alone. tai's own
// group is never signalled.
func KillEscaped(tree []Proc, agentPgid int) {
	own := syscall.Getpgrp()
	leaders := map[int]bool{}
	for _, p := range tree {
		if p.pid == p.pgid {
			leaders[p.pgid] = true
		}
	}
	for _, p := range tree {
		if p.pgid == agentPgid {
			continue
		}
		_, now, state, ok := statOf(p.pid)
		if !ok || now.start != p.start || state == 'Z' {
			continue // gone, reused, or dead and waiting to be reaped
		}
		if leaders[now.pgid] && now.pgid != own && now.pgid != agentPgid {
			_ = syscall.Kill(-now.pgid, syscall.SIGKILL)
		}
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
}

// CPU is a sample of a process tree's CPU use.
type CPU struct {
	// Ticks is the CPU time, in 1/100 s, that the tree has used so far,
	// including children already reaped (the root's cutime and cstime).
	Ticks uint64
	// Running counts the tree's processes running or ready to run (state
	// R) at the sample: on a loaded machine a busy process may get little
	// CPU, but it is still runnable, where an idle TUI sleeps.
	Running int
}

// CPUOf samples root and everything below it. Its growth, or a runnable
// process, says a silent process tree is still computing.
func CPUOf(root int) (CPU, bool) {
	t, st, ok := cpuOf(root, true)
	if !ok {
		return CPU{}, false
	}
	c := CPU{Ticks: t}
	if st == 'R' {
		c.Running++
	}
	for _, p := range Descendants(root) {
		if t, st, ok := cpuOf(p.pid, false); ok {
			c.Ticks += t
			if st == 'R' {
				c.Running++
			}
		}
	}
	return c, true
}

func cpuOf(pid int, reaped bool) (uint64, byte, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 15 {
		return 0, 0, false
	}
	// After the comm: state(0) ppid pgrp session tty tpgid flags minflt
	// cminflt majflt cmajflt utime(11) stime(12) cutime(13) cstime(14).
	n := 13
	if reaped {
		n = 15
	}
	var total uint64
	for _, x := range f[11:n] {
		v, err := strconv.ParseInt(string(x), 10, 64)
		if err != nil || v < 0 {
			return 0, 0, false
		}
		total += uint64(v)
	}
	return total, f[0][0], true
}
