// Package agentspec is the one resolver of tai's front ends. A Spec says
// which agent runs (a preset, a config.toml agent, a command line or an A2A
// agent's URL, with its driver, quirks, model and mode), where (the
// workspace and its extra roots), under which policy, and how it is
// sandboxed. Resolve turns it into the runner's options, the policy engine
// and the sandbox config.
//
// tai run, tai chat, tai acp, fleets (and so tai worker) each turn their
// flags, plan fields or settings into a Spec and call Resolve, so an agent
// runs the same whichever front end starts it: the same command for a
// driver, the same quirks, the same state directories for tai as the
// agent, and a sandbox built from the policy the agent actually runs under.
package agentspec

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/tai-dev/tai/config"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/internal/secretenv"
	"github.com/tai-dev/tai/internal/statedir"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/preset"
	"github.com/tai-dev/tai/runner"
	"github.com/tai-dev/tai/sandbox"
)

// Spec is everything that decides how an agent is started and governed.
type Spec struct {
	Agent Agent
	// Cwd is the workspace, absolute; AddDirs are more workspace roots
	// (--add-dir), absolute. The front end checks they are directories.
	Cwd     string
	AddDirs []string
	// Env is added to tai's environment for the agent (--env KEY=VALUE).
	Env []string
	// BaseEnv is the environment tai runs in, which the agent inherits and
	// the sandbox reads (HOME, XDG dirs); nil is this process's.
	BaseEnv []string
	Policy  Policy
	// Sandbox confines the agent; nil starts it without tai's launcher (a
	// binary that is not tai, such as a unit test, cannot be the launcher).
	Sandbox *Sandbox
}

// Agent names the agent and how it is spoken to.
type Agent struct {
	// Name is a preset or one of Custom's agents; "" is the built-in agent.
	Name string
	// Command is a command line, or an A2A agent's URL (--agent-cmd,
	// agent_cmd). With a preset's Name it runs with that preset's quirks.
	Command string
	Driver  driver.Name // "" is the agent's own
	Model   string
	Mode    string // the session mode to set; "" is the policy's default
	// Script is the built-in agent's script (a plan's script:).
	Script string
	// Exe is the tai binary that is the built-in agent; "" is this one.
	Exe string
	// Custom are config.toml's [[agent]]s. A plan has none: it runs the
	// same on every host.
	Custom []config.Agent
	// CommandHint is how the command is given, for errors: "pass
	// --agent-cmd" (the default) or "set agent_cmd".
	CommandHint string
}

// Policy is where the agent's policy comes from, and who answers its asks.
type Policy struct {
	// File is a policy file (--policy). With none, UserFile loads the
	// user's default policy file where it exists; a fleet's policy is its
	// plan's alone. A workspace's own policy file is never loaded.
	File     string
	UserFile bool
	Approve  string
	Allow    []string
	Ask      []string
	Deny     []string
	// Remember overrides the file's remember scope: run | workspace.
	Remember string
	// NonInteractive overrides the file's: deny | fail.
	NonInteractive string
	AllowDenials   bool
	// Memory shares "always" answers (among a fleet's tasks); nil: the
	// remember scope's own.
	Memory *policy.Memory
	// Asker names whose asks these are when several share the prompter.
	Asker string
	// Protected are more of tai's files (an --audit log) the engine keeps
	// agents from writing.
	Protected []string
	// Prompter asks a human; Answerer is asked first (the cap-speak
	// parent). Either may be nil.
	Prompter policy.Prompter
	Answerer policy.Prompter
}

// Sandbox is how the agent is confined.
type Sandbox struct {
	Mode string // --sandbox: auto ("") | on | off
	// NetAllow, given, turns the network rule on: the HOST:PORT the agent
	// may connect to (and the proxies of its environment).
	NetAllow []string
	// Protect are more of tai's files the agent may not write: the audit
	// log, a worker's task logs.
	Protect []string
	// Write (--sandbox-write) are more write roots: the flag form of the
	// policy's write_roots, with one meaning for both (writable under
	// Landlock, not "outside" for the policy and the file service).
	Write []string
}

// Resolved is a Spec resolved.
type Resolved struct {
	// Options are the runner's options for the agent: Agent, Argv, Env,
	// Driver, Quirks, Cwd, AddDirs, Model, Mode, Decider, Modes,
	// AllowDenials, Protected and Sandbox. The front end adds the prompt,
	// the sinks, the audit log and the rest.
	Options runner.Options
	Preset  preset.Preset
	Engine  *policy.Engine
	// Policy is the policy as loaded (its file's path, rules, elicitation
	// rules); NonInteractive the one in force.
	Policy         policy.Config
	NonInteractive policy.NonInteractive
	Sandbox        *sandbox.Config // nil without Spec.Sandbox
}

// Stage says which part of a Spec an error is about.
type Stage string

// Stages.
const (
	StageAgent   Stage = "agent"
	StagePolicy  Stage = "policy"
	StageSandbox Stage = "sandbox"
)

