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

// Config.ReadOnly, where processes are hidden: the init binds each file
// read-only, so the agent can read it but neither rewrite, replace nor
// remove it, while the directory beside it stays writable (lock files,
// state); a missing one is made first, holding Init.
func TestReadOnlyConfigFiles(t *testing.T) {
	launchers(t, func(t *testing.T, l launcher) {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "settings.json")
		if err := os.WriteFile(cfg, []byte(`{"hooks":{}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		made := filepath.Join(dir, "sub", "config.toml")
		link := filepath.Join(dir, "link.json")
		if err := os.Symlink(cfg, link); err != nil {
			t.Fatal(err)
		}
		sb, err := New(Config{Mode: ModeAuto, Write: []string{dir}, Exe: os.Args[0], HideProcesses: true,
			ReadOnly: []ReadOnlyFile{{Path: cfg, Make: true, Init: "{}"}, {Path: made, Make: true}, {Path: link, Make: true}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sb.Close() })
		l.apply(sb)
		if st := sb.Status(); !st.ProcessesHidden || !st.Enabled {
			t.Skipf("processes not hidden or no Landlock here: %s %s", st.ProcessesReason, st.Reason)
		}
		if err := canHide(l.exe, l.impl); err != nil {
			t.Skip(err) // the Go launcher
		}
		if st := sb.Status(); !strings.Contains(st.ConfigReason, link) || strings.Contains(st.ConfigReason, cfg+" ") {
			t.Errorf("config reason %q: want the symlink only", st.ConfigReason)
		}
		if fi, err := os.Stat(made); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("missing config file not made 0600: %v %v", fi, err)
		}
		script := `cd "$1"; cat settings.json; echo; ` +
			`echo '{"hooks":1}' > settings.json && echo wrote; ` +
			`echo x > new.json && mv new.json settings.json && echo renamed; ` +
			`rm -f settings.json && echo removed; ` +
			`echo '[mcp]' >> sub/config.toml && echo appended; ` +
			`mkdir settings.json.lock && echo lock > beside && echo beside-ok`
		out, err := runWrapped(t, sb, exec.Command("/bin/sh", "-c", script, "sh", dir))
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if !strings.HasPrefix(out, `{"hooks":{}}`) || !strings.Contains(out, "beside-ok") {
			t.Errorf("config not readable or its directory not writable: %q", out)
		}
		for _, bad := range []string{"wrote", "renamed", "removed", "appended"} {
			if strings.Contains(out, bad) {
				t.Errorf("the agent %s its config file: %q", bad, out)
			}
		}
		if b, _ := os.ReadFile(cfg); string(b) != `{"hooks":{}}` {
			t.Errorf("config file now %q", b)
		}
		if b, _ := os.ReadFile(made); len(b) != 0 {
			t.Errorf("made config file now %q", b)
		}
		// A symlink swapped in after tai looked: the launch is refused,
		// naming the file, rather than binding where it points.
		if err := os.Remove(made); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(cfg, made); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("/bin/true")
		p, err := sb.Wrap(cmd)
		if err != nil {
			t.Fatal(err)
		}
		err = p.Started(cmd.Start())
		_ = cmd.Wait()
		p.Release()
		if err == nil || !strings.Contains(err.Error(), "read-only: "+made) {
			t.Errorf("launch with a symlink swapped in: %v", err)
		}
	})
}

// Without hidden processes there is no mount namespace to bind config
// files in: none is bound or made, and the status says why.
func TestReadOnlyConfigFilesNeedHiding(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "settings.json")
	paths, why := readOnlyFiles([]ReadOnlyFile{{Path: missing, Make: true, Init: "{}"}}, false, "no user namespaces")
	if paths != nil || !strings.Contains(why, "no user namespaces") {
		t.Errorf("readOnlyFiles without hiding: %q, %q", paths, why)
	}
	if _, err := os.Lstat(missing); err == nil {
		t.Errorf("made %s, which nothing binds", missing)
	}
}
