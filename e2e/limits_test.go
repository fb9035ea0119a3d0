package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
