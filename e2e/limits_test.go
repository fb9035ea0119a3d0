package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/e2e/internal/auditlog"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/sandbox"
)

// forkLoop forks sleeps that hold their pids (the launcher kills them when
// the loop's shell ends) until a fork fails, where dash gives up; 64 at
// most, so that without a limit it is no bomb. The floor refuses the
// classic :(){ :|:& };:, this one it lets through.
const forkLoop = `n=0; while [ $n -lt 64 ]; do sleep 1000 & n=$((n+1)); done; echo forked $n >&2`

// Under the default sandbox, the user's policy's pids limit holds a fork
// bomb in its cgroup, in a command the agent runs and in the agent itself:
// tai, outside, finishes the run whatever the agent does, and its result
// and audit log say the limit was in force and how often it was hit.
func TestForkBombHitsThePidsLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		agent bool // the agent itself forks, before it starts
		code  exitcode.Code
	}{
		{"terminal command", false, exitcode.OK},
		{"agent", true, exitcode.AgentError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := newJail(t)
			// A small limit keeps the bomb small; the policy is the user's
			// default one, as a user would write it.
			pol := filepath.Join(j.home, ".config", "tai", "policy.toml")
			if err := os.MkdirAll(filepath.Dir(pol), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(pol, []byte("limits = {pids = 16}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			agent := builtinWith(runScript(t, forkLoop, `write: {path: after.txt, content: "still here\n"}`))
			if tc.agent {
				agent = "/bin/sh -c '" + forkLoop + "; exec " + builtinWith(writeScript(t, "- text: hi\n")) + "'"
			}
			log := filepath.Join(t.TempDir(), "audit.jsonl")
			r, o := runIn(t, j.ws, j.env(), "run", "--agent", "claude", "--agent-cmd", agent, "--approve", "all",
				"-o", "json", "--audit", log, "go")
			if r.Sandbox == nil || r.Sandbox.Limits == nil {
				t.Fatalf("result sandbox %+v: no limits\nstderr:\n%s", r.Sandbox, o.stderr)
			}
			ls := r.Sandbox.Limits
			if ls.Pids != 16 {
				t.Skipf("pids limit not in force here: %+v", ls)
			}
			if r.ExitCode != int(tc.code) || o.code != int(tc.code) {
				t.Errorf("exit %d (process %d), want %d: %s\nstderr:\n%s", r.ExitCode, o.code, tc.code, r.Error, o.stderr)
			}
			if ls.PidsMaxHits < 1 {
				t.Errorf("limits %+v: no fork refused", ls)
			}
			if !tc.agent {
				if _, err := os.Stat(filepath.Join(j.ws, "after.txt")); err != nil {
					t.Errorf("the agent did not go on after its command: %v", err)
				}
			}
			entries := auditlog.Read(t, log)
			start, _ := auditlog.First(entries, "run.start")
			if !strings.Contains(string(start.Data), `"limits":{"pids":16,`) {
				t.Errorf("run.start does not record the limits: %s", start.Data)
			}
			end, ok := auditlog.First(entries, "run.end")
			var data struct {
				Limits *sandbox.LimitStatus `json:"limits"`
			}
			if !ok || json.Unmarshal(end.Data, &data) != nil || data.Limits == nil || data.Limits.PidsMaxHits != ls.PidsMaxHits {
				t.Errorf("run.end does not record what the limit caught: %s", end.Data)
			}
		})
	}
}

// Under the default sandbox, an agent's command sees only its own
// processes: not another process of the user's, whose environment holds a
// marker it would otherwise read from /proc/PID/environ; and the run
// works as before.
func TestOtherProcessesAreHidden(t *testing.T) {
	j := newJail(t)
	marker := "tai-hidden-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	other := exec.Command("sleep", "1000")
	other.Env = append(os.Environ(), "TAI_TEST_SECRET="+marker)
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	script := `grep -l ` + marker + ` /proc/[0-9]*/environ > found.txt 2>/dev/null; ls -d /proc/[0-9]* | wc -l > procs.txt; ` +
		`test -e /proc/` + strconv.Itoa(other.Process.Pid) + `/environ && grep -c sleep /proc/` + strconv.Itoa(other.Process.Pid) + `/cmdline > other.txt; true`
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	// --approve all: the probing command must run; what it can see is the subject.
	r, o := runIn(t, j.ws, j.env(), "run", "--agent", "claude", "--agent-cmd", builtinWith(runScript(t, script)),
		"--approve", "all", "-o", "json", "--audit", log, "go")
	if r.ExitCode != 0 || r.Sandbox == nil {
		t.Fatalf("exit %d (%s), sandbox %+v\nstderr:\n%s", r.ExitCode, r.Error, r.Sandbox, o.stderr)
	}
	if !r.Sandbox.ProcessesHidden && r.Sandbox.ProcessesReason != "" {
		// The kernel's refusal (no user namespaces, a container's /proc).
		t.Skipf("processes not hidden here: %s", r.Sandbox.ProcessesReason)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(j.ws, name))
		if err != nil && name != "other.txt" {
			t.Fatalf("the command did not run: %v", err)
		}
		return strings.TrimSpace(string(b))
	}
	if found := read("found.txt"); found != "" {
		t.Errorf("the command read another process's environment: %s", found)
	}
	if other := read("other.txt"); other != "" {
		t.Errorf("the command sees the other process (cmdline matches sleep: %s)", other)
	}
	// Its init, sh, ls and wc.
	if n, _ := strconv.Atoi(read("procs.txt")); n < 2 || n > 6 {
		t.Errorf("the command sees %d processes", n)
	}
	start, _ := auditlog.First(auditlog.Read(t, log), "run.start")
	if !strings.Contains(string(start.Data), `"processes_hidden":true`) {
		t.Errorf("run.start does not say processes are hidden: %s", start.Data)
	}
}
