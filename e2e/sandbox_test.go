package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tai-dev/tai/e2e/internal/auditlog"
	"github.com/tai-dev/tai/e2e/internal/build"
	"github.com/tai-dev/tai/sandbox"
)

// jail is a run's world: a workspace, a directory outside it, and a fake
// HOME with a private key.
type jail struct {
	ws, outside, home string
}

const fakeKey = "FAKE-PRIVATE-KEY-0123456789"

func newJail(t *testing.T) jail {
	t.Helper()
	root := t.TempDir()
	j := jail{ws: filepath.Join(root, "ws"), outside: filepath.Join(root, "outside"), home: filepath.Join(root, "home")}
	for _, d := range []string{j.ws, j.outside, filepath.Join(j.home, ".ssh"), filepath.Join(j.home, ".claude")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(j.home, ".ssh", "id_rsa"), []byte(fakeKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return j
}

func (j jail) env(extra ...string) []string {
	return append(append(os.Environ(), "NO_COLOR=1", "HOME="+j.home, "XDG_STATE_HOME="+stateDir,
		"XDG_CONFIG_HOME="+filepath.Join(j.home, ".config"), "XDG_CACHE_HOME="+filepath.Join(j.home, ".cache")), extra...)
}

// escape is a shell script that tries everything the sandbox refuses, and
// a write it allows, leaving the evidence on disk.
func (j jail) escape() string {
	return fmt.Sprintf(`echo in > in.txt
echo out > %[1]s/escape.txt
cat %[2]s/.ssh/id_rsa > leak.txt
setsid sh -c 'echo s > %[1]s/setsid.txt; cat %[2]s/.ssh/id_rsa > setsid-leak.txt'
mkdir -p %[2]s/.claude/projects; echo state > %[2]s/.claude/projects/state.txt
echo home > %[2]s/home.txt
true`, j.outside, j.home)
}

// check looks at the disk after escape ran, confined or not.
func (j jail) check(t *testing.T, confined, ownState bool) {
	t.Helper()
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	if !exists(filepath.Join(j.ws, "in.txt")) {
		t.Errorf("the write inside the workspace failed")
	}
	if !exists(filepath.Join(j.home, ".claude", "projects", "state.txt")) && ownState {
		t.Errorf("the agent's own state directory was not writable")
	}
	for _, p := range []string{filepath.Join(j.outside, "escape.txt"), filepath.Join(j.outside, "setsid.txt"), filepath.Join(j.home, "home.txt")} {
		if exists(p) == confined {
			t.Errorf("%s exists = %v, confined = %v", p, exists(p), confined)
		}
	}
	for _, p := range []string{"leak.txt", "setsid-leak.txt"} {
		b, _ := os.ReadFile(filepath.Join(j.ws, p))
		if strings.Contains(string(b), fakeKey) == confined {
			t.Errorf("%s holds the key = %v, confined = %v", p, !confined, confined)
		}
	}
}

// runScript is a builtin script whose one step runs sh -c body through
// tai's terminal service.
func runScript(t *testing.T, body string, after ...string) string {
	t.Helper()
	q, _ := json.Marshal(body)
	s := "steps:\n  - run: {command: /bin/sh, args: [\"-c\", " + string(q) + "]}\n"
	for _, a := range after {
		s += "  - " + a + "\n"
	}
	return writeScript(t, s)
}

type sandboxResult struct {
	result
	Sandbox *sandbox.Status `json:"sandbox"`
}

func runIn(t *testing.T, dir string, env []string, args ...string) (sandboxResult, outcome) {
	t.Helper()
	o := runTai(t, dir, env, args...)
	var r sandboxResult
	if err := json.Unmarshal([]byte(o.stdout), &r); err != nil {
		t.Fatalf("stdout is not one JSON result (%v):\n%s\nstderr:\n%s", err, o.stdout, o.stderr)
	}
	return r, o
}

func runTai(t *testing.T, dir string, env []string, args ...string) outcome {
	t.Helper()
	o := build.Run(t, taiBin, dir, env, args...)
	return outcome{o.Stdout, o.Stderr, o.Code}
}

func needLandlock(t *testing.T) {
	t.Helper()
	if sandbox.ABI() < 1 {
		t.Skip("the kernel has no Landlock")
	}
}

// A terminal command tai serves, and a stream-json agent (tai itself, in
// its own --approve all, running the same command through its own
// terminal service) each try to write outside the workspace and into HOME,
// and to read ~/.ssh/id_rsa, also from a setsid child: the kernel refuses
// under the sandbox (and lets it happen with --sandbox off, which shows
// the test can fail). The agent's own state directory stays writable.
func TestSandboxConfinesServedCommandsAndAgents(t *testing.T) {
	needLandlock(t)
	for _, tc := range []struct {
		name     string
		stream   bool
		sandbox  string
		confined bool
	}{
		{"terminal command", false, "auto", true},
		{"terminal command, sandbox off", false, "off", false},
		{"stream-json agent in its own yolo", true, "on", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := newJail(t)
			scr := runScript(t, j.escape())
			agent := builtinWith(scr)
			args := []string{"run", "--agent", "claude", "--agent-cmd", agent, "--approve", "all", "-o", "json", "--sandbox", tc.sandbox}
			if tc.stream {
				inner := fmt.Sprintf("%s --cap-speak stream-json --approve all --agent claude --agent-cmd %q", taiBin, agent)
				args = []string{"run", "--agent-cmd", inner, "--driver", "stream-json", "--approve", "all", "-o", "json", "--sandbox", tc.sandbox}
			}
			log := filepath.Join(t.TempDir(), "audit.jsonl")
			r, o := runIn(t, j.ws, j.env(), append(args, "--audit", log, "go")...)
			if r.ExitCode != 0 || len(r.Terminals) == 0 && !tc.stream {
				t.Fatalf("exit %d (%s), %d terminals\nstderr:\n%s", r.ExitCode, r.Error, len(r.Terminals), o.stderr)
			}
			// The claude preset's state dir is the agent's own, unless the
			// agent is tai (whose own state lies elsewhere).
			j.check(t, tc.confined, !tc.stream)
			if r.Sandbox == nil || r.Sandbox.Enabled != tc.confined || tc.confined && r.Sandbox.ABI < 1 {
				t.Errorf("result sandbox %+v, want enabled=%v with an ABI", r.Sandbox, tc.confined)
			}
			start, ok := auditlog.First(auditlog.Read(t, log), "run.start")
			if !ok || !strings.Contains(string(start.Data), `"sandbox":{"mode":"`+tc.sandbox+`","enabled":`+strconv.FormatBool(tc.confined)) {
				t.Errorf("run.start does not record the sandbox: %s", start.Data)
			}
		})
	}
}

// tai's own state and the policy file cannot be planted or rewritten by
// the agent, even when the workspace contains them (-C ~).
func TestSandboxProtectsTaisOwnFiles(t *testing.T) {
	needLandlock(t)
	j := newJail(t)
	pol := filepath.Join(j.home, ".config", "tai", "policy.toml")
	state := filepath.Join(j.home, ".local", "state")
	proj := filepath.Join(j.home, "proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	scr := runScript(t, fmt.Sprintf(`mkdir -p %[1]s; echo 'mode = "yolo"' > %[2]s; echo x > %[3]s/tai/planted; echo ok > %[4]s/ok.txt`,
		filepath.Dir(pol), pol, state, proj))
	env := append(j.env(), "XDG_STATE_HOME="+state)
	r, o := runIn(t, j.ws, env, "run", "-C", j.home, "--agent-cmd", builtinWith(scr), "--approve", "all", "-o", "json", "go")
	if r.ExitCode != 0 {
		t.Fatalf("exit %d (%s)\n%s", r.ExitCode, r.Error, o.stderr)
	}
	if _, err := os.Stat(pol); err == nil {
		t.Errorf("the agent planted a policy file")
	}
	if _, err := os.Stat(filepath.Join(state, "tai", "planted")); err == nil {
		t.Errorf("the agent wrote into tai's state")
	}
	if _, err := os.Stat(filepath.Join(proj, "ok.txt")); err != nil {
		t.Errorf("a write deeper in the -C ~ workspace failed: %v", err)
	}
}

