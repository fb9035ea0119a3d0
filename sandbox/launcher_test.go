//go:build linux

package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary is its own launcher, as tai is.
func TestMain(m *testing.M) {
	if Launching() {
		os.Exit(Main())
	}
	if addr := os.Getenv("SANDBOX_TEST_DIAL"); addr != "" {
		// The test binary as the agent: can it connect?
		c, err := net.Dial("tcp", addr)
		if err != nil {
			fmt.Println("refused:", err)
			os.Exit(3)
		}
		c.Close()
		os.Exit(0)
	}
	if script := os.Getenv("SANDBOX_TEST_TAI"); script != "" {
		// The test binary as tai: it runs script through its launcher and
		// waits, until the test kills it.
		os.Exit(playTai(script))
	}
	os.Exit(m.Run())
}

// playTai runs script (sh) through a launcher as tai would, its stdout
// ours, and waits for it.
func playTai(script string) int {
	sb, err := New(Config{Mode: ModeAuto, Write: []string{os.TempDir()}, Exe: os.Args[0]})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sb.exe = os.Getenv("SANDBOX_TEST_LAUNCHER")
	sb.impl = os.Getenv("SANDBOX_TEST_LAUNCHER_IMPL")
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	p, err := sb.Wrap(cmd)
	if err == nil {
		err = p.Started(cmd.Start())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_ = cmd.Wait()
	p.Release()
	return 0
}

type world struct {
	ws, outside, home string
	sb                *Sandbox
}

// launcher is one launcher under test: the native one (this test binary,
// built with cgo), the same starting agents as copies of itself
// (TAI_LAUNCHER=copy), the Go one (TAI_LAUNCHER=go), or the native one
// built with sanitizers (TestNativeLauncherUnderSanitizers).
type launcher struct {
	exe  string
	impl string // TAI_LAUNCHER
}

func (l launcher) apply(sb *Sandbox) { sb.exe, sb.impl = l.exe, l.impl }

// env is what a tai played by this test binary (playTai) is told of l.
func (l launcher) env() []string {
	return []string{"SANDBOX_TEST_LAUNCHER=" + l.exe, "SANDBOX_TEST_LAUNCHER_IMPL=" + l.impl}
}

// launchers runs f for each launcher this build has: the native one (with
// cgo) and the Go one.
func launchers(t *testing.T, f func(t *testing.T, l launcher)) {
	if Native {
		t.Run("native", func(t *testing.T) { f(t, launcher{exe: os.Args[0]}) })
		t.Run("native-copy", func(t *testing.T) { f(t, launcher{exe: os.Args[0], impl: "copy"}) })
	}
	t.Run("go", func(t *testing.T) { f(t, launcher{exe: os.Args[0], impl: "go"}) })
}

func newWorld(t *testing.T, mode Mode, l launcher) *world {
	t.Helper()
	root := t.TempDir()
	w := &world{ws: filepath.Join(root, "ws"), outside: filepath.Join(root, "outside"), home: filepath.Join(root, "home")}
	for _, d := range []string{w.ws, w.outside, filepath.Join(w.home, ".ssh"), filepath.Join(w.home, ".config", "tai")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(w.home, ".ssh", "id_rsa"), []byte("SECRET-KEY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.home, ".config", "tai", "policy.toml"), []byte("mode = \"deny\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb, err := New(Config{Mode: mode, Write: []string{w.ws}, Deny: []string{filepath.Join(w.home, ".ssh")},
		Protect: []string{filepath.Join(w.home, ".config", "tai", "policy.toml")}, Exe: os.Args[0]})
	if err != nil {
		t.Fatal(err)
	}
	l.apply(sb)
	t.Cleanup(func() { sb.Close() })
	w.sb = sb
	return w
}

// start runs script under sh through the launcher, its stdout a pipe.
func (w *world) start(t *testing.T, script string) (*exec.Cmd, *Proc, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = w.ws
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = wr, wr
	p, err := w.sb.Wrap(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Started(cmd.Start()); err != nil {
		t.Fatal(err)
	}
	wr.Close()
	t.Cleanup(func() { r.Close() })
	return cmd, p, bufio.NewReader(r)
}

func needLandlock(t *testing.T) {
	if ABI() < 1 {
		t.Skip("no Landlock in this kernel")
	}
}

func TestLandlockConfinesWritesAndSecrets(t *testing.T) {
	needLandlock(t)
	launchers(t, testLandlockConfines)
}

func testLandlockConfines(t *testing.T, l launcher) {
	w := newWorld(t, ModeOn, l)
	script := `echo in > ws.txt; echo out > ` + w.outside + `/escape.txt; cat ` + w.home + `/.ssh/id_rsa;
echo planted >> ` + w.home + `/.config/tai/policy.toml; echo tmp > "$TMPDIR/t" && echo tmp-ok;
setsid sh -c 'echo setsid > ` + w.outside + `/setsid.txt'; echo done`
	cmd, p, out := w.start(t, script)
	b, _ := readAll(out)
	if err := cmd.Wait(); err != nil {
		t.Logf("exit: %v", err)
	}
	p.Release()
	got := string(b)
	if strings.Contains(got, "SECRET-KEY") {
		t.Errorf("the secret was read:\n%s", got)
	}
	if !strings.Contains(got, "tmp-ok") || !strings.Contains(got, "done") {
		t.Errorf("the private temp dir was not writable, or the script stopped:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(w.ws, "ws.txt")); err != nil {
		t.Errorf("the workspace write failed: %v\n%s", err, got)
	}
	for _, f := range []string{"escape.txt", "setsid.txt"} {
		if _, err := os.Stat(filepath.Join(w.outside, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was written outside the workspace (stat: %v)", f, err)
		}
	}
	if pol, _ := os.ReadFile(filepath.Join(w.home, ".config", "tai", "policy.toml")); strings.Contains(string(pol), "planted") {
		t.Errorf("the protected policy file was written")
	}
	if st := w.sb.Status(); !st.Enabled || st.ABI < 1 {
		t.Errorf("status %+v, want enabled with an ABI", st)
	}
}

func readAll(r *bufio.Reader) ([]byte, error) {
	var b []byte
	for {
		line, err := r.ReadBytes('\n')
		b = append(b, line...)
		if err != nil {
			return b, err
		}
	}
}

// alive reports whether pid is a live process (not gone, not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && len(b) > i+2 && b[i+2] != 'Z'
}

// pids reads the pids a script printed, one per line, until "ready".
func pids(t *testing.T, r *bufio.Reader) []int {
	t.Helper()
	var out []int
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading pids: %v (got %v)", err, out)
		}
		line = strings.TrimSpace(line)
		if line == "ready" {
			return out
		}
		if n, err := strconv.Atoi(line); err == nil {
			out = append(out, n)
		}
	}
}

// A double-forked child (setsid -f) of a command is gone once the command
// ends, and once tai asks for the tree to die.
func TestNoProcessOutlivesTheLauncher(t *testing.T) {
	launchers(t, testNoProcessOutlives)
}

func testNoProcessOutlives(t *testing.T, l launcher) {
	for _, mode := range []Mode{ModeOn, ModeOff} {
		for _, how := range []string{"normal end", "kill", "crash"} {
			t.Run(string(mode)+"/"+how, func(t *testing.T) {
				if mode == ModeOn {
					needLandlock(t)
				}
				w := newWorld(t, mode, l)
				fifo := filepath.Join(w.ws, "go")
				if err := syscall.Mkfifo(fifo, 0o644); err != nil {
					t.Fatal(err)
				}
				tail := map[string]string{"normal end": "exit 0", "kill": "sleep 1000", "crash": "kill -SEGV $$"}[how]
				// The daemon reports its own pid; the script waits on the
				// fifo so the test decides when it ends.
				script := `setsid -f sh -c 'echo $$ > d.pid; exec sleep 1000'; while [ ! -s d.pid ]; do :; done; cat d.pid; sleep 1000 & echo $!; echo ready; read x < ` + fifo + `; ` + tail
				cmd, p, out := w.start(t, script)
				ps := pids(t, out)
				if len(ps) != 2 {
					t.Fatalf("pids %v", ps)
				}
				for _, pid := range ps {
					if !alive(pid) {
						t.Fatalf("pid %d not running before the end", pid)
					}
				}
				if how == "kill" {
					p.Kill()
				} else if err := os.WriteFile(fifo, []byte("x\n"), 0); err != nil {
					t.Fatal(err)
				}
				err := cmd.Wait()
				p.Release()
				for _, pid := range ps {
					if alive(pid) {
						t.Errorf("pid %d outlived the launcher", pid)
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
				var ee *exec.ExitError
				errors.As(err, &ee)
				switch how {
				case "normal end":
					if err != nil {
						t.Errorf("exit %v, want 0", err)
					}
				case "crash":
					if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGSEGV {
						t.Errorf("exit %v, want killed by SIGSEGV", err)
					}
				case "kill":
					if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
						t.Errorf("exit %v, want killed by SIGKILL", err)
					}
				}
			})
		}
	}
}

// --net-allow: TCP connections only to the allowed ports (Landlock ABI 4+).
func TestNetRule(t *testing.T) {
	if ABI() < 4 {
		t.Skip("no Landlock network rules in this kernel")
	}
	launchers(t, testNetRule)
}

func testNetRule(t *testing.T, l launcher) {
	allowed, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer allowed.Close()
	other, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	sb, err := New(Config{Mode: ModeOn, NetAllow: []string{allowed.Addr().String()}, Exe: os.Args[0]})
	if err != nil {
		t.Fatal(err)
	}
	l.apply(sb)
	defer sb.Close()
	for _, tc := range []struct {
		addr string
		code int
	}{{allowed.Addr().String(), 0}, {other.Addr().String(), 3}} {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "SANDBOX_TEST_DIAL="+tc.addr)
		out, err := runWrapped(t, sb, cmd)
		if code := cmd.ProcessState.ExitCode(); code != tc.code {
			t.Errorf("dial %s: exit %d (%v) %s, want %d", tc.addr, code, err, out, tc.code)
		}
	}
	if !sb.Status().Net {
		t.Errorf("status %+v, want net restricted", sb.Status())
	}
}

func TestExitCodePassesThrough(t *testing.T) {
	launchers(t, testExitCode)
}

func testExitCode(t *testing.T, l launcher) {
	w := newWorld(t, ModeOff, l)
	cmd, p, out := w.start(t, "exit 7")
	_, _ = readAll(out)
	err := cmd.Wait()
	p.Release()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("exit %v, want 7", err)
	}
}

