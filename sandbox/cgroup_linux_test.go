//go:build linux

package sandbox

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestCgroup2FromMountinfo(t *testing.T) {
	for _, tc := range []struct {
		name, table, want string
	}{
		{"none", "", ""},
		{"usual", "22 1 0:20 / /sys rw - sysfs sysfs rw\n" +
			"30 22 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n", "/sys/fs/cgroup"},
		{"optional fields", "35 24 0:30 / /mnt/cg rw,relatime shared:9 master:2 - cgroup2 none rw\n", "/mnt/cg"},
		{"v1 only", "31 22 0:27 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n", ""},
		{"first of two", "40 1 0:40 / /a rw - cgroup2 x rw\n41 1 0:41 / /b rw - cgroup2 y rw\n", "/a"},
		{"torn line", "40 1 0:40 / /a rw cgroup2\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cgroup2FromMountinfo(strings.NewReader(tc.table)); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// The statfs shortcut finds the mount the mountinfo table lists.
func TestCgroup2MountAgreesWithMountinfo(t *testing.T) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	var mounts []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := cgroup2FromMountinfo(strings.NewReader(sc.Text())); m != "" {
			mounts = append(mounts, m)
		}
	}
	got := cgroup2Mount()
	if got == "" {
		if len(mounts) > 0 {
			t.Fatalf("found no cgroup2 mount; mountinfo lists %q", mounts)
		}
		return
	}
	for _, m := range mounts {
		if m == got {
			return
		}
	}
	t.Fatalf("cgroup2 mount %q is not among mountinfo's %q", got, mounts)
}

// A launcher SIGKILLed before it killed its agent leaves the agent's tree
// in the cgroup: releaseCgroup kills it and removes the cgroup, once the
// kernel says it is empty.
func TestReleaseCgroupKillsWhatIsLeft(t *testing.T) {
	// The shell forks its child only once it is in the cgroup (it waits
	// for a line first): a child forked before the move would stay
	// outside, where no cgroup.kill reaches.
	cmd := exec.Command("sh", "-c", "read go; sleep 600 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if !waited {
			_ = cmd.Wait()
		}
	}()
	cg := newCgroup(cmd.Process.Pid)
	if cg == nil {
		t.Skip("no writable cgroup v2 here")
	}
	cg.closeFds()
	if err := os.WriteFile(filepath.Join(cg.dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
		_ = os.Remove(cg.dir)
		t.Fatal(err)
	}
	if _, err := start.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	// The child is in the cgroup when the shell waits for it; the kill
	// takes both either way, and the cgroup's emptiness is the check.
	releaseCgroup(cg.dir)
	if _, err := os.Stat(cg.dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the cgroup is still there: %v", err)
	}
	var ee *exec.ExitError
	err = cmd.Wait()
	waited = true
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the shell was not killed: %v", err)
	}
}

func TestPopulated(t *testing.T) {
	for _, tc := range []struct {
		events string
		want   int
	}{
		{"populated 1\nfrozen 0\n", 1},
		{"populated 0\nfrozen 0\n", 0},
		{"frozen 0\n", -1},
		{"", -1},
		{"populated x\n", -1},
	} {
		if got := populated([]byte(tc.events)); got != tc.want {
			t.Errorf("populated(%q) = %d, want %d", tc.events, got, tc.want)
		}
	}
}
