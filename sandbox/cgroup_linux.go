//go:build linux

package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// cgroup is an agent's cgroup v2 directory, which tai makes below its own
// for each launcher (named after the launcher's pid) and hands to it. The
// launcher starts the agent straight into it (clone3 CLONE_INTO_CGROUP), so
// nothing the agent forks is ever outside; cgroup.kill then kills all of
// it at once, and the launcher, which stays outside, lives on to reap.
type cgroup struct {
	dir   string
	dirFd int // -1 when none
	kill  int // cgroup.kill; -1 before Linux 5.14: the subreaper's kill still holds
}

// newCgroup makes the cgroup of the launcher pid where the cgroup v2
// hierarchy is mounted and writable; nil where not.
func newCgroup(launcher int) *cgroup {
	own := ownCgroup()
	if own == "" {
		return nil
	}
	dir := filepath.Join(own, "tai-"+strconv.Itoa(launcher))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil
	}
	df, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(dir)
		return nil
	}
	c := &cgroup{dir: dir, dirFd: df, kill: -1}
	if kf, err := unix.Open(filepath.Join(dir, "cgroup.kill"), unix.O_WRONLY|unix.O_CLOEXEC, 0); err == nil {
		c.kill = kf
	}
	return c
}

// closeFds closes tai's copies of the descriptors once they are sent.
func (c *cgroup) closeFds() {
	if c == nil {
		return
	}
	for _, fd := range []*int{&c.dirFd, &c.kill} {
		if *fd >= 0 {
			_ = unix.Close(*fd)
			*fd = -1
		}
	}
}

// ownCgroup is the directory of this process's cgroup v2; "" where there
// is none. tai's cgroup is its launchers' (they inherit it).
var ownCgroup = sync.OnceValue(func() string {
	mnt := cgroup2Mount()
	if mnt == "" {
		return ""
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if r, ok := strings.CutPrefix(line, "0::"); ok && r != "" {
			return filepath.Join(mnt, r)
		}
	}
	return ""
})

// sweepCgroups removes the empty cgroups of launchers that are gone: tai
// removes each one when its launcher has been waited for, but not after
// it was killed -9.
func sweepCgroups() { sweepDir(ownCgroup()) }

// sweepDir removes the empty cgroups of launchers that are gone below own.
func sweepDir(own string) {
	if own == "" {
		return
	}
	ents, _ := os.ReadDir(own)
	for _, e := range ents {
		pid, ok := strings.CutPrefix(e.Name(), "tai-")
		if !ok || !e.IsDir() {
			continue
		}
		if _, err := strconv.Atoi(pid); err != nil {
			continue
		}
		if _, err := os.Stat("/proc/" + pid); err == nil {
			continue // that launcher still runs
		}
		_ = os.Remove(filepath.Join(own, e.Name())) // fails while not empty
	}
}

// cgroup2Mount is where the cgroup v2 hierarchy is mounted, found once:
// at its usual place by one statfs, elsewhere from mountinfo (which the
// kernel renders whole, a mount table's worth of work on every start).
var cgroup2Mount = sync.OnceValue(func() string {
	// systemd's unified layout, then its hybrid one.
	for _, usual := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		var st unix.Statfs_t
		if unix.Statfs(usual, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			return usual
		}
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	return cgroup2FromMountinfo(f)
})

// cgroup2FromMountinfo is the mount point of the first cgroup2 file
// system in a mountinfo table; "" when it has none.
func cgroup2FromMountinfo(r io.Reader) string {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		// "id parent maj:min root mountpoint opts ... - fstype source superopts"
		l := sc.Text()
		i := strings.Index(l, " - ")
		if i < 0 {
			continue
		}
		post := strings.Fields(l[i+3:])
		pre := strings.Fields(l[:i])
		if len(post) > 0 && post[0] == "cgroup2" && len(pre) > 4 {
			return pre[4]
		}
	}
	return ""
}

// releaseCgroup kills what is left in a launcher's cgroup (only when the
// launcher was killed before it could) and removes it.
func releaseCgroup(dir string) {
	if !strings.Contains(filepath.Base(dir), "tai-") {
		return
	}
	if err := os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
		return
	}
	_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	waitUnpopulated(dir)
	_ = os.Remove(dir)
}

// waitUnpopulated returns once the kernel says the cgroup at dir holds no
// process ("populated 0" in cgroup.events, whose change wakes a poll for
// POLLPRI), rather than retrying the rmdir on a timer. Ten quiet polls of
// 100 ms are the bound for a process stuck in the kernel: the rmdir then
// fails, and sweepCgroups removes the cgroup later.
func waitUnpopulated(dir string) {
	f, err := os.Open(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		return
	}
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	var buf [256]byte
	_ = rc.Read(func(fd uintptr) bool {
		for range 10 {
			// A read marks the events seen: a change after it makes the
			// poll return at once, so none is missed in between.
			n, err := unix.Pread(int(fd), buf[:], 0)
			if err != nil || populated(buf[:n]) <= 0 {
				return true
			}
			_, _ = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLPRI}}, 100)
		}
		return true
	})
}

