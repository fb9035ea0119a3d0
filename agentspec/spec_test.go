package agentspec

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tai-dev/tai/config"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/policy"
)

// Spec → options, for what tai run and a fleet each used to resolve their
// own way: the built-in agent (its binary, script and state), a command
// with a preset's quirks, an A2A URL, a config.toml agent, the policy and
// the sandbox built from it.
func TestResolve(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no user policy file
	ws := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	nested := "XDG_STATE_HOME=" + filepath.Join(state, "tai", "agents")
	secret := filepath.Join(t.TempDir(), "secret")
	custom := []config.Agent{{Name: "mine", Command: "my-agent --stdio", Driver: "stream-json", Quirks: []string{config.QuirkIgnoresStdinEOF}}}

	tests := []struct {
		name  string
		spec  Spec
		check func(t *testing.T, r Resolved)
		err   string // the error it fails with
		stage Stage
	}{
		{name: "built-in agent by default", spec: Spec{}, check: func(t *testing.T, r Resolved) {
			o := r.Options
			if o.Agent != "builtin" || o.Driver != "acp" || !slices.Equal(o.Argv, []string{exe, "agent", "builtin"}) {
				t.Errorf("agent %q driver %q argv %q", o.Agent, o.Driver, o.Argv)
			}
			// tai as the agent keeps its state apart, in run and fleet alike.
			if !slices.Contains(o.Env, nested) {
				t.Errorf("env has no %s", nested)
			}
		}},
		{name: "built-in agent of a plan: its binary and script", spec: Spec{Agent: Agent{Name: "builtin", Exe: "/opt/tai", Script: "/p/s.yaml"}}, check: func(t *testing.T, r Resolved) {
			if want := []string{"/opt/tai", "agent", "builtin", "--script", "/p/s.yaml"}; !slices.Equal(r.Options.Argv, want) {
				t.Errorf("argv %q, want %q", r.Options.Argv, want)
			}
		}},
		{name: "built-in agent has no stream-json command", spec: Spec{Agent: Agent{Driver: "stream-json"}},
			err: `agent "builtin" has no stream-json command`, stage: StageAgent},
		{name: "a command with a preset's quirks", spec: Spec{Agent: Agent{Name: "gemini", Command: "my-gemini --acp", Model: "m1"}}, check: func(t *testing.T, r Resolved) {
			o := r.Options
			if o.Agent != "gemini" || !o.Quirks.NoClientFS || !slices.Equal(o.Argv, []string{"my-gemini", "--acp"}) || o.Model != "m1" {
				t.Errorf("agent %q quirks %+v argv %q model %q", o.Agent, o.Quirks, o.Argv, o.Model)
			}
			if o.Env != nil {
				t.Errorf("env %q for an agent that is not tai", o.Env)
			}
		}},
		{name: "gemini's preset takes --model on its command line", spec: Spec{Agent: Agent{Name: "gemini", Model: "gemini-2.5-flash"}}, check: func(t *testing.T, r Resolved) {
			o := r.Options
			if n := len(o.Argv); n < 2 || !slices.Equal(o.Argv[n-2:], []string{"-m", "gemini-2.5-flash"}) || o.Model != "" {
				t.Errorf("argv %q model %q: want -m gemini-2.5-flash last, and no model config option to set", o.Argv, o.Model)
			}
		}},
		{name: "opencode is made to ask where it can ask tai", spec: Spec{Agent: Agent{Name: "opencode"}}, check: func(t *testing.T, r Resolved) {
			if !slices.ContainsFunc(r.Options.Env, func(kv string) bool { return strings.HasPrefix(kv, "OPENCODE_PERMISSION=") }) {
				t.Errorf("env has no OPENCODE_PERMISSION over ACP")
			}
		}},
		{name: "opencode's one-shot run is not: it cannot ask", spec: Spec{Agent: Agent{Name: "opencode", Command: "opencode run --format json", Driver: "stream-json"}}, check: func(t *testing.T, r Resolved) {
			if slices.ContainsFunc(r.Options.Env, func(kv string) bool { return strings.HasPrefix(kv, "OPENCODE_PERMISSION=") }) {
				t.Errorf("stream-json env sets OPENCODE_PERMISSION: opencode run would reject every write")
			}
		}},
		{name: "an A2A URL", spec: Spec{Agent: Agent{Command: "http://127.0.0.1:9/a2a"}}, check: func(t *testing.T, r Resolved) {
			if r.Options.Driver != "a2a" || r.Options.Agent != "127.0.0.1:9" {
				t.Errorf("driver %q agent %q", r.Options.Driver, r.Options.Agent)
			}
		}},
		{name: "a config.toml agent", spec: Spec{Agent: Agent{Name: "mine", Custom: custom}}, check: func(t *testing.T, r Resolved) {
			o := r.Options
			if o.Agent != "mine" || o.Driver != "stream-json" || o.Quirks != (driver.Quirks{IgnoresStdinEOF: true}) {
				t.Errorf("agent %q driver %q quirks %+v", o.Agent, o.Driver, o.Quirks)
			}
		}},
		{name: "unknown agent, named as a flag", spec: Spec{Agent: Agent{Name: "nosuch", Custom: custom}},
			err: `unknown agent "nosuch" (known: builtin, `, stage: StageAgent},
		{name: "unknown agent, named as a plan key", spec: Spec{Agent: Agent{Name: "nosuch", CommandHint: "set agent_cmd"}},
			err: "; or set agent_cmd)", stage: StageAgent},
		{name: "the policy's mode, denials and default session mode", spec: Spec{Policy: Policy{Approve: "all", AllowDenials: true}}, check: func(t *testing.T, r Resolved) {
			if r.Engine.Mode() != policy.ApproveAll || !r.Options.AllowDenials || r.Options.Decider == nil || r.Options.Modes == nil {
				t.Errorf("mode %q allow denials %v", r.Engine.Mode(), r.Options.AllowDenials)
			}
			if r.Options.Mode != r.Engine.DefaultMode() {
				t.Errorf("session mode %q, want the policy's %q", r.Options.Mode, r.Engine.DefaultMode())
			}
		}},
		{name: "a bad approve", spec: Spec{Policy: Policy{Approve: "most"}}, err: "most", stage: StagePolicy},
		{name: "a bad non-interactive", spec: Spec{Policy: Policy{NonInteractive: "maybe"}}, err: "maybe", stage: StagePolicy},
		{name: "a bad sandbox mode", spec: Spec{Sandbox: &Sandbox{Mode: "maybe"}}, err: `--sandbox "maybe"`, stage: StageSandbox},
		{name: "no sandbox: no launcher", spec: Spec{}, check: func(t *testing.T, r Resolved) {
			if r.Options.Sandbox != nil || r.Sandbox != nil {
				t.Errorf("a sandbox without Spec.Sandbox: %+v", r.Sandbox)
			}
		}},
		{name: "the sandbox hides what the policy denies reading", spec: Spec{
			Policy:  Policy{Deny: []string{"read:" + secret + "/**"}},
			Sandbox: &Sandbox{Mode: "off", Protect: []string{"/var/log/tai-audit.jsonl"}, NetAllow: []string{"example.com:443"}},
		}, check: func(t *testing.T, r Resolved) {
			sb := r.Options.Sandbox
			if sb == nil || sb != r.Sandbox {
				t.Fatalf("options' sandbox %p, resolved %p", sb, r.Sandbox)
			}
			if !slices.Contains(sb.Deny, secret) || !slices.Contains(sb.Protect, "/var/log/tai-audit.jsonl") || !slices.Contains(sb.NetAllow, "example.com:443") {
				t.Errorf("deny %q protect %q net %q", sb.Deny, sb.Protect, sb.NetAllow)
			}
			if !slices.Contains(sb.Write, filepath.Join(state, "tai", "agents")) {
				t.Errorf("tai as the agent cannot write its state: %q", sb.Write)
			}
		}},
		{name: "the environment", spec: Spec{Agent: Agent{Command: "a"}, Env: []string{"K=V"}}, check: func(t *testing.T, r Resolved) {
			if env := r.Options.Env; len(env) == 0 || env[len(env)-1] != "K=V" || len(env) != len(os.Environ())+1 {
				t.Errorf("env ends %q", env[max(0, len(env)-2):])
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tt.spec
			spec.Cwd = ws
			r, err := Resolve(spec)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				if StageOf(err) != tt.stage || exitcode.Of(err) != exitcode.Usage {
					t.Errorf("stage %q exit %d, want %q and a usage error", StageOf(err), exitcode.Of(err), tt.stage)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Options.Cwd != ws {
				t.Errorf("cwd %q", r.Options.Cwd)
			}
			tt.check(t, r)
		})
	}
}

// The policy file: --policy's, else the user's default one (tai run), and
// never the user's for a fleet, whose policy is its plan's.
func TestResolvePolicyFile(t *testing.T) {
	cfgHome := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfgHome)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	user := filepath.Join(cfgHome, "tai", "policy.toml")
	if err := os.MkdirAll(filepath.Dir(user), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(user, []byte("mode = \"approve-all\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "p.toml")
	if err := os.WriteFile(other, []byte("mode = \"ask\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		pol  Policy
		path string
		mode policy.Mode
	}{
		{"the user's", Policy{UserFile: true}, user, policy.ApproveAll},
		{"--policy", Policy{File: other, UserFile: true}, other, policy.Ask},
		{"a plan's own", Policy{}, "", policy.ApproveReads},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Resolve(Spec{Cwd: t.TempDir(), Policy: tt.pol, Sandbox: &Sandbox{Mode: "off"}})
			if err != nil {
				t.Fatal(err)
			}
			if r.Policy.Path != tt.path || r.Engine.Mode() != tt.mode {
				t.Errorf("policy %q mode %q, want %q %q", r.Policy.Path, r.Engine.Mode(), tt.path, tt.mode)
			}
			if tt.path != "" && (!slices.Contains(r.Options.Protected, tt.path) || !slices.Contains(r.Sandbox.Protect, tt.path)) {
				t.Errorf("the policy file is not protected: %q, %q", r.Options.Protected, r.Sandbox.Protect)
			}
		})
	}
	if _, err := Resolve(Spec{Cwd: t.TempDir(), Policy: Policy{File: filepath.Join(t.TempDir(), "none.toml")}}); err == nil || !strings.HasPrefix(err.Error(), "--policy: ") {
		t.Errorf("a missing --policy file: %v", err)
	}
}
