package app

import (
	"slices"
	"testing"

	"github.com/tai-dev/tai/agentspec"
	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/config"
)

// tai run's flags → the resolver's Spec: the agent (config agents
// included), the user's policy file, and the audit log protected by the
// sandbox (and by the policy, when --audit names it).
func TestRunSpec(t *testing.T) {
	custom := []config.Agent{{Name: "mine", Command: "my-agent"}}
	tests := []struct {
		name  string
		f     RunFlags
		check func(t *testing.T, s agentspec.Spec)
	}{
		{"defaults", RunFlags{}, func(t *testing.T, s agentspec.Spec) {
			if !s.Policy.UserFile || s.Sandbox == nil || !slices.Equal(s.Sandbox.Protect, []string{audit.DefaultPath("run-x")}) || len(s.Policy.Protected) != 0 {
				t.Errorf("policy %+v sandbox %+v", s.Policy, s.Sandbox)
			}
		}},
		{"--audit", RunFlags{Audit: "a.jsonl"}, func(t *testing.T, s agentspec.Spec) {
			if !slices.Equal(s.Sandbox.Protect, []string{"a.jsonl"}) || !slices.Equal(s.Policy.Protected, []string{"a.jsonl"}) {
				t.Errorf("protect %q, policy protected %q", s.Sandbox.Protect, s.Policy.Protected)
			}
		}},
		{"--no-audit", RunFlags{Audit: "a.jsonl", NoAudit: true}, func(t *testing.T, s agentspec.Spec) {
			if len(s.Sandbox.Protect)+len(s.Policy.Protected) != 0 {
				t.Errorf("protect %q, policy protected %q", s.Sandbox.Protect, s.Policy.Protected)
			}
		}},
		{"agent, policy and sandbox flags", RunFlags{Agent: "mine", Driver: "acp", Model: "m", Mode: "plan", Approve: "all", Deny: []string{"read"},
			NonInteractive: "fail", Remember: "run", AllowDenials: true, Policy: "p.toml", Sandbox: "on", NetAllow: []string{"h:1"}, Env: []string{"K=V"}}, func(t *testing.T, s agentspec.Spec) {
			a, p, sb := s.Agent, s.Policy, s.Sandbox
			if a.Name != "mine" || a.Driver != "acp" || a.Model != "m" || a.Mode != "plan" || len(a.Custom) != 1 {
				t.Errorf("agent %+v", a)
			}
			if p.File != "p.toml" || p.Approve != "all" || p.NonInteractive != "fail" || p.Remember != "run" || !p.AllowDenials || !slices.Equal(p.Deny, []string{"read"}) {
				t.Errorf("policy %+v", p)
			}
			if sb.Mode != "on" || !slices.Equal(sb.NetAllow, []string{"h:1"}) || !slices.Equal(s.Env, []string{"K=V"}) {
				t.Errorf("sandbox %+v env %q", sb, s.Env)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.f.spec(custom, "/ws", []string{"/more"}, "run-x")
			if s.Cwd != "/ws" || !slices.Equal(s.AddDirs, []string{"/more"}) {
				t.Errorf("cwd %q add dirs %q", s.Cwd, s.AddDirs)
			}
			tt.check(t, s)
		})
	}
}
