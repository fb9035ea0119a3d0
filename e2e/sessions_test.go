package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A run keeps its session id with the workspace; --continue resumes the
// newest resumable one of the same agent there, in a new agent process
// (the built-in agent keeps its sessions on disk, like real agents).
func TestContinueResumesTheWorkspacesLastSession(t *testing.T) {
	ws, other := t.TempDir(), t.TempDir()
	// --approve all (here and below): the turns run unattended; sessions are the subject.
	first := jsonResult(t, tai(t, ws, "run", "--approve", "all", "-o", "json", "first turn"))
	if first.Status != "ok" || first.SessionID == "" {
		t.Fatalf("first run: %+v", first)
	}
	// An unrelated workspace's run (--approve all too) must not be what --continue finds.
	jsonResult(t, tai(t, other, "run", "--approve", "all", "-o", "json", "elsewhere"))

	o := tai(t, ws, "sessions", "--json")
	var listed []struct {
		SessionID string `json:"session_id"`
		Agent     string `json:"agent"`
		Driver    string `json:"driver"`
		Resumable bool   `json:"resumable"`
		Prompt    string `json:"prompt"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &listed); err != nil || o.code != 0 {
		t.Fatalf("tai sessions --json: exit %d, %v\n%s%s", o.code, err, o.stdout, o.stderr)
	}
	if len(listed) != 1 || listed[0].SessionID != first.SessionID || !listed[0].Resumable ||
		listed[0].Agent != "builtin" || listed[0].Driver != "acp" || listed[0].Prompt != "first turn" {
		t.Fatalf("tai sessions in the workspace: %+v; want only %s", listed, first.SessionID)
	}

	// --approve all: as above.
	second := jsonResult(t, tai(t, ws, "run", "--continue", "--approve", "all", "-o", "json", "second turn"))
	if second.Status != "ok" || second.SessionID != first.SessionID {
		t.Fatalf("--continue ran session %q (%s: %s); want %q", second.SessionID, second.Status, second.Error, first.SessionID)
	}
	o = tai(t, ws, "sessions", "-q")
	if ids := strings.Fields(o.stdout); len(ids) != 2 || ids[0] != first.SessionID {
		t.Fatalf("tai sessions -q after --continue: %q", o.stdout)
	}
}

func TestContinueWithoutASession(t *testing.T) {
	ws := t.TempDir()
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"nothing to continue", []string{"run", "--continue", "hi"}, 4, "no resumable builtin session"},
		{"another agent's session does not count", []string{"run", "--continue", "--agent", "qwen", "hi"}, 4, "no resumable qwen session"},
		{"with --resume", []string{"run", "--continue", "--resume", "x", "hi"}, 2, "pass one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "another agent's session does not count" {
				// --approve all: a turn that leaves a session; the policy is not the subject.
				jsonResult(t, tai(t, ws, "run", "--approve", "all", "-o", "json", "builtin's"))
			}
			o := tai(t, ws, tc.args...)
			if o.code != tc.code || !strings.Contains(o.stderr, tc.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", o.code, o.stderr, tc.code, tc.stderr)
			}
		})
	}
}

// A run killed with kill -9 mid-turn leaves its session's record (written
// when the session started): tai sessions lists it as running, and
// --continue resumes it.
func TestKilledRunLeavesASessionRecord(t *testing.T) {
	ws := t.TempDir()
	s := writeScript(t, "steps:\n  - text: working\n  - delay: 600\n")
	cmd := exec.Command(taiBin, "run", "--agent-cmd", builtinWith(s), "-o", "json", "long task")
	cmd.Dir, cmd.Env = ws, append(os.Environ(), "NO_COLOR=1", "XDG_STATE_HOME="+stateDir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() }()
	var id string
	for i := 0; id == "" && i < 1200; i++ { // bounded wait for the session to start
		id = strings.TrimSpace(tai(t, ws, "sessions", "-q").stdout)
		if id == "" {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if id == "" {
		t.Fatal("the live run's session was never recorded")
	}
	_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL) // tai only: its launcher kills the agent
	_ = cmd.Wait()

	var listed []struct {
		SessionID string `json:"session_id"`
		Status    string `json:"status"`
		Resumable bool   `json:"resumable"`
		Prompt    string `json:"prompt"`
	}
	o := tai(t, ws, "sessions", "--json")
	if err := json.Unmarshal([]byte(o.stdout), &listed); err != nil || len(listed) != 1 {
		t.Fatalf("tai sessions after kill -9: %v\n%s%s", err, o.stdout, o.stderr)
	}
	if l := listed[0]; l.SessionID != id || l.Status != "running" || !l.Resumable || l.Prompt != "long task" {
		t.Fatalf("the killed run's record: %+v", l)
	}
	again := jsonResult(t, tai(t, ws, "run", "--continue", "--agent-cmd", taiBin+" agent builtin", "-o", "json", "/echo back"))
	if again.SessionID != id || again.Status != "ok" {
		t.Fatalf("--continue after kill -9 ran %q (%s: %s); want %s", again.SessionID, again.Status, again.Error, id)
	}
	// The finished run's record replaced nothing of the killed one's but
	// its own: two runs, one session.
	o = tai(t, ws, "sessions", "-q")
	if ids := strings.Fields(o.stdout); len(ids) != 2 || ids[0] != id || ids[1] != id {
		t.Fatalf("tai sessions -q: %q", o.stdout)
	}
}

// A session deleted with tai sessions rm is not what --continue picks.
func TestContinueSkipsADeletedSession(t *testing.T) {
	ws := t.TempDir()
	first := jsonResult(t, tai(t, ws, "run", "-o", "json", "/echo one"))
	second := jsonResult(t, tai(t, ws, "run", "-o", "json", "/echo two"))
	if o := tai(t, ws, "sessions", "rm", second.SessionID, "--agent", "builtin"); o.code != 0 {
		t.Fatalf("sessions rm: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	if o := tai(t, ws, "sessions", "-q"); strings.TrimSpace(o.stdout) != first.SessionID {
		t.Errorf("tai sessions -q after rm: %q, want only %s", o.stdout, first.SessionID)
	}
	again := jsonResult(t, tai(t, ws, "run", "--continue", "-o", "json", "/echo three"))
	if again.SessionID != first.SessionID {
		t.Fatalf("--continue ran %q (%s: %s); want %s, not the deleted %s", again.SessionID, again.Status, again.Error, first.SessionID, second.SessionID)
	}
}
