//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/tai-dev/tai/internal/agentproc"
)

// Launching reports whether this process was started as the launcher.
// cmd/tai checks it first thing, before any flag parsing. Where tai is
// built with cgo the native launcher (launcher_linux.c) has done the job
// before Go started, and this is false but in tests of the Go launcher.
func Launching() bool { return len(os.Args) == 2 && os.Args[1] == Arg }

// Main is the Go launcher, for builds without cgo: it becomes a subreaper,
// reads the spec and its descriptors, enforces the Landlock ruleset tai
// built, starts the agent with its own stdio (into its cgroup where tai
// made one), and waits. It returns only on a failure before the agent
// started; otherwise it exits as the agent did.
func Main() int {
	cloexecAll()
	rep := os.NewFile(fdReport, "report")
	fail := func(format string, a ...any) int {
		b, _ := json.Marshal(report{Error: fmt.Sprintf(format, a...)})
		_, _ = rep.Write(append(b, '\n'))
		return 125
	}
	// tai started us with SIGUSR2 as the parent-death signal, which we
	// catch to kill what we hold (a SIGKILL would orphan the tree). tai
	// may already be gone: the control pipe then reads EOF at once.
	died := make(chan os.Signal, 1)
	signal.Notify(died, parentDied)
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(parentDied), 0, 0, 0); err != nil {
		return fail("pdeathsig: %v", err)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail("subreaper: %v", err)
	}
	sp, err := readSpec(fdSpec)
	if err != nil {
		return fail("%v", err)
	}
	if sp.Hide { // tai asks this of the native launcher only (canHide)
		closeAll([]int{sp.Ruleset, sp.CgDir, sp.CgKill, sp.Join[0], sp.Join[1], sp.Home[0], sp.Home[1]})
		return fail("hiding processes: not in the Go launcher")
	}
	// Signals to the group are the agent's to act on; the launcher
	// outlives the agent whatever it is sent (SIGKILL aside).
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)

	if sp.Ruleset >= 0 {
		// Main runs locked to the main thread (init, below), which forks
		// the agent: that thread's Landlock domain is the agent's. The
		// launcher's other threads run only its own code.
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fail("landlock: no_new_privs: %v", err)
		}
		if err := ll.LandlockRestrictSelf(sp.Ruleset, sp.Restrict); err != nil {
			return fail("landlock: restricting: %v", err)
		}
		_ = unix.Close(sp.Ruleset)
	}
	var kill *os.File
	if sp.CgKill >= 0 {
		kill = os.NewFile(uintptr(sp.CgKill), "cgroup.kill")
	}
	// The agent gets our stdio as is, and our session and process group:
	// for a TUI that keeps the PTY as its controlling terminal and it in
	// the foreground.
	attr := &os.ProcAttr{
		Env:   sp.Env,
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	}
	if sp.CgDir >= 0 {
		attr.Sys.UseCgroupFD, attr.Sys.CgroupFD = true, sp.CgDir
	}
	// The agent must start in its cgroup v1 cgroups (limitPlan): os.
	// StartProcess has no hook in the child, so the launcher's main
	// thread, which forks it (init locks Main to it), joins them for the
	// start, the agent inheriting them, and goes back after; its other
	// threads never leave.
	if err := joinV1(sp.Join); err != nil {
		return fail("starting %s: joining its cgroup v1: %v", sp.Args[0], err)
	}
	proc, err := os.StartProcess(sp.Path, sp.Args, attr)
	if err != nil && sp.CgDir >= 0 && !errors.Is(err, os.ErrNotExist) {
		// clone3 into a cgroup refused (an older kernel, a seccomp
		// filter): the subreaper alone still holds the tree.
		attr.Sys.UseCgroupFD = false
		proc, err = os.StartProcess(sp.Path, sp.Args, attr)
		if kill != nil {
			kill.Close()
			kill = nil
		}
		_ = unix.Close(sp.CgDir)
		sp.CgDir = -1
	}
	// Back home, out of the agent's limits, whatever the start did: a
	// failure here leaves the launcher counted in them, no worse.
	_ = joinV1(sp.Home)
	closeAll([]int{sp.Join[0], sp.Join[1], sp.Home[0], sp.Home[1]})
	if err != nil {
		return fail("starting %s: %v", sp.Args[0], err)
	}
	if sp.CgDir >= 0 {
		_ = unix.Close(sp.CgDir)
	}
	dropStdio() // before the report: once tai has it, we hold none of the agent's stdio
	b, _ := json.Marshal(report{Pid: proc.Pid, InCgroup: attr.Sys.UseCgroupFD})
	_, _ = rep.Write(append(b, '\n'))
	rep.Close()

	agentDone := make(chan syscall.WaitStatus, 1)
	go reap(proc.Pid, agentDone)
	ctlEOF := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(io.Discard, os.NewFile(fdCtl, "ctl"))
		ctlEOF <- struct{}{}
	}()
	var ws syscall.WaitStatus
	for done := false; !done; {
		select {
		case ws = <-agentDone:
			done = true
		case <-died:
			ctlEOF <- struct{}{}
		case <-ctlEOF:
			_ = syscall.Kill(proc.Pid, syscall.SIGKILL)
			killTree(kill)
			ws = <-agentDone
			done = true
		case <-sigs:
		}
	}
	killTree(kill)
	exitAs(ws)
	return 0
}

