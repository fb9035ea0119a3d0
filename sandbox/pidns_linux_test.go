//go:build linux

package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// With HideProcesses, the agent's /proc shows its own tree only: not tai
// (this test), whose environment it cannot read; its work and the
// launcher's end (killing what is left) are as before.
func TestHideProcesses(t *testing.T) {
	launchers(t, func(t *testing.T, l launcher) {
		// A secret splits the read rule on / into rules on its parts, /proc
		// among them, as a run's secret paths do.
		secret := filepath.Join(t.TempDir(), "secret")
		if err := os.Mkdir(secret, 0o700); err != nil {
			t.Fatal(err)
		}
		sb, err := New(Config{Mode: ModeAuto, Write: []string{t.TempDir()}, Deny: []string{secret}, Exe: os.Args[0], HideProcesses: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sb.Close() })
		l.apply(sb)
		if st := sb.Status(); !st.ProcessesHidden {
			t.Skipf("processes not hidden here: %s", st.ProcessesReason)
		}
		if err := canHide(l.exe, l.impl); err != nil {
			t.Skip(err) // the Go launcher
		}
		tai := strconv.Itoa(os.Getpid())
		script := `sleep 1000 & n=0; for p in /proc/[0-9]*; do n=$((n+1)); done; echo procs $n; ` +
			`cat /proc/` + tai + `/environ >/dev/null 2>&1 && echo tai-readable; echo uid $(id -u); grep CapEff /proc/self/status; cat /proc/self/stat /proc/meminfo >/dev/null && echo proc-readable`
		out, err := runWrapped(t, sb, exec.Command("/bin/sh", "-c", script))
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		f := strings.Fields(out)
		if len(f) < 4 || f[0] != "procs" || f[2] == "tai-readable" {
			t.Fatalf("out %q", out)
		}
		// Its init, sh, the sleep, and the for loop's subshell at most.
		if n, _ := strconv.Atoi(f[1]); n < 2 || n > 5 {
			t.Errorf("the agent sees %d processes: %q", n, out)
		}
		// Its /proc is readable (Landlock's rules were on the old one).
		if !strings.Contains(out, "proc-readable") {
			t.Errorf("the agent cannot read its /proc: %q", out)
		}
		// Its own uid; no capability (which could unmount its /proc) where
		// tai is not root.
		if !strings.Contains(out, "uid "+strconv.Itoa(os.Geteuid())+"\n") {
			t.Errorf("not the user's uid: %q", out)
		}
		if os.Geteuid() != 0 && !strings.Contains(out, "CapEff:\t0000000000000000") {
			t.Errorf("the agent holds capabilities: %q", out)
		}
		// The agent's end is the launcher's, a signal included (its init,
		// which cannot die of one, hands it over).
		_, err = runWrapped(t, sb, exec.Command("/bin/sh", "-c", "kill -SEGV $$"))
		var ee *exec.ExitError
		if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGSEGV {
			t.Errorf("exit %v, want killed by SIGSEGV", err)
		}
	})
}
