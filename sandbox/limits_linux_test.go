//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// limited is a sandbox with limits, or a skip where the machine has
// neither a v2 nor a v1 controller tai may use (the status says why).
func limited(t *testing.T, l launcher, want Limits) *Sandbox {
	t.Helper()
	sb, err := New(Config{Mode: ModeAuto, Write: []string{t.TempDir()}, Exe: os.Args[0], Limits: want})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	l.apply(sb)
	if ls := sb.Status().Limits; ls == nil || ls.Pids != want.Pids || ls.Memory != want.Memory {
		t.Skipf("limits %+v not in force here: %+v", want, ls)
	}
	return sb
}

// A fork bomb's forks stop at its cgroup's pids.max, which holds the
// agent from its first instruction (the launcher starts it in it), and the
// status counts the forks refused. Each sleep holds its pid until the
// launcher kills the tree once sh has ended (dash ends at a failed fork).
func TestPidsLimitHoldsTheTree(t *testing.T) {
	launchers(t, func(t *testing.T, l launcher) {
		sb := limited(t, l, Limits{Pids: 8})
		cmd := exec.Command("/bin/sh", "-c", `n=0; while [ $n -lt 32 ]; do sleep 1000 & n=$((n+1)); echo $n; done`)
		out, _ := runWrapped(t, sb, cmd)
		started := strings.Count(out, "\n")
		if started >= 8 {
			t.Errorf("%d sleeps started under pids.max 8", started)
		}
		if ls := sb.Status().Limits; ls.PidsMaxHits < 1 {
			t.Errorf("status %+v: no fork refused", ls)
		}
	})
}

// The memory limit is on the agent's cgroup, in whichever hierarchy has
// the controller; so is the pids limit, and tai's own cgroups are not the
// agent's.
func TestLimitsAreOnTheAgentsCgroups(t *testing.T) {
	launchers(t, func(t *testing.T, l launcher) {
		sb := limited(t, l, Limits{Pids: 100, Memory: 64 << 20})
		cmd := exec.Command("/bin/sh", "-c", "cat /proc/self/cgroup")
		p, err := sb.Wrap(cmd)
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		cmd.Stdout = &out
		if err := p.Started(cmd.Start()); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		defer p.Release()
		own, _ := os.ReadFile("/proc/self/cgroup")
		for i, c := range controllers {
			file, dir := c.v2Max, p.cgroup
			if home := sb.plan.v1Home[i]; home != "" {
				file, dir = c.v1Max, p.v1[i]
				mine, _ := cgroup1Path(string(own), c.name)
				theirs, _ := cgroup1Path(out.String(), c.name)
				if theirs == mine || !strings.HasSuffix(dir, theirs) {
					t.Errorf("%s: the agent is in %q, tai in %q, its cgroup is %s", c.name, theirs, mine, dir)
				}
			}
			b, err := os.ReadFile(filepath.Join(dir, file))
			if want := strconv.FormatInt(sb.plan.value[i], 10); err != nil || strings.TrimSpace(string(b)) != want {
				t.Errorf("%s: %s/%s = %q (%v), want %s", c.name, dir, file, b, err, want)
			}
		}
	})
}

func TestCgroup1FromMountinfo(t *testing.T) {
	const info = `25 1 0:23 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755
26 25 0:24 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
27 25 0:25 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
28 25 0:26 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	for _, tc := range []struct{ name, want string }{
		{"pids", "/sys/fs/cgroup/pids"}, {"cpuacct", "/sys/fs/cgroup/cpu,cpuacct"}, {"memory", ""},
	} {
		if got := cgroup1FromMountinfo(strings.NewReader(info), tc.name); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	const self = "9:name=systemd:/\n8:pids:/user.slice\n4:memory,hugetlb:/a/b\n0::/\n"
	for _, tc := range []struct {
		name, want string
		ok         bool
	}{{"pids", "/user.slice", true}, {"memory", "/a/b", true}, {"cpu", "", false}} {
		if got, ok := cgroup1Path(self, tc.name); got != tc.want || ok != tc.ok {
			t.Errorf("%s: %q %v", tc.name, got, ok)
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"0", 0, false}, {"off", 0, false}, {"4096", 4096, false}, {"4GiB", 4 << 30, false},
		{"512M", 512 << 20, false}, {"512MiB", 512 << 20, false}, {"1T", 1 << 40, false}, {"2k", 2 << 10, false},
		{"", 0, true}, {"-1", 0, true}, {"4GB2", 0, true}, {"lots", 0, true}, {"99999999999T", 0, true}, {"1.5G", 0, true},
	} {
		got, err := ParseSize(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v", tc.in, got, err)
		}
	}
	for n, want := range map[int64]string{0: "off", 4 << 30: "4GiB", 1536 << 20: "1536MiB", 1000: "1000"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// A process that outgrows its cgroup's memory limit is OOM-killed there,
// and the status counts it; the shell that ran it goes on.
func TestMemoryLimitKillsInTheCgroup(t *testing.T) {
	launchers(t, func(t *testing.T, l launcher) {
		sb := limited(t, l, Limits{Memory: 32 << 20})
		// dd's one 128 MiB buffer, filled from /dev/zero.
		cmd := exec.Command("/bin/sh", "-c", "dd if=/dev/zero of=/dev/null bs=128M count=1 2>/dev/null; echo dd $?")
		out, err := runWrapped(t, sb, cmd)
		if err != nil || strings.TrimSpace(out) != "dd 137" {
			t.Errorf("out %q (%v), want dd killed by SIGKILL (137)", out, err)
		}
		if ls := sb.Status().Limits; ls.OOMKills < 1 {
			t.Errorf("status %+v: no OOM kill counted", ls)
		}
	})
}

// enableV2 on a directory playing a cgroup: enabled already, offered (tai
// enables it), not offered, not a cgroup.
func TestEnableV2(t *testing.T) {
	for _, tc := range []struct {
		name, subtree, controllers string
		ok                         bool
		wrote                      string
	}{
		{"enabled", "cpu pids\n", "cpu pids memory\n", true, "cpu pids\n"},
		{"offered", "cpu\n", "cpu pids memory\n", true, "+pids"},
		{"not offered", "", "cpu memory\n", false, ""},
		{"no cgroup", "-", "", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.subtree != "-" {
				for f, v := range map[string]string{"cgroup.subtree_control": tc.subtree, "cgroup.controllers": tc.controllers} {
					if err := os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			err := enableV2(dir, "pids")
			if (err == nil) != tc.ok {
				t.Fatalf("err %v, want ok=%v", err, tc.ok)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control")); tc.ok && string(b) != tc.wrote {
				t.Errorf("subtree_control %q, want %q", b, tc.wrote)
			}
		})
	}
	if err := enableV2("", "pids"); err == nil {
		t.Error("no cgroup v2: no error")
	}
}