func TestModeOnWithoutLandlock(t *testing.T) {
	testNoLandlock = true
	defer func() { testNoLandlock = false }()
	_, err := New(Config{Mode: ModeOn})
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("New(on) without Landlock: %v, want ErrUnsupported", err)
	}
	sb, err := New(Config{Mode: ModeAuto})
	if err != nil || sb.Status().Enabled {
		t.Fatalf("New(auto) without Landlock: %v %+v, want off", err, sb.Status())
	}
}

// The agent gets its command's environment, not the launcher's own
// (GOMAXPROCS=1): a variable the command did not set stays unset, and
// one it set keeps its value.
func TestAgentEnvironmentIsItsCommands(t *testing.T) {
	launchers(t, testAgentEnvironment)
}

func testAgentEnvironment(t *testing.T, l launcher) {
	w := newWorld(t, ModeOff, l)
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"PATH=" + os.Getenv("PATH")}, "unset"},
		{[]string{"PATH=" + os.Getenv("PATH"), "GOMAXPROCS=3"}, "3"},
	} {
		cmd := exec.Command("/bin/sh", "-c", `echo "${GOMAXPROCS-unset}"`)
		cmd.Env = tc.env
		cmd.Dir = w.ws
		out, _ := runWrapped(t, w.sb, cmd)
		if got := strings.TrimSpace(out); got != tc.want {
			t.Errorf("env %q: the agent saw GOMAXPROCS %q, want %q", tc.env, got, tc.want)
		}
	}
}