// --sandbox on where the kernel has no Landlock (the test hook plays one)
// is a usage error, exit 2, that says why; auto runs unconfined and says
// so in the result and the audit log.
func TestSandboxOnWithoutLandlock(t *testing.T) {
	j := newJail(t)
	o := runTai(t, j.ws, j.env("TAI_TEST_NO_LANDLOCK=1"), "run", "--sandbox", "on", "hello")
	if o.code != 2 || !strings.Contains(o.stderr, "--sandbox on: the kernel does not support Landlock") {
		t.Fatalf("exit %d, stderr %q; want 2 and the reason", o.code, o.stderr)
	}
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	// --approve all: the run must go on unsandboxed and say so; the policy is not the subject.
	r, _ := runIn(t, j.ws, j.env("TAI_TEST_NO_LANDLOCK=1"), "run", "--approve", "all", "-o", "json", "--audit", log, "hello")
	if r.ExitCode != 0 || r.Sandbox == nil || r.Sandbox.Enabled || r.Sandbox.Reason == "" {
		t.Fatalf("auto without Landlock: exit %d, sandbox %+v", r.ExitCode, r.Sandbox)
	}
	start, _ := auditlog.First(auditlog.Read(t, log), "run.start")
	if !strings.Contains(string(start.Data), `"enabled":false`) {
		t.Errorf("run.start: %s", start.Data)
	}
}

