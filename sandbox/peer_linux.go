//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Confined reports whether pid runs inside an agent's sandbox, and why:
// its cgroup is one tai made for an agent (tai-LAUNCHER), or it or one of
// its ancestors is a launcher. Landlock leaves no mark in /proc, but every
// confined process is below a launcher (a child subreaper, so orphans
// stay below it) and, where cgroup v2 is writable, in its agent's cgroup
// (which it cannot leave: the hierarchy is not writable in the sandbox).
// What cannot be read counts as confined: the answer must be proved.
func Confined(pid int) (bool, string) {
	if pid <= 0 {
		return true, fmt.Sprintf("no peer pid (%d)", pid)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return true, fmt.Sprintf("pid %d: %v", pid, err)
	}
	if cg, ok := agentCgroup(b); ok {
		return true, fmt.Sprintf("pid %d is in the agent cgroup %s", pid, cg)
	}
	seen := map[int]bool{}
	for p := pid; p > 1 && !seen[p]; {
		seen[p] = true
		if isLauncher(p) {
			if p == pid {
				return true, fmt.Sprintf("pid %d is tai's launcher", pid)
			}
			return true, fmt.Sprintf("pid %d runs below tai's launcher (pid %d)", pid, p)
		}
		pp, err := parentOf(p)
		if err != nil {
			return true, fmt.Sprintf("pid %d: its ancestor %d: %v", pid, p, err)
		}
		p = pp
	}
	return false, ""
}

// agentCgroup finds, in a /proc/PID/cgroup, a cgroup v2 path with an
// agent's cgroup in it (newCgroup's tai-LAUNCHER).
func agentCgroup(b []byte) (string, bool) {
	for _, line := range strings.Split(string(b), "\n") {
		p, ok := strings.CutPrefix(line, "0::")
		if !ok {
			continue
		}
		for _, el := range strings.Split(p, "/") {
			if n, ok := strings.CutPrefix(el, "tai-"); ok && n != "" {
				if _, err := strconv.Atoi(n); err == nil {
					return p, true
				}
			}
		}
	}
	return "", false
}

// isLauncher reports whether pid runs `tai __tai-launch` (launcher.go
// starts it with exactly those arguments).
func isLauncher(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := bytes.Split(bytes.TrimSuffix(b, []byte{0}), []byte{0})
	return len(args) == 2 && string(args[1]) == Arg
}

// parentOf is pid's PPid.
func parentOf(pid int) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "PPid:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, errors.New("no PPid in its status")
}

// ConfinedPeer reports whether the other end of c is inside an agent's
// sandbox, and why. On a Unix socket the peer is the pid the kernel gave
// with SO_PEERCRED; on TCP, every process holding the peer's socket when
// it is on this host (found through /proc/net/tcp{,6}). A TCP peer not
// on this host is not an agent's. Anything that cannot be proved counts as
// confined.
func ConfinedPeer(c net.Conn) (bool, string) {
	switch cc := c.(type) {
	case *net.UnixConn:
		pid, pidfd, err := peerPid(cc)
		if err != nil {
			return true, fmt.Sprintf("peer credentials: %v", err)
		}
		if pidfd >= 0 {
			defer unix.Close(pidfd)
		}
		if in, why := Confined(pid); in {
			return in, why
		}
		// The pid was read from /proc by number: had the peer exited, and
		// its pid gone to another process, the check spoke of that one.
		if pidfd >= 0 && errors.Is(unix.PidfdSendSignal(pidfd, 0, nil, 0), unix.ESRCH) {
			return true, fmt.Sprintf("pid %d exited before it could be checked", pid)
		}
		return false, ""
	case *net.TCPConn:
		local, err1 := netip.ParseAddrPort(cc.LocalAddr().String())
		remote, err2 := netip.ParseAddrPort(cc.RemoteAddr().String())
		if err := errors.Join(err1, err2); err != nil {
			return true, fmt.Sprintf("peer address: %v", err)
		}
		return confinedTCP(local, remote)
	}
	return true, fmt.Sprintf("a %T's peer cannot be checked", c)
}