// Error is a Spec that cannot be resolved. Its text is the cause's: the
// front end names the stage where its users need it (a plan's "policy:").
type Error struct {
	Stage Stage
	Err   error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// StageOf is the stage of an error from Resolve ("" for another error).
func StageOf(err error) Stage {
	var e *Error
	if errors.As(err, &e) {
		return e.Stage
	}
	return ""
}

func stageErr(s Stage, err error) error {
	if err == nil {
		return nil
	}
	if exitcode.Of(err) == exitcode.AgentError {
		err = exitcode.With(exitcode.Usage, err) // a spec's mistake is a usage error
	}
	return &Error{Stage: s, Err: err}
}

// Resolve resolves a Spec: the agent's command and driver, the policy
// engine, and the sandbox built from the policy in force.
func Resolve(s Spec) (Resolved, error) {
	a, err := ResolveAgent(s.Agent)
	if err != nil {
		return Resolved{}, stageErr(StageAgent, err)
	}
	return ResolveFound(s, a)
}

// ResolveFound is Resolve for an agent its front end has already found
// (ResolveAgent, from s.Agent), so that one command finds it once.
func ResolveFound(s Spec, a ResolvedAgent) (Resolved, error) {
	var r Resolved
	var err error
	r.Preset = a.Preset
	o := runner.Options{Agent: a.Preset.Name, Argv: a.Argv, Driver: a.Driver, Quirks: a.Preset.Quirks,
		Cwd: s.Cwd, AddDirs: s.AddDirs, Model: s.Agent.Model, Mode: s.Agent.Mode, AllowDenials: s.Policy.AllowDenials,
		OwnSandbox: a.Preset.OwnSandbox}
	if o.Model != "" && a.Preset.ModelFlag != "" && s.Agent.Command == "" {
		// The preset's own command takes the model as an argument; a
		// command of the user's says its own.
		o.Argv = append(slices.Clip(o.Argv), a.Preset.ModelFlag, o.Model)
		o.Model = ""
	}
	env := s.BaseEnv
	if env == nil {
		env = os.Environ()
	}
	env = secretenv.Scrub(env) // tai's own secrets never reach the agent; a new slice, so appends never write into the caller's
	if len(s.Env) > 0 || s.BaseEnv != nil {
		o.Env = append(env, s.Env...)
	}
	if known, ok := preset.Lookup(a.Preset.Known()); ok && len(known.AskEnv[o.Driver]) > 0 {
		// In place of the user's own setting of it: a launcher that execs
		// directly passes duplicates on, and which one a program reads
		// is its own choice.
		ask := known.AskEnv[o.Driver]
		if o.Env == nil {
			o.Env = env
		}
		o.Env = append(slices.DeleteFunc(o.Env, func(kv string) bool {
			k, _, _ := strings.Cut(kv, "=")
			return slices.ContainsFunc(ask, func(a string) bool { return strings.HasPrefix(a, k+"=") })
		}), ask...)
	}
	if r.Policy, r.NonInteractive, err = loadPolicy(s.Policy); err != nil {
		return r, stageErr(StagePolicy, err)
	}
	if s.Sandbox != nil {
		r.Policy.WriteRoots = append(r.Policy.WriteRoots, s.Sandbox.Write...)
	}
	if r.Policy.WriteRoots, err = writeRoots(r.Policy.WriteRoots, s.Cwd); err != nil {
		return r, stageErr(StagePolicy, err)
	}
	if r.Engine, err = newEngine(s, r.Policy, r.NonInteractive, a.Preset.Modes); err != nil {
		return r, stageErr(StagePolicy, err)
	}
	o.Decider, o.Modes = r.Engine, r.Engine
	if o.Mode == "" {
		o.Mode = r.Engine.DefaultMode()
	}
	if r.Policy.Path != "" {
		o.Protected = append(o.Protected, r.Policy.Path)
	}
	o.WriteRoots = r.Policy.WriteRoots
	if s.Sandbox != nil {
		if r.Sandbox, err = sandboxConfig(*s.Sandbox, a.Preset, r.Policy, s.Policy.File, sandboxEnv(o.Env, env)); err != nil {
			return r, stageErr(StageSandbox, err)
		}
	}
	if IsTai(o.Argv) {
		// tai as the agent (the built-in agent, tai --cap-speak) keeps its
		// state apart from this tai's, which it may not write.
		nested := statedir.Agents()
		if err := os.MkdirAll(nested, 0o700); err != nil {
			return r, &Error{Stage: StageAgent, Err: fmt.Errorf("state directory for tai as the agent: %w", err)}
		}
		if o.Env == nil {
			o.Env = env
		}
		o.Env = append(o.Env, "XDG_STATE_HOME="+nested)
		if r.Sandbox != nil {
			r.Sandbox.Write = append(r.Sandbox.Write, nested)
		}
	}
	o.Sandbox = r.Sandbox
	r.Options = o
	return r, nil
}

// sandboxEnv is the agent's environment when it has its own, else tai's.
func sandboxEnv(agent, tai []string) []string {
	if agent != nil {
		return agent
	}
	return tai
}