// populated is cgroup.events' populated value (-1 if it has none).
func populated(events []byte) int {
	for _, line := range strings.Split(string(events), "\n") {
		if v, ok := strings.CutPrefix(line, "populated "); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				return n
			}
		}
	}
	return -1
}

// controller is one limit as each cgroup hierarchy spells it.
type controller struct {
	name         string // the controller
	v2Max, v1Max string // the file that holds the limit
	v2Ev, v1Ev   string // the file that counts what it caught
	counter      string // the counter there
}

// controllers are pids and memory, in the order of limitPlan's arrays.
var controllers = [2]controller{
	{name: "pids", v2Max: "pids.max", v1Max: "pids.max", v2Ev: "pids.events", v1Ev: "pids.events", counter: "max"},
	{name: "memory", v2Max: "memory.max", v1Max: "memory.limit_in_bytes", v2Ev: "memory.events", v1Ev: "memory.oom_control", counter: "oom_kill"},
}

// limitPlan is how a run's limits go on each launch's cgroup: per
// controller its value (0: none) and, where the controller is a cgroup v1
// one (systemd's hybrid layout, this machine's when pids and memory are
// bound to v1 hierarchies), the v1 cgroup the launches' are made below.
type limitPlan struct {
	value  [2]int64
	v1Home [2]string // "": cgroup v2, the launch's own cgroup
}

// planLimits finds where each limit can be set, and says which are in
// force and why the others are not. A v2 controller must be enabled in
// the cgroup.subtree_control of tai's own cgroup (the launches' parent):
// tai enables it where the cgroup offers it, which the kernel allows for
// pids always and for memory only where tai's cgroup holds no process
// (its root, or a delegated cgroup tai is not itself in).
func planLimits(want Limits) (limitPlan, LimitStatus) {
	var p limitPlan
	var st LimitStatus
	var reasons, via []string
	for i, c := range controllers {
		v := [2]int64{want.Pids, want.Memory}[i]
		if v <= 0 {
			continue
		}
		err := enableV2(ownCgroup(), c.name)
		if err == nil {
			p.value[i] = v
			via = appendNew(via, "cgroup2")
		} else if home, err1 := cgroup1Home(c.name); err1 == nil {
			p.value[i], p.v1Home[i] = v, home
			via = appendNew(via, "cgroup1")
		} else {
			reasons = append(reasons, fmt.Sprintf("%s: %v", c.name, err))
		}
	}
	st.Pids, st.Memory = p.value[0], p.value[1]
	st.Via = strings.Join(via, "+")
	st.Reason = strings.Join(reasons, "; ")
	return p, st
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// enableV2 makes the controller name available to the cgroups tai makes
// below own.
func enableV2(own, name string) error {
	if own == "" {
		return errors.New("no writable cgroup v2 hierarchy")
	}
	sub, err := os.ReadFile(filepath.Join(own, "cgroup.subtree_control"))
	if err != nil {
		return fmt.Errorf("tai's cgroup %s: %w", own, err)
	}
	if hasWord(sub, name) {
		return nil
	}
	ctl, _ := os.ReadFile(filepath.Join(own, "cgroup.controllers"))
	if !hasWord(ctl, name) {
		return fmt.Errorf("the controller is not available to tai's cgroup %s (not in its parent's cgroup.subtree_control)", own)
	}
	if err := os.WriteFile(filepath.Join(own, "cgroup.subtree_control"), []byte("+"+name), 0); err != nil {
		if errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("cannot enable it below tai's cgroup %s, which holds processes (run tai in a cgroup of its own with the controller delegated, e.g. systemd-run --user --scope -p Delegate=yes)", own)
		}
		return fmt.Errorf("enabling it below tai's cgroup %s: %w", own, err)
	}
	return nil
}

func hasWord(b []byte, w string) bool {
	for _, f := range strings.Fields(string(b)) {
		if f == w {
			return true
		}
	}
	return false
}

// cgroup1Home is this process's cgroup in the v1 hierarchy that has the
// controller name, where tai may make cgroups; an error where there is
// none.
func cgroup1Home(name string) (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	mnt := cgroup1FromMountinfo(f, name)
	f.Close()
	if mnt == "" {
		return "", errors.New("no cgroup v2 controller and no cgroup v1 hierarchy has it")
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	path, ok := cgroup1Path(string(b), name)
	if !ok {
		return "", fmt.Errorf("/proc/self/cgroup has no %s hierarchy", name)
	}
	dir := filepath.Join(mnt, path)
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return "", fmt.Errorf("cgroup v1 %s: %w", dir, err)
	}
	return dir, nil
}

