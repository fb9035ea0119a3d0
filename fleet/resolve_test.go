package fleet

import (
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/agentspec"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/runner"
)

// A task's plan fields → the runner's options, through the resolver tai
// run uses: the built-in agent with the plan's binary and script, the
// plan's defaults, the task's policy (allow_denials, its mode) and a
// sandbox that hides what that policy denies reading.
func TestTaskResolve(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	dir, cwd := t.TempDir(), t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	plan := &Plan{Dir: dir, Defaults: AgentSpec{Script: "s.yaml", Mode: "plan"},
		Policy: Policy{Approve: "all", Deny: []string{"read:" + secret + "/**"}}}
	tests := []struct {
		name   string
		a      AgentSpec
		tp     *Policy
		sb     *agentspec.Sandbox
		check  func(t *testing.T, o optsAndEngine)
		errHas string
	}{
		{name: "the built-in agent, from the defaults", sb: &agentspec.Sandbox{Mode: "off"}, tp: &Policy{AllowDenials: true}, check: func(t *testing.T, r optsAndEngine) {
			o := r.opts
			if want := []string{"/opt/tai", "agent", "builtin", "--script", filepath.Join(dir, "s.yaml")}; !slices.Equal(o.Argv, want) {
				t.Errorf("argv %q, want %q", o.Argv, want)
			}
			if o.Mode != "plan" || !o.AllowDenials || r.eng.Mode() != policy.ApproveAll {
				t.Errorf("mode %q allow denials %v approve %q", o.Mode, o.AllowDenials, r.eng.Mode())
			}
			if o.Sandbox == nil || !slices.Contains(o.Sandbox.Deny, secret) {
				t.Errorf("the plan's deny-read path is not hidden: %+v", o.Sandbox)
			}
			if !slices.ContainsFunc(o.Env, func(e string) bool { return strings.HasPrefix(e, "XDG_STATE_HOME=") }) {
				t.Errorf("tai as the agent shares this tai's state")
			}
		}},
		{name: "a command with a preset's quirks", a: AgentSpec{Agent: "gemini", AgentCmd: "my-gemini --acp"}, check: func(t *testing.T, r optsAndEngine) {
			if r.opts.Agent != "gemini" || !r.opts.Quirks.NoClientFS || r.opts.Sandbox != nil {
				t.Errorf("agent %q quirks %+v sandbox %+v", r.opts.Agent, r.opts.Quirks, r.opts.Sandbox)
			}
		}},
		{name: "the built-in agent over another driver", a: AgentSpec{Agent: "builtin", Driver: "stream-json"}, errHas: "no stream-json command"},
		{name: "a bad policy", tp: &Policy{NonInteractive: "maybe"}, errHas: "policy: "},
		{name: "a bad sandbox", sb: &agentspec.Sandbox{Mode: "maybe"}, errHas: "sandbox: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fleet{o: Options{Exe: "/opt/tai", Sandbox: tt.sb}, plan: plan, memory: policy.NewMemory(policy.ScopeRun),
				clock: quartz.NewMock(t), log: slog.New(slog.DiscardHandler)}
			o, eng, err := f.resolve(tt.a, plan.effectivePolicy(tt.tp), cwd, "task x")
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("err %v, want %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.Cwd != cwd || o.Clock != f.clock {
				t.Errorf("cwd %q clock %v", o.Cwd, o.Clock)
			}
			tt.check(t, optsAndEngine{o, eng})
		})
	}
}

type optsAndEngine struct {
	opts runner.Options
	eng  *policy.Engine
}