// runWrapped runs cmd through sb's launcher to its end and returns its
// stdout and cmd.Wait's error.
func runWrapped(t *testing.T, sb *Sandbox, cmd *exec.Cmd) (string, error) {
	t.Helper()
	p, err := sb.Wrap(cmd)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd.Stdout = &out
	if err := p.Started(cmd.Start()); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	p.Release()
	return out.String(), err
}

// When tai dies, even by SIGKILL, its launcher kills what it holds (the
// parent-death signal): nothing the agent started outlives tai.
func TestTaiKilledTakesTheTree(t *testing.T) {
	launchers(t, testTaiKilled)
}

func testTaiKilled(t *testing.T, l launcher) {
	dir := t.TempDir()
	script := `cd ` + dir + `; setsid -f sh -c 'echo $$ > d.pid; exec sleep 1000'; while [ ! -s d.pid ]; do :; done; cat d.pid; sleep 1000 & echo $!; echo $$; echo ready; wait`
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), "SANDBOX_TEST_TAI="+script), l.env()...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ps := pids(t, bufio.NewReader(out))
	if len(ps) != 3 {
		t.Fatalf("pids %v", ps)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	// The launcher is reparented away from us: wait for the tree to go
	// by watching each pid, as nothing here can wait4 them.
	for _, pid := range ps {
		for i := 0; alive(pid); i++ {
			if i == 5000 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("pid %d outlived tai", pid)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// The launcher refuses a bad spec with a clear error on its report pipe
// and exit code 125, starting nothing.
func TestLauncherRefusesBadSpecs(t *testing.T) {
	launchers(t, testBadSpecs)
}

func testBadSpecs(t *testing.T, l launcher) {
	for _, tc := range badSpecs {
		t.Run(tc.name, func(t *testing.T) {
			report, code := rawLaunch(t, l, []byte(tc.spec), tc.fds)
			if code != 125 || !strings.HasPrefix(report.Error, "launch spec: ") && !strings.HasPrefix(report.Error, "reading the spec: ") {
				t.Fatalf("exit %d, report %+v", code, report)
			}
		})
	}
}

// rawLaunch starts the launcher by hand with spec (and nfds descriptors of
// /dev/null) on its socket, and returns its report and exit code.
func rawLaunch(t *testing.T, l launcher, spec []byte, nfds int) (report, int) {
	t.Helper()
	taiEnd, child, err := specSocket()
	if err != nil {
		t.Fatal(err)
	}
	ctlR, ctlW, _ := os.Pipe()
	repR, repW, _ := os.Pipe()
	defer ctlW.Close()
	cmd := exec.Command(l.exe, Arg)
	cmd.Env = []string{"GOMAXPROCS=1"}
	if l.impl != "" {
		cmd.Env = append(cmd.Env, "TAI_LAUNCHER="+l.impl)
	}
	cmd.ExtraFiles = []*os.File{child, ctlR, repW}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child.Close()
	ctlR.Close()
	repW.Close()
	var fds []int
	for range nfds {
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fds = append(fds, int(f.Fd()))
	}
	if len(spec) > 0 || len(fds) > 0 {
		if len(spec) == 0 {
			spec = []byte{0} // rights need a byte to ride on
		}
		if err := sendWithRights(taiEnd, spec, fds); err != nil {
			t.Fatal(err)
		}
	}
	closeFd(taiEnd)
	line, _ := bufio.NewReader(repR).ReadBytes('\n')
	repR.Close()
	_ = cmd.Wait()
	var r report
	if err := json.Unmarshal(line, &r); err != nil {
		t.Fatalf("report %q: %v", line, err)
	}
	return r, cmd.ProcessState.ExitCode()
}

// A program that cannot be executed is the launcher's clear error, and
// Started's.
func TestLauncherReportsExecFailure(t *testing.T) {
	launchers(t, testExecFailure)
}

func testExecFailure(t *testing.T, l launcher) {
	w := newWorld(t, ModeOff, l)
	notExec := filepath.Join(w.ws, "agent")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(notExec)
	p, err := w.sb.Wrap(cmd)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Started(cmd.Start())
	if err == nil || !strings.Contains(err.Error(), "starting "+notExec) || !strings.Contains(strings.ToLower(err.Error()), "permission denied") {
		t.Fatalf("Started: %v, want the exec error", err)
	}
	if werr := cmd.Wait(); werr == nil || cmd.ProcessState.ExitCode() != 125 {
		t.Fatalf("launcher exit %v, want 125", werr)
	}
	p.Release()
}

// The agent inherits its stdio and nothing else: not the spec socket, the
// control pipe, the report pipe, the ruleset or the cgroup's descriptors,
// nor what tai itself inherited without close-on-exec.
func TestAgentInheritsOnlyItsStdio(t *testing.T) {
	needLandlock(t)
	stray, err := unix.Open(os.DevNull, unix.O_RDONLY, 0) // no O_CLOEXEC: tai's own leak
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(stray)
	launchers(t, testInheritsOnlyStdio)
}

func testInheritsOnlyStdio(t *testing.T, l launcher) {
	w := newWorld(t, ModeOn, l)
	// sh, started and waiting on its stdin: nothing of its own is open
	// then (a program just exec'd may hold its loader's files).
	cmd := exec.Command("/bin/sh", "-c", "echo ready; read x")
	cmd.Dir = w.ws
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p, err := w.sb.Wrap(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Started(cmd.Start()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		in.Close()
		_ = cmd.Wait()
		p.Release()
	}()
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("the agent said %q, %v", line, err)
	}
	proc := "/proc/" + strconv.Itoa(p.AgentPid())
	ents, err := os.ReadDir(proc + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if n, _ := strconv.Atoi(e.Name()); n > 2 {
			target, _ := os.Readlink(proc + "/fd/" + e.Name())
			t.Errorf("the agent inherited fd %s (%s)", e.Name(), target)
		}
	}
}

// The native launcher runs no Go: one thread, no runtime.
func TestNativeLauncherIsOneThread(t *testing.T) {
	if !Native {
		t.Skip("built without cgo: the Go launcher")
	}
	w := newWorld(t, ModeAuto, launcher{exe: os.Args[0]})
	cmd := exec.Command("/bin/sh", "-c", `grep '^Threads:' /proc/$PPID/status`)
	cmd.Dir = w.ws
	out, err := runWrapped(t, w.sb, cmd)
	if err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(out); len(f) != 2 || f[1] != "1" {
		t.Fatalf("the launcher has %q threads, want 1", out)
	}
}

// The native launcher's C, built with AddressSanitizer and
// UndefinedBehaviorSanitizer (aborting on the first report), passes the
// launcher tests: no out-of-bounds access, no use after free, no undefined
// behaviour on any path they take, the bad specs' included.
func TestNativeLauncherUnderSanitizers(t *testing.T) {
	if !Native {
		t.Skip("built without cgo")
	}
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc")
	}
	dir := t.TempDir()
	mainC := filepath.Join(dir, "main.c")
	if err := os.WriteFile(mainC, []byte("int main(void) { return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "launcher-asan")
	out, err := exec.Command(cc, "-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
		"-fno-omit-frame-pointer", "-Wall", "-Wextra", "-Werror", "-o", exe, "launcher_linux.c", mainC).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "asan") || strings.Contains(string(out), "ubsan") {
			t.Skipf("no sanitizer runtime: %s", out)
		}
		t.Fatalf("building the launcher with sanitizers: %v\n%s", err, out)
	}
	l := launcher{exe: exe}
	for _, sc := range []struct {
		name     string
		landlock bool
		f        func(*testing.T, launcher)
	}{
		{"landlock", true, testLandlockConfines},
		{"no process outlives", false, testNoProcessOutlives},
		{"exit code", false, testExitCode},
		{"environment", false, testAgentEnvironment},
		{"tai killed", false, testTaiKilled},
		{"bad specs", false, testBadSpecs},
		{"exec failure", false, testExecFailure},
		{"only stdio", true, testInheritsOnlyStdio},
		{"pty", false, testPTYForeground},
	} {
		t.Run(sc.name, func(t *testing.T) {
			if sc.landlock {
				needLandlock(t)
			}
			sc.f(t, l)
		})
	}
}

// Once the agent runs, the launcher holds none of its stdio: an agent that
// closes its stdout and lives on gives tai the EOF at once (held by the
// launcher, it never came, and tai waited for good).
func TestLauncherLetsGoOfTheAgentsStdio(t *testing.T) {
	launchers(t, testLetsGoOfStdio)
}

func testLetsGoOfStdio(t *testing.T, l launcher) {
	w := newWorld(t, ModeAuto, l)
	cmd := exec.Command("/bin/sh", "-c", "echo ready; exec >&- 2>&-; read x")
	cmd.Dir = w.ws
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p, err := w.sb.Wrap(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Started(cmd.Start()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		in.Close()
		_ = cmd.Wait()
		p.Release()
	}()
	// The agent, alive (it waits on its stdin), closed its stdout: EOF.
	b, err := io.ReadAll(out)
	if err != nil || string(b) != "ready\n" {
		t.Fatalf("read %q, %v", b, err)
	}
	if err := syscall.Kill(cmd.Process.Pid, 0); err != nil {
		t.Fatalf("the launcher is gone before the agent: %v", err)
	}
}