// cgroup1FromMountinfo is the mount point of the cgroup v1 hierarchy that
// has the controller name ("" when none does).
func cgroup1FromMountinfo(r io.Reader, name string) string {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		l := sc.Text()
		i := strings.Index(l, " - ")
		if i < 0 {
			continue
		}
		post := strings.Fields(l[i+3:])
		pre := strings.Fields(l[:i])
		if len(post) > 2 && post[0] == "cgroup" && len(pre) > 4 && slices.Contains(strings.Split(post[2], ","), name) {
			return pre[4]
		}
	}
	return ""
}

// cgroup1Path is the path, in /proc/self/cgroup's text, of the v1
// hierarchy with the controller name ("8:pids:/user.slice").
func cgroup1Path(text, name string) (string, bool) {
	for _, line := range strings.Split(text, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && slices.Contains(strings.Split(parts[1], ","), name) {
			return parts[2], true
		}
	}
	return "", false
}

// limit puts the plan's limits on the launch: the v2 ones in its cgroup c
// (nil where none could be made), the v1 ones in cgroups made for it below
// each v1 home, which the agent joins as it starts (the launcher gets
// their tasks files, and the home's to go back to, see spec.go). An
// error is a limit the launch would run without.
func (pl limitPlan) limit(c *cgroup, launcher int) (v1 v1Cgroups, err error) {
	v1 = v1Cgroups{join: [2]int{-1, -1}, home: [2]int{-1, -1}}
	for i, ctl := range controllers {
		if pl.value[i] <= 0 {
			continue
		}
		val := []byte(strconv.FormatInt(pl.value[i], 10))
		if pl.v1Home[i] == "" {
			if c == nil {
				return v1, fmt.Errorf("%s: no cgroup for the launch", ctl.name)
			}
			if err := os.WriteFile(filepath.Join(c.dir, ctl.v2Max), val, 0); err != nil {
				return v1, fmt.Errorf("%s: %w", ctl.name, err)
			}
			continue
		}
		dir := filepath.Join(pl.v1Home[i], "tai-"+strconv.Itoa(launcher))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return v1, fmt.Errorf("%s: %w", ctl.name, err)
		}
		v1.dir[i] = dir
		if err := os.WriteFile(filepath.Join(dir, ctl.v1Max), val, 0); err != nil {
			return v1, fmt.Errorf("%s: %w", ctl.name, err)
		}
		// tasks, not cgroup.procs: "0" there moves the writing thread
		// only, the one that forks the agent (the Go launcher has others).
		if v1.join[i], err = unix.Open(filepath.Join(dir, "tasks"), unix.O_WRONLY|unix.O_CLOEXEC, 0); err != nil {
			return v1, fmt.Errorf("%s: %w", ctl.name, err)
		}
		if v1.home[i], err = unix.Open(filepath.Join(pl.v1Home[i], "tasks"), unix.O_WRONLY|unix.O_CLOEXEC, 0); err != nil {
			return v1, fmt.Errorf("%s: %w", ctl.name, err)
		}
	}
	return v1, nil
}

// v1Cgroups are a launch's cgroup v1 cgroups, per controller: its dir ("":
// none), its tasks file and the home's (-1: none).
type v1Cgroups struct {
	dir        [2]string
	join, home [2]int
}

// closeFds closes tai's copies of the descriptors once they are sent.
func (v *v1Cgroups) closeFds() {
	for i := range 2 {
		for _, fd := range []*int{&v.join[i], &v.home[i]} {
			if *fd >= 0 {
				_ = unix.Close(*fd)
				*fd = -1
			}
		}
	}
}

// caught reads what the plan's limits caught in a launch's cgroups (v2
// dir, v1 dirs): forks refused, processes OOM-killed.
func (pl limitPlan) caught(dir string, v1 [2]string) (pidsMax, oomKills int64) {
	var n [2]int64
	for i, ctl := range controllers {
		if pl.value[i] <= 0 {
			continue
		}
		path := filepath.Join(dir, ctl.v2Ev)
		if pl.v1Home[i] != "" {
			path = filepath.Join(v1[i], ctl.v1Ev)
		}
		if dir == "" && pl.v1Home[i] == "" || v1[i] == "" && pl.v1Home[i] != "" {
			continue
		}
		b, _ := os.ReadFile(path)
		n[i] = counter(b, ctl.counter)
	}
	return n[0], n[1]
}

// counter is the value of a "name N" line (0 when none).
func counter(b []byte, name string) int64 {
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// removeV1 removes a launch's v1 cgroups, empty once its launcher has
// been waited for (the v2 cgroup's kill, or the launcher's, took the
// tree); sweepCgroups retries one that is not.
func removeV1(dirs [2]string) {
	for _, d := range dirs {
		if d != "" && strings.HasPrefix(filepath.Base(d), "tai-") {
			_ = os.Remove(d)
		}
	}
}

// sweepV1 removes the empty v1 cgroups of launchers that are gone.
func (pl limitPlan) sweepV1() {
	for _, home := range pl.v1Home {
		if home != "" {
			sweepDir(home)
		}
	}
}

// memTotal is the machine's memory in bytes (0 when unknown).
func memTotal() int64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}
