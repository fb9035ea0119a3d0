package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tai-dev/tai/e2e/internal/auditlog"
)

// An agent that needs a directory outside its workspace at start exits or
// stalls there under the default sandbox, as codex-acp and
// claude-agent-acp did driven by --agent-cmd. tai says which path was
// refused when the agent's stderr names it, else names the flag and
// --sandbox off, in its stderr, the JSON result's error and the audit
// log's run.end; and the flag it names gets the agent started.
func TestSandboxStartRefused(t *testing.T) {
	needLandlock(t)
	for _, tc := range []struct {
		name, mode string
		extra      []string
		wantCode   int
		want       []string // in the error, with {out} the directory outside
	}{
		{name: "exit naming the path", mode: "exit", wantCode: 1,
			want: []string{"the agent exited at start under the sandbox; it was refused: {out}/state (write).", "--sandbox-write {out}/state (or write_roots in the policy)"}},
		{name: "exit naming no path", mode: "bare", wantCode: 1,
			want: []string{"the agent exited at start under the sandbox", "--sandbox-write DIR (or write_roots in the policy); --sandbox off as the last resort"}},
		// --timeout: the only end of an agent that never answers
		// initialize; the test asserts what is said, not when.
		{name: "stall", mode: "stall", extra: []string{"--timeout", "3s"}, wantCode: 3,
			want: []string{"did not finish its start (no answer to its handshake)", "--sandbox-write {out}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j, env := userJail(t)
			scr := writeScript(t, "steps:\n  - text: started\n")
			agent := fmt.Sprintf("%s %s %s -- %s agent builtin --script %s", startAgentBin, tc.mode, j.outside, taiBin, scr)
			// As a user runs it (text output: the message on stderr), and
			// with -o json (the message in the result).
			run := func(out ...string) outcome {
				return runTai(t, j.ws, env, append(append(append([]string{"run", "--agent-cmd", agent}, out...), tc.extra...), "go")...)
			}
			text, o := run(), run("-o", "json")
			r := jsonResult(t, o)
			if o.code != tc.wantCode || text.code != tc.wantCode {
				t.Fatalf("exit %d (text %d), want %d (%s)\n%s", o.code, text.code, tc.wantCode, r.Error, text.stderr)
			}
			var diag string
			for _, e := range r.Errors {
				if e.Code == "sandbox_start" {
					diag = e.Message
				}
			}
			for _, w := range tc.want {
				w = strings.ReplaceAll(w, "{out}", j.outside)
				for where, got := range map[string]string{"result error": r.Error, "sandbox_start error": diag, "stderr": text.stderr} {
					if !strings.Contains(got, w) {
						t.Errorf("%s does not say %q:\n%s", where, w, got)
					}
				}
			}
			logs, _ := filepath.Glob(filepath.Join(j.home, ".local", "state", "tai", "audit", "*.jsonl"))
			if len(logs) != 2 {
				t.Fatalf("audit logs %q, want the two runs'", logs)
			}
			for _, l := range logs {
				end, ok := auditlog.First(auditlog.Read(t, l), "run.end")
				if !ok || !strings.Contains(string(end.Data), "under the sandbox") {
					t.Errorf("run.end does not explain the start: %s", end.Data)
				}
			}
			if tc.mode != "exit" {
				return
			}
			// What tai named is what the agent needed.
			o = runTai(t, j.ws, env, "run", "--agent-cmd", agent, "--sandbox-write", filepath.Join(j.outside, "state"), "-o", "json", "go")
			if r := jsonResult(t, o); r.ExitCode != 0 || !strings.Contains(r.Message, "started") {
				t.Errorf("with the flag tai named: exit %d (%s), message %q\n%s", r.ExitCode, r.Error, r.Message, o.stderr)
			}
			if _, err := os.Stat(filepath.Join(j.outside, "state", "started")); err != nil {
				t.Errorf("the agent's start write did not land: %v", err)
			}
		})
	}
}
