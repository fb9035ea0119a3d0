//go:build linux

package agentproc

import (
	"bufio"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// An agent that starts a command with setsid (as Claude Code does for its
// Bash tool) puts it outside its process group: killing the group misses
// it, KillEscaped does not.
func TestKillEscaped(t *testing.T) {
	cmd := exec.Command("sh", "-c", `setsid sleep 600 & echo $!; exec sleep 600`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the escaped pid: %v", err)
	}
	escaped, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	// The background child calls setsid after it was forked: wait for it
	// to have left the group.
	var tree []Proc
	poll(func() bool {
		tree = Descendants(cmd.Process.Pid)
		for _, p := range tree {
			if p.pid == escaped && p.pgid != cmd.Process.Pid {
				return true
			}
		}
		return false
	})
	if !slices.ContainsFunc(tree, func(p Proc) bool { return p.pid == escaped && p.pgid != cmd.Process.Pid }) {
		t.Fatalf("process %d is not among the descendants outside the group: %+v", escaped, tree)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	KillEscaped(tree, cmd.Process.Pid)
	for _, p := range tree {
		if p.pgid == cmd.Process.Pid {
			continue
		}
		// Killed processes linger as zombies until reaped; they are dead.
		alive := func() bool {
			_, now, state, ok := statOf(p.pid)
			return ok && now.start == p.start && state != 'Z'
		}
		poll(func() bool { return !alive() })
		if alive() {
			t.Errorf("process %d (group %d) outside the agent's group survived", p.pid, p.pgid)
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
}

// poll waits for another process to get somewhere: up to 10 s, checking
// every 10 ms. Callers check the condition again afterwards.
func poll(cond func() bool) {
	for range 1000 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A silent tree whose grandchild computes shows its CPU time growing, and
// a tree that only sleeps shows next to none: what the PTY driver reads as
// "still working" when the screen says nothing.
func TestCPUOf(t *testing.T) {
	busy := exec.Command("sh", "-c", `sh -c 'while :; do :; done' & exec sleep 600`)
	busy.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = syscall.Kill(-busy.Process.Pid, syscall.SIGKILL)
		_ = busy.Wait()
	}()
	first, ok := CPUOf(busy.Process.Pid)
	if !ok {
		t.Fatal("no CPU figure for a live process")
	}
	grew, ran := false, false
	poll(func() bool {
		now, _ := CPUOf(busy.Process.Pid)
		grew, ran = grew || now.Ticks > first.Ticks+5, ran || now.Running > 0
		return grew && ran
	})
	if !grew || !ran {
		t.Fatalf("a spinning grandchild: ticks grew %v, seen runnable %v", grew, ran)
	}
	idle := exec.Command("sleep", "600")
	if err := idle.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = idle.Process.Kill(); _ = idle.Wait() }()
	poll(func() bool { c, _ := CPUOf(idle.Process.Pid); return c.Running == 0 })
	if c, _ := CPUOf(idle.Process.Pid); c.Running != 0 {
		t.Errorf("a sleeping process counted as running: %+v", c)
	}
	if _, ok := CPUOf(1 << 30); ok {
		t.Error("a process that does not exist has a CPU figure")
	}
}

// The children lists of each process's threads give the tree a scan of
// all of /proc gives, grandchildren included.
func TestDescendantsFromChildrenLists(t *testing.T) {
	if !haveChildren() {
		t.Skip("the kernel has no /proc/PID/task/TID/children")
	}
	cmd := exec.Command("sh", "-c", `sh -c 'sleep 30 & echo x; wait' & sleep 30 & echo y; read _; kill 0`)
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}()
	rd := bufio.NewReader(out)
	for range 2 { // both shells have forked their sleeps
		if _, err := rd.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	pids := func(ps []Proc) []int {
		var out []int
		for _, p := range ps {
			out = append(out, p.pid)
		}
		slices.Sort(out)
		return out
	}
	got, want := pids(Descendants(cmd.Process.Pid)), pids(scanDescendants(cmd.Process.Pid))
	if len(want) < 3 || !slices.Equal(got, want) {
		t.Fatalf("from the children lists %v, from a scan %v (want 3 or more)", got, want)
	}
	live := LiveDescendants(cmd.Process.Pid)
	slices.Sort(live)
	if !slices.Equal(live, want) {
		t.Fatalf("live %v, want %v", live, want)
	}
	_ = stdin.Close()
}
