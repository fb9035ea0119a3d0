package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// peer finds a third-party ACP agent installed by scripts/install-peers.sh.
// In CI a missing peer is a failure; elsewhere the test is skipped, saying
// why.
func peer(t *testing.T, env string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set: .ci/run must install the ACP peers (scripts/install-peers.sh)", env)
		}
		t.Skipf("skipping: %s not set; run scripts/install-peers.sh and export its output", env)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s=%s: %v", env, p, err)
	}
	return p
}

func TestPeers(t *testing.T) {
	t.Parallel()
	peers := []struct {
		name, env, launcher string
		skipText            string // what the agent says on its reject path
	}{
		{"typescript-sdk", "TAI_TS_AGENT", "node ", "skip"},
		{"go-sdk", "TAI_GO_AGENT", "", "skip"},
	}
	for _, p := range peers {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			cmd := p.launcher + peer(t, p.env)
			// The example agents edit /home/user/project/config.json, outside
			// any workspace: the built-in floor denies that even under
			// --approve all, unless a policy file names it a write root.
			pol := filepath.Join(t.TempDir(), "policy.toml")
			if err := os.WriteFile(pol, []byte("write_roots = [\"/home/user/project\"]\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Run("floor", func(t *testing.T) {
				t.Parallel()
				// --approve all: even then the floor refuses a write outside the workspace.
				o := tai(t, t.TempDir(), "run", "--agent-cmd", cmd, "--approve", "all", "-o", "json", "Hello agent")
				r := jsonResult(t, o)
				if o.code != 5 || len(r.Denials) != 1 || r.Denials[0].DecidedBy != "rule:floor-write-outside" {
					t.Fatalf("exit %d %+v", o.code, r.Permissions)
				}
			})
			t.Run("approved", func(t *testing.T) {
				t.Parallel()
				// --approve all with a --policy whose write_roots names the path: the write root is the subject.
				o := tai(t, t.TempDir(), "run", "--agent-cmd", cmd, "--approve", "all", "--policy", pol, "-o", "json", "Hello agent")
				r := jsonResult(t, o)
				if o.code != 0 || r.Status != "ok" || r.StopReason != "end_turn" || r.SessionID == "" {
					t.Fatalf("exit %d %+v\n%s", o.code, r, o.stderr)
				}
				if len(r.Permissions) != 1 || r.Permissions[0].Verdict != "allow" || r.Permissions[0].OptionID != "allow" {
					t.Fatalf("permission %+v", r.Permissions)
				}
				if !strings.Contains(r.Message, "successfully updated") {
					t.Fatalf("agent did not take its allowed path: %q", r.Message)
				}
			})
			t.Run("rejected", func(t *testing.T) {
				t.Parallel()
				// --approve deny: the agent's skip path is the subject.
				o := tai(t, t.TempDir(), "run", "--agent-cmd", cmd, "--approve", "deny", "-o", "json", "Hello agent")
				r := jsonResult(t, o)
				if o.code != 5 || r.Status != "denied" || r.StopReason != "end_turn" {
					t.Fatalf("exit %d %+v\n%s", o.code, r, o.stderr)
				}
				if len(r.Denials) != 1 || r.Denials[0].OptionID != "reject" {
					t.Fatalf("denials %+v", r.Denials)
				}
				if !strings.Contains(strings.ToLower(r.Message), p.skipText) {
					t.Fatalf("agent did not take its skip path: %q", r.Message)
				}
			})
			t.Run("stream", func(t *testing.T) {
				t.Parallel()
				// --approve all with the write_roots --policy, in stream-json.
				o := tai(t, t.TempDir(), "run", "--agent-cmd", cmd, "--approve", "all", "--policy", pol, "-o", "stream-json", "Hello agent")
				types := frameTypes(frames(t, o.stdout))
				for _, want := range []string{"session.started", "message.chunk", "tool_call", "permission.asked", "permission.decided", "turn.ended", "result"} {
					if types[want] == 0 {
						t.Errorf("no %s frame: %v", want, types)
					}
				}
			})
		})
	}
}