// soPeerPidfd is SO_PEERPIDFD (Linux 6.5) where it is asm-generic's.
const soPeerPidfd = 77

// peerPid is the peer's pid from SO_PEERCRED and, where the kernel has
// it, a pidfd of that very process (else -1) to close.
func peerPid(c *net.UnixConn) (int, int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, -1, err
	}
	var cred *unix.Ucred
	var cerr error
	pidfd := -1
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		switch runtime.GOARCH {
		case "amd64", "arm64", "386", "arm", "riscv64", "loong64", "ppc64", "ppc64le", "s390x":
			if pfd, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, soPeerPidfd); err == nil {
				pidfd = pfd
			}
		}
	}); err != nil {
		return 0, -1, err
	}
	if cerr != nil {
		if pidfd >= 0 {
			_ = unix.Close(pidfd)
		}
		return 0, -1, cerr
	}
	return int(cred.Pid), pidfd, nil
}

// confinedTCP finds the peer's socket (local address remote, remote
// address local) and checks every process that holds it.
func confinedTCP(local, remote netip.AddrPort) (bool, string) {
	local = netip.AddrPortFrom(local.Addr().Unmap(), local.Port())
	remote = netip.AddrPortFrom(remote.Addr().Unmap(), remote.Port())
	inode, found, err := tcpInode(remote, local)
	switch {
	case err != nil:
		return true, fmt.Sprintf("peer %s: %v", remote, err)
	case !found && isLocal(remote.Addr()):
		return true, fmt.Sprintf("peer %s is on this host but its socket is gone", remote)
	case !found:
		return false, "" // another host: no agent of ours
	case inode == 0:
		return true, fmt.Sprintf("peer %s's socket has no owner", remote)
	}
	pids, err := socketOwners(inode)
	if err != nil {
		return true, fmt.Sprintf("peer %s: %v", remote, err)
	}
	if len(pids) == 0 {
		return true, fmt.Sprintf("peer %s: no process of this user holds its socket", remote)
	}
	for _, pid := range pids {
		if in, why := Confined(pid); in {
			return true, why
		}
	}
	return false, ""
}

// tcpInode looks the connection from→to up in /proc/net/tcp and tcp6.
func tcpInode(from, to netip.AddrPort) (uint64, bool, error) {
	for _, name := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(name)
		if errors.Is(err, os.ErrNotExist) {
			continue // no IPv6
		}
		if err != nil {
			return 0, false, err
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 {
				continue
			}
			l, ok1 := parseProcAddr(fs[1])
			r, ok2 := parseProcAddr(fs[2])
			if !ok1 || !ok2 || l != from || r != to {
				continue
			}
			f.Close()
			inode, err := strconv.ParseUint(fs[9], 10, 64)
			return inode, true, err
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return 0, false, err
		}
	}
	return 0, false, nil
}

// parseProcAddr reads /proc/net/tcp's ADDR:PORT: the address as 32-bit
// words in the host's byte order, the port big-endian, all in hex.
func parseProcAddr(s string) (netip.AddrPort, bool) {
	a, p, ok := strings.Cut(s, ":")
	port, err := strconv.ParseUint(p, 16, 16)
	if !ok || err != nil || (len(a) != 8 && len(a) != 32) {
		return netip.AddrPort{}, false
	}
	raw, err := hex.DecodeString(a)
	if err != nil {
		return netip.AddrPort{}, false
	}
	b := make([]byte, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(b[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	addr, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), true
}

// isLocal reports whether a is an address of this host.
func isLocal(a netip.Addr) bool {
	if a.IsLoopback() || a.IsUnspecified() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true // unknown: local, so refused
	}
	for _, ia := range addrs {
		if n, ok := ia.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap() == a {
				return true
			}
		}
	}
	return false
}

// socketOwners lists the processes with a descriptor on socket inode.
func socketOwners(inode uint64) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	want := "socket:[" + strconv.FormatUint(inode, 10) + "]"
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		dir := filepath.Join("/proc", e.Name(), "fd")
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue // gone, or another user's
		}
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && l == want {
				out = append(out, pid)
				break
			}
		}
	}
	return out, nil
}
