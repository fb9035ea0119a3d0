//go:build linux

package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/tai-dev/tai/internal/agentproc"
	"golang.org/x/sys/unix"
)

// Launching reports whether this process was started as the launcher.
// cmd/tai checks it first thing, before any flag parsing.
func Launching() bool { return len(os.Args) == 2 && os.Args[1] == Arg }

// Main is the launcher: it reads the spec, becomes a subreaper (in a
// cgroup of its own where it can), confines itself, starts the agent with
// its own stdio, and waits. It returns only on a failure before the agent
// started; otherwise it exits as the agent did.
func Main() int {
	for _, fd := range []int{fdSpec, fdCtl, fdReport} {
		syscall.CloseOnExec(fd)
	}
	rep := os.NewFile(fdReport, "report")
	fail := func(format string, a ...any) int {
		b, _ := json.Marshal(report{Error: fmt.Sprintf(format, a...)})
		_, _ = rep.Write(append(b, '\n'))
		return 125
	}
	// tai started us with Pdeathsig SIGKILL, which would kill the
	// launcher before it could kill what it holds: tai's death is a
	// signal we catch instead (the control pipe's EOF says the same).
	// tai may already be gone: the pipe then reads EOF at once.
	died := make(chan os.Signal, 1)
	signal.Notify(died, parentDied)
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(parentDied), 0, 0, 0); err != nil {
		return fail("pdeathsig: %v", err)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail("subreaper: %v", err)
	}
	raw, err := io.ReadAll(os.NewFile(fdSpec, "spec"))
	if err != nil {
		return fail("reading the spec: %v", err)
	}
	var sp spec
	if err := json.Unmarshal(raw, &sp); err != nil {
		return fail("decoding the spec: %v", err)
	}
	if len(sp.Args) == 0 || sp.Path == "" {
		return fail("empty command")
	}
	// Signals to the group are the agent's to act on; the launcher
	// outlives the agent whatever it is sent (SIGKILL aside).
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)

	var cg *cgroup
	if sp.Cgroup {
		specMount = sp.CgroupMount
		cg = newCgroup() // nil where none can be made: the subreaper still holds
	}
	abi := 0
	if sp.Rules != nil {
		if abi, err = restrict(sp.Rules); err != nil {
			return fail("landlock: %v", err)
		}
	}
	// The agent gets our stdio as is, and our session and process group:
	// for a TUI that keeps the PTY as its controlling terminal and it in
	// the foreground.
	attr := &os.ProcAttr{
		Env:   sp.Env,
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	}
	if cg != nil {
		attr.Sys.UseCgroupFD, attr.Sys.CgroupFD = true, int(cg.dirFd.Fd())
	}
	proc, err := os.StartProcess(sp.Path, sp.Args, attr)
	if err != nil && cg != nil && !errors.Is(err, os.ErrNotExist) {
		// clone3 into a cgroup refused (an older kernel, a seccomp
		// filter): the subreaper alone still holds the tree.
		cg.remove()
		cg, attr.Sys.UseCgroupFD = nil, false
		proc, err = os.StartProcess(sp.Path, sp.Args, attr)
	}
	if err != nil {
		return fail("starting %s: %v", sp.Args[0], err)
	}
	b, _ := json.Marshal(report{Pid: proc.Pid, ABI: abi, Cgroup: cg.path()})
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
			killTree(cg)
			ws = <-agentDone
			done = true
		case <-sigs:
		}
	}
	killTree(cg)
	exitAs(ws)
	return 0
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
// escaped. The cgroup, where there is one, kills atomically, forks in
// flight included.
func killTree(cg *cgroup) {
	for {
		cg.kill()
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

// cgroup is the agent's cgroup v2 directory, made below the launcher's
// own. The agent is started straight into it (clone3 CLONE_INTO_CGROUP),
// so nothing it forks is ever outside; cgroup.kill then kills all of it at
// once, and the launcher, which stays outside, lives on to reap.
type cgroup struct {
	dir    string
	dirFd  *os.File
	killFd *os.File // opened before Landlock, which would refuse it later
}

// newCgroup makes the agent's cgroup where the cgroup v2 hierarchy is
// mounted and writable; nil where not.
func newCgroup() *cgroup {
	own := ownCgroup()
	if own == "" {
		return nil
	}
	dir := filepath.Join(own, "tai-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil
	}
	df, err := os.Open(dir)
	if err != nil {
		_ = os.Remove(dir)
		return nil
	}
	syscall.CloseOnExec(int(df.Fd()))
	c := &cgroup{dir: dir, dirFd: df}
	if kf, err := os.OpenFile(filepath.Join(dir, "cgroup.kill"), os.O_WRONLY, 0); err == nil {
		syscall.CloseOnExec(int(kf.Fd()))
		c.killFd = kf // missing before Linux 5.14: the subreaper kill still holds
	}
	return c
}

func (c *cgroup) path() string {
	if c == nil {
		return ""
	}
	return c.dir
}

// kill kills everything in the agent's cgroup at once, forks in flight
// included.
func (c *cgroup) kill() {
	if c != nil && c.killFd != nil {
		_, _ = c.killFd.Write([]byte("1"))
	}
}

func (c *cgroup) remove() {
	c.dirFd.Close()
	if c.killFd != nil {
		c.killFd.Close()
	}
	_ = os.Remove(c.dir)
}

// ownCgroup is the directory of this process's cgroup v2; "" where there
// is none.
func ownCgroup() string {
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
}

// sweepCgroups removes the empty cgroups of launchers that are gone: a
// launcher cannot remove its own (Landlock), and tai cannot after it was
// killed -9.
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

// cgroup2Mount is where the cgroup v2 hierarchy is mounted: what tai
// found, in the launcher (the spec says), else parsed once per process.
func cgroup2Mount() string {
	if specMount != "" {
		return specMount
	}
	return cgroupMount()
}

// specMount is tai's cgroup2Mount, handed to the launcher in its spec:
// parsing mountinfo again cost the launcher a millisecond of every start.
var specMount string

var cgroupMount = sync.OnceValue(parseCgroup2Mount)

// cgroupMountHint is the mount for a launcher's spec.
func cgroupMountHint() string { return cgroup2Mount() }

func parseCgroup2Mount() string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
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
	if b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	}
	for range 500 {
		if err := os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		ts := unix.Timespec{Nsec: 2e6}
		_ = unix.Nanosleep(&ts, nil)
	}
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
