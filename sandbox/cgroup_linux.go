//go:build linux

package sandbox

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
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
func sweepCgroups() {
	own := ownCgroup()
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
