package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tai-dev/tai/e2e/internal/auditlog"
)

// userJail is newJail with every XDG directory under its HOME, as on a
// user's machine: tai's state (audit logs included) lives in
// ~/.local/state/tai, where the agent could reach it if a write root let
// it.
func userJail(t *testing.T) (jail, []string) {
	t.Helper()
	j := newJail(t)
	env := append(j.env(), "XDG_STATE_HOME="+filepath.Join(j.home, ".local", "state"), "XDG_DATA_HOME="+filepath.Join(j.home, ".local", "share"))
	return j, env
}

// --sandbox-write DIR opens DIR for the agent's own processes (Landlock)
// and for tai's file service and policy (write_roots), under the default
// sandbox; tai's state, its audit logs and the secrets stay closed even
// when a write root names them, and the run records the roots and the
// refusals. Without the flag the same writes are refused, which shows the
// test can fail.
func TestSandboxWrite(t *testing.T) {
	needLandlock(t)
	for _, tc := range []struct {
		name string
		flag bool
	}{{"without --sandbox-write", false}, {"with --sandbox-write", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j, env := userJail(t)
			state := filepath.Join(j.home, ".local", "state", "tai")
			// An earlier run's audit log, which the agent tries to rewrite.
			old := filepath.Join(state, "audit", "run-old.jsonl")
			if err := os.MkdirAll(filepath.Join(state, "audit"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(old, []byte("{}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			scr := writeScript(t, fmt.Sprintf(`steps:
  - run: {command: /bin/sh, args: ["-c", "echo w > %[1]s/own.txt; echo x > %[2]s/planted; echo x > %[2]s/audit/planted.jsonl; echo x >> %[2]s/audit/run-old.jsonl; cat %[3]s/.ssh/id_rsa > %[1]s/leak.txt; true"]}
  - write: {path: %[1]s/served.txt, content: "served\n"}
  - write: {path: %[2]s/audit/served.jsonl, content: "x\n"}
`, j.outside, state, j.home))
			// --approve all: the agent's command and writes need an
			// approval; what is under test is the sandbox and the floor,
			// which no approval opens.
			args := []string{"run", "--agent-cmd", builtinWith(scr), "--approve", "all", "--allow-denials", "-o", "json"}
			if tc.flag {
				args = append(args, "--sandbox-write", j.outside, "--sandbox-write", "~/.local/state/tai", "--sandbox-write", "~/.local/state/tai/audit", "--sandbox-write", "~/.ssh")
			}
			o := runTai(t, j.ws, env, append(args, "go")...)
			var r struct {
				sandboxResult
				Audit string `json:"audit"`
			}
			if err := json.Unmarshal([]byte(o.stdout), &r); err != nil {
				t.Fatalf("stdout is not one JSON result (%v):\n%s\nstderr:\n%s", err, o.stdout, o.stderr)
			}
			if r.ExitCode != 0 {
				t.Fatalf("exit %d (%s)\n%s", r.ExitCode, r.Error, o.stderr)
			}
			exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
			for _, p := range []string{filepath.Join(j.outside, "own.txt"), filepath.Join(j.outside, "served.txt")} {
				if exists(p) != tc.flag {
					t.Errorf("%s written = %v, want %v", p, exists(p), tc.flag)
				}
			}
			for _, p := range []string{filepath.Join(state, "planted"), filepath.Join(state, "audit", "planted.jsonl"), filepath.Join(state, "audit", "served.jsonl")} {
				if exists(p) {
					t.Errorf("the agent wrote tai's own %s", p)
				}
			}
			if b, _ := os.ReadFile(old); string(b) != "{}\n" {
				t.Errorf("the agent rewrote an earlier run's audit log: %q", b)
			}
			if b, _ := os.ReadFile(filepath.Join(j.outside, "leak.txt")); strings.Contains(string(b), fakeKey) {
				t.Errorf("the agent read ~/.ssh/id_rsa through a write root")
			}
			if !tc.flag {
				return
			}
			if r.Sandbox == nil || !slices.Contains(r.Sandbox.WriteRoots, j.outside) || len(r.Sandbox.WriteRefused) != 3 {
				t.Errorf("result sandbox %+v: want %s a write root, tai's state, its audit logs and ~/.ssh refused", r.Sandbox, j.outside)
			}
			start, ok := auditlog.First(auditlog.Read(t, r.Audit), "run.start")
			for _, want := range []string{`"write_roots":["` + j.outside, `"write_roots_refused":[{"path":"` + state} {
				if !ok || !strings.Contains(string(start.Data), want) {
					t.Errorf("run.start does not record %s: %s", want, start.Data)
				}
			}
		})
	}
}
