//go:build linux

package sandbox

import (
	"fmt"
	"sync"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// ABI is the kernel's Landlock ABI version; 0 where there is none (or a
// test says so). The kernel's answer is asked once: a run asks several
// times, and a system call is dear on some machines.
func ABI() int {
	if testNoLandlock {
		return 0
	}
	return kernelABI()
}

var kernelABI = sync.OnceValue(func() int {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return 0
	}
	return int(v)
})

// handledFS are the filesystem rights tai's rules speak of: all of ABI 5
// (ioctl on devices included). Later ones (connecting to UNIX sockets by
// path) stay allowed.
var handledFS = landlock.V5.HandledAccessFS

// scoped are the IPC scopes every ruleset sets (ABI 6 on; best effort
// drops them before): an agent can neither signal a process outside its
// sandbox (SIGSTOP tai, so that --timeout, Ctrl-C and answers wait on it;
// kill another agent) nor connect to an abstract Unix socket bound outside
// it (a desktop's X11 and D-Bus). Its launcher is in its domain, and the
// kernel's own signals (SIGCHLD, a terminal's) are not checked.
var scoped = landlock.ScopedSet(ll.ScopeAbstractUnixSocket | ll.ScopeSignal)

// ruleset builds the Landlock ruleset of r, in best effort (an older ABI
// enforces what it knows), for a launcher to enforce on itself before it
// starts the agent. fd is -1 where there is nothing to enforce. tai builds
// it, not the launcher: planning walks directories, and the launcher
// should do no more than a few system calls (launcher_linux.c).
func ruleset(r *rules) (fd int, flags uint32, err error) {
	planned, err := Plan(r.Grants)
	if err != nil {
		return -1, 0, err
	}
	var rs []landlock.Rule
	for _, p := range planned {
		if lr, ok := toLandlock(p); ok {
			rs = append(rs, lr)
		}
	}
	cfg := landlock.Config{HandledAccessFS: handledFS, Scoped: scoped}
	if r.Net {
		cfg.HandledAccessNet = landlock.AccessNetSet(ll.AccessNetConnectTCP)
		for _, port := range r.Ports {
			rs = append(rs, landlock.ConnectTCP(port))
		}
	}
	fd, flags, err = cfg.BestEffort().NewRulesetFD(rs...)
	if err != nil {
		return -1, 0, fmt.Errorf("landlock: %w", err)
	}
	return fd, flags, nil
}

const (
	rightsList  = landlock.AccessFSSet(ll.AccessFSReadDir)
	rightsRead  = landlock.AccessFSSet(ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir)
	rightsFile  = landlock.AccessFSSet(ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev)
	rightsFileR = landlock.AccessFSSet(ll.AccessFSExecute | ll.AccessFSReadFile)
)

// rightsDirW is all of handledFS but making device nodes, which even root
// must not do: one would open the disk.
var rightsDirW = handledFS &^ landlock.AccessFSSet(ll.AccessFSMakeChar|ll.AccessFSMakeBlock)

// toLandlock spells a planned rule with go-landlock's rights: directories
// get directory rights, files only file rights (Landlock refuses others).
func toLandlock(p Rule) (landlock.Rule, bool) {
	switch {
	case p.Dir && p.Access == Write:
		// Refer: moving files between directories of the workspace; ioctl
		// for /dev/pts.
		return landlock.PathAccess(rightsDirW, p.Path).IgnoreIfMissing(), true
	case p.Dir && p.Access == Read:
		return landlock.PathAccess(rightsRead, p.Path).IgnoreIfMissing(), true
	case p.Dir && p.Access == List:
		return landlock.PathAccess(rightsList, p.Path).IgnoreIfMissing(), true
	case !p.Dir && p.Access == Write:
		return landlock.PathAccess(rightsFile, p.Path).IgnoreIfMissing(), true
	case !p.Dir && p.Access == Read:
		return landlock.PathAccess(rightsFileR, p.Path).IgnoreIfMissing(), true
	}
	return nil, false
}
