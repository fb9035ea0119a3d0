//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// The launcher can start in a PID namespace and a mount namespace of its
// own (and a user namespace, where tai is not root, mapping the user to
// itself so that files keep their owner), as their PID 1: it mounts a
// /proc of that namespace before it enforces Landlock (which forbids
// mounts), so the agent and everything it starts see only their own
// processes, not the environments of the user's others (tai's, other
// runs', a hub's). PID 1 suits the launcher: it is already the reaper of
// everything below it, reads its signals from a signalfd, and when it
// dies the kernel kills the whole namespace.

// ownNamespaces makes cmd (the launcher) start in namespaces of its own.
func ownNamespaces(cmd *exec.Cmd) {
	a := *cmd.SysProcAttr // parentDeathSignal made it
	a.Cloneflags |= syscall.CLONE_NEWPID | syscall.CLONE_NEWNS
	if uid, gid := os.Geteuid(), os.Getegid(); uid != 0 {
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		a.GidMappingsEnableSetgroups = false
		// The user keeps its uid in the namespace, so the launcher keeps
		// no capability across its exec but those raised as ambient: the
		// one mounting /proc takes, which it drops before the agent
		// starts (dropCaps).
		a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
	}
	cmd.SysProcAttr = &a
}

// procRights are the rights on the new /proc: rightsRead, which
// everything outside the workspace has (the ruleset's rules are on the old
// /proc's inodes, so it gets one of its own).
const procRights = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir

// mountProc is the launcher's first job as PID 1 of its own namespace:
// its mounts made private (none of this reaches tai's), a /proc of the
// namespace over the old one, with a rule in the ruleset (-1: none).
func mountProc(ruleset int) error {
	if os.Getpid() != 1 {
		return nil
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("hiding processes: making mounts private: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("hiding processes: mounting /proc: %w", err)
	}
	if ruleset >= 0 {
		fd, err := unix.Open("/proc", unix.O_PATH|unix.O_CLOEXEC, 0)
		if err == nil {
			err = ll.LandlockAddPathBeneathRule(ruleset, &ll.PathBeneathAttr{AllowedAccess: procRights, ParentFd: fd}, 0)
			_ = unix.Close(fd)
		}
		if err != nil {
			return fmt.Errorf("hiding processes: a Landlock rule for /proc: %w", err)
		}
	}
	return dropCaps()
}

// dropCaps drops, where tai is not root, the capability the launcher was
// given in its user namespace to mount /proc: held by the agent, it could
// unmount it. The calling thread's, which forks the agent (the Go
// launcher's others never run the agent's code).
func dropCaps() error {
	if os.Geteuid() == 0 {
		return nil // root outside: the agent is root as it was
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("hiding processes: dropping ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		return fmt.Errorf("hiding processes: dropping capabilities: %w", err)
	}
	return nil
}

// canHide says whether a launcher here can start in namespaces of its own,
// found once per launcher by starting one that runs sh -c : (where user
// namespaces are off, or a container's masked /proc keeps a new one from
// being mounted, it cannot).
func canHide(exe, impl string) error {
	key := exe + "\x00" + impl
	v, _ := hideProbes.LoadOrStore(key, sync.OnceValue(func() error { return probeHide(exe, impl) }))
	return v.(func() error)()
}

var hideProbes sync.Map

func probeHide(exe, impl string) error {
	if exe == "" {
		exe = "/proc/self/exe"
	}
	sb := &Sandbox{exe: exe, impl: impl, hide: true}
	cmd := exec.Command("/bin/sh", "-c", ":")
	if cmd.Err != nil {
		return fmt.Errorf("processes visible: no /bin/sh to try a PID namespace with: %w", cmd.Err)
	}
	p, err := sb.Wrap(cmd)
	if err != nil {
		return fmt.Errorf("processes visible: %w", err)
	}
	err = p.Started(cmd.Start())
	werr := cmd.Wait()
	p.Release()
	var ee *exec.ExitError
	if err == nil && werr != nil && !errors.As(werr, &ee) {
		err = werr
	}
	if err != nil {
		return fmt.Errorf("processes visible: a PID namespace of its own cannot be had here: %w", err)
	}
	return nil
}