// dropStdio lets go of the agent's stdio once it runs with its own copies
// (launcher_linux.c's drop_stdio): held here, an agent that closes its
// stdout and lives on would never give tai the EOF that ends its output.
func dropStdio() {
	nul, err := unix.Open(os.DevNull, unix.O_RDWR|unix.O_CLOEXEC, 0)
	for fd := range 3 {
		if err != nil || unix.Dup2(nul, fd) != nil {
			_ = unix.Close(fd)
		}
	}
	if err == nil && nul > 2 {
		_ = unix.Close(nul)
	}
}

// cloexecAll marks every descriptor from 3 up close-on-exec: the agent
// gets its stdio and nothing else, not even what tai itself inherited.
func cloexecAll() {
	if unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	ents, _ := os.ReadDir("/proc/self/fd") // before Linux 5.11
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}

// readSpec reads the spec on fd to its EOF, with the descriptors that came
// with it.
func readSpec(fd int) (launchSpec, error) {
	var data []byte
	var fds []int
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(7*4)) // at most 7 descriptors (spec.go)
	for {
		n, oobn, flags, _, err := unix.Recvmsg(fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			closeAll(fds)
			return launchSpec{}, fmt.Errorf("reading the spec: %w", err)
		}
		if oobn > 0 {
			msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
			if err == nil {
				for _, m := range msgs {
					if got, err := unix.ParseUnixRights(&m); err == nil {
						fds = append(fds, got...)
					}
				}
			}
		}
		if flags&unix.MSG_CTRUNC != 0 {
			closeAll(fds)
			return launchSpec{}, errors.New("reading the spec: descriptors cut off")
		}
		if n == 0 {
			break
		}
		if len(data)+n > maxSpec {
			closeAll(fds)
			return launchSpec{}, fmt.Errorf("reading the spec: over %d bytes", maxSpec)
		}
		data = append(data, buf[:n]...)
	}
	_ = unix.Close(fd)
	sp, err := decodeSpec(data, fds)
	if err != nil {
		closeAll(fds)
	}
	return sp, err
}

func closeAll(fds []int) {
	for _, fd := range fds {
		if fd >= 0 {
			_ = unix.Close(fd)
		}
	}
}

// joinV1 moves this thread into the cgroups whose tasks files are open at
// procs (-1: none): "0" is the writer.
func joinV1(procs [2]int) error {
	for _, fd := range procs {
		if fd < 0 {
			continue
		}
		if _, err := unix.Write(fd, []byte("0")); err != nil {
			return err
		}
	}
	return nil
}

// parentDied is the signal the launcher gets when tai dies.
const parentDied = syscall.SIGUSR2

// reaped carries the agent's status; every other child is reaped and
// dropped. The loop ends when there are no children left.
var reaperDone = make(chan struct{})

func reap(agent int, agentDone chan<- syscall.WaitStatus) {
	defer close(reaperDone)
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return // ECHILD: nothing left
		}
		if pid == agent {
			agentDone <- ws
		}
	}
}

// killTree SIGKILLs every descendant until none is left: orphans are
// reparented to us (the subreaper), so "no children" means nothing
// escaped. cgroup.kill, where tai made a cgroup, kills atomically, forks in
// flight included.
func killTree(cgKill *os.File) {
	for {
		if cgKill != nil {
			_, _ = cgKill.Write([]byte("1"))
		}
		kids := descendants(os.Getpid())
		for _, pid := range kids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if len(kids) == 0 {
			// A child may be mid-exit (a zombie not yet reaped) or mid-fork:
			// look again in 2 ms, unless the reaper finds none left first
			// (the common case: it is about to, having just reaped the
			// agent).
			t := time.NewTimer(2 * time.Millisecond)
			select {
			case <-reaperDone:
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
	}
}

// descendants lists the live processes below root.
func descendants(root int) []int { return agentproc.LiveDescendants(root) }

// exitAs ends the launcher the way the agent ended: the same exit code,
// or the same fatal signal, so that tai's exit reporting is unchanged.
func exitAs(ws syscall.WaitStatus) {
	if !ws.Signaled() {
		os.Exit(ws.ExitStatus())
	}
	sig := ws.Signal()
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}) // the agent's core is its own, not ours
	signal.Reset(sig)
	// The Go runtime keeps handlers of its own for some signals (SIGSEGV,
	// SIGPIPE ...): put back the default action before raising it.
	var act [4]uintptr // struct sigaction: handler SIG_DFL (0), flags, restorer, mask
	_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	_ = unix.PthreadSigmask(unix.SIG_UNBLOCK, sigset(sig), nil)
	_ = unix.Tgkill(os.Getpid(), unix.Gettid(), sig)
	_ = syscall.Kill(os.Getpid(), sig)
	os.Exit(128 + int(sig))
}

func sigset(sig syscall.Signal) *unix.Sigset_t {
	var s unix.Sigset_t
	s.Val[(sig-1)/64] |= 1 << ((uint(sig) - 1) % 64)
	return &s
}

// parentDeathSignal makes the launcher's parent-death signal parentDied,
// which it catches to kill what it holds, instead of the SIGKILL
// agentproc gives every child (a SIGKILL would orphan the tree). It is set
// at fork, on the thread that becomes the launcher's main thread: a prctl
// later, from whichever thread Go runs it on, would leave the main
// thread's SIGKILL in place.
func parentDeathSignal(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	a := *cmd.SysProcAttr
	a.Pdeathsig = parentDied
	cmd.SysProcAttr = &a
}

func init() {
	if Launching() {
		// Main, and its prctl, run on the main thread.
		runtime.LockOSThread()
	}
}