// waitGone waits until none of pids runs (pidfd: no polling), failing the
// test for those still alive after a generous hang guard.
func waitGone(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // already gone
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, _ := unix.Poll(fds, int((2 * time.Minute).Milliseconds()))
		unix.Close(fd)
		if n == 0 {
			t.Errorf("pid %d outlived tai", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func markerPids(t *testing.T, marker string) []int {
	t.Helper()
	var out []int
	for _, p := range agentProcesses(t, marker) {
		pid, _ := strconv.Atoi(strings.SplitN(p, ":", 2)[0])
		if pid != os.Getpid() {
			out = append(out, pid)
		}
	}
	return out
}

// No process outlives tai: a double-forked (setsid -f) child of a terminal
// command and of the agent itself, after a normal end, a timeout, a Ctrl-C,
// an agent crash and kill -9 of tai, checked in the process table.
func TestNoProcessOutlivesTai(t *testing.T) {
	for _, tc := range []struct {
		name  string
		agent string // "terminal": the builtin agent runs the daemon in a terminal; "self": a shell agent starts it
		end   string // normal | timeout | interrupt | crash | kill9
	}{
		{"terminal command, normal end", "terminal", "normal"},
		{"terminal command, timeout", "terminal", "timeout"},
		{"terminal command, Ctrl-C", "terminal", "interrupt"},
		{"terminal command, kill -9 of tai", "terminal", "kill9"},
		{"agent's own child, agent crash", "self", "crash"},
		{"agent's own child, timeout", "self", "timeout"},
		{"agent's own child, kill -9 of tai", "self", "kill9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := newJail(t)
			marker := "tai-daemon-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			fifo := filepath.Join(j.ws, "started") // where a confined command may write
			if err := syscall.Mkfifo(fifo, 0o666); err != nil {
				t.Fatal(err)
			}
			goFifo := filepath.Join(j.ws, "go")
			if err := syscall.Mkfifo(goFifo, 0o666); err != nil {
				t.Fatal(err)
			}
			daemon := fmt.Sprintf(`setsid -f sh -c 'sleep 1000; echo %s'; echo started > %s`, marker, fifo)
			var agent string
			switch {
			case tc.agent == "terminal" && tc.end == "normal":
				agent = builtinWith(runScript(t, daemon))
			case tc.agent == "terminal":
				agent = builtinWith(runScript(t, daemon+"; sleep 1000"))
			default:
				sh := filepath.Join(t.TempDir(), "agent.sh")
				tail := "sleep 1000"
				if tc.end == "crash" {
					// once the test has seen the daemon
					tail = "read x < " + goFifo + "; kill -SEGV $$"
				}
				if err := os.WriteFile(sh, []byte("#!/bin/sh\n"+daemon+"\n"+tail+"\n"), 0o755); err != nil {
					t.Fatal(err)
				}
				agent = sh
			}
			// --approve all: the agent's commands run; what outlives tai is the subject.
			args := []string{"run", "--agent-cmd", agent, "--approve", "all", "-o", "json", "--cancel-grace", "1s"}
			if tc.end == "timeout" {
				args = append(args, "--timeout", "2s")
			}
			cmd := exec.Command(taiBin, append(args, "go")...)
			cmd.Dir, cmd.Env = j.ws, j.env()
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(fifo) // blocks until the daemon has started
			if err != nil {
				t.Fatal(err)
			}
			_, _ = bufio.NewReader(f).ReadString('\n')
			f.Close()
			pids := markerPids(t, marker)
			// A process mid-exec shows no cmdline for a moment: look again
			// before saying the daemon is not there (a bound, not a wait).
			for i := 0; len(pids) == 0 && tc.end != "normal" && i < 100; i++ {
				time.Sleep(20 * time.Millisecond)
				pids = markerPids(t, marker)
			}
			if len(pids) == 0 && tc.end != "normal" {
				t.Fatalf("the daemon %s is not running", marker)
			}
			switch tc.end {
			case "crash":
				if err := os.WriteFile(goFifo, []byte("go\n"), 0); err != nil {
					t.Fatal(err)
				}
			case "interrupt":
				_ = cmd.Process.Signal(os.Interrupt)
			case "kill9":
				_ = cmd.Process.Kill()
			}
			err = cmd.Wait()
			var ee *exec.ExitError
			errors.As(err, &ee)
			code := 0
			if ee != nil {
				code = ee.ExitCode()
			}
			want := map[string]int{"normal": 0, "timeout": 3, "interrupt": 130, "crash": 1, "kill9": -1}[tc.end]
			if code != want {
				t.Errorf("tai exited %d (%v), want %d", code, err, want)
			}
			if tc.end == "kill9" {
				// tai is gone at once; the launcher it left sees that and
				// kills what it holds: wait for that, not for a time. What
				// it kills may have forked meanwhile (the daemon's shell
				// starting sleep), so wait until no process of the marker
				// is left, each for as long as waitGone allows.
				for len(pids) > 0 {
					waitGone(t, pids)
					if t.Failed() {
						break
					}
					pids = markerPids(t, marker)
				}
			}
			if left := agentProcesses(t, marker); len(left) > 0 {
				t.Errorf("processes outlived tai: %q", left)
				for _, pid := range markerPids(t, marker) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		})
	}
}
