// Package preset knows the coding agents tai can launch by name: the command
// that starts each one speaking a given protocol, and the quirks tai works
// around for it.
package preset

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/shlex"

	"github.com/tai-dev/tai/driver"
)

// Preset is a known agent.
type Preset struct {
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Driver      driver.Name `json:"driver"`
	Binary      string      `json:"binary"`         // looked up in PATH to decide "installed"
	Args        []string    `json:"args,omitempty"` // arguments after Binary
	Fallback    []string    `json:"fallback,omitempty"`
	Package     string      `json:"package,omitempty"` // npm package, for the install hint
	// Quirks are the fixes the driver applies for this agent; they live
	// with the preset, so every front end gets them.
	Quirks driver.Quirks `json:"quirks"`
	// Builtin marks tai's own agent, launched by re-executing tai.
	Builtin bool `json:"builtin,omitempty"`
	// Drivers are the agent's commands for drivers other than Driver (the
	// default): the binary (looked up in PATH) and its arguments.
	Drivers map[driver.Name][]string `json:"drivers,omitempty"`
	// Modes names the agent's self-approving modes and the mode in which
	// it asks (policy.SelfApproving); unset, the general rule applies.
	Modes driver.ModeRule `json:"modes,omitzero"`
	// OwnSandbox names the agent's own sandbox, if it has one ("" = none),
	// for the result's and tai doctor's confinement. codex's (bubblewrap)
	// cannot start under tai's: Landlock forbids the mounts it makes.
	OwnSandbox string `json:"own_sandbox,omitempty"`
	// AskEnv is, by driver, the environment that makes an agent without
	// session modes ask before it edits or runs a command, where its own
	// default is to ask nothing: tai sets it on every launch with that
	// driver (over the user's variable of that name), so that tai's
	// policy decides those calls, as the starting-mode rule makes agents
	// with modes ask. Only drivers whose asks reach tai have one: an agent
	// run one-shot with no way to ask would refuse what it would ask.
	AskEnv map[driver.Name][]string `json:"ask_env,omitempty"`
	// Kind is the known agent a custom command runs (Recognize): its
	// state directories, config files, modes and quirks are that preset's.
	Kind string `json:"kind,omitempty"`
	// ModelFlag is the option by which the agent takes its model on its
	// command line ("" = none): gemini offers no model config option over
	// ACP, so --model reaches it as `-m MODEL`.
	ModelFlag string `json:"model_flag,omitempty"`
}

// Known is the preset whose state directories and config files apply:
// the one a custom command was recognized as, else this one.
func (p Preset) Known() string {
	if p.Kind != "" {
		return p.Kind
	}
	return p.Name
}

// Recognize finds the known agent a command runs: its binary by name
// (claude-agent-acp, codex-acp, gemini, ...), its npm package run through
// npx or node (with or without a version), or tai's built-in agent (tai
// agent builtin).
func Recognize(argv []string) (Preset, bool) {
	if len(argv) == 0 {
		return Preset{}, false
	}
	bin := filepath.Base(argv[0])
	if bin == "tai" && len(argv) >= 3 && argv[1] == "agent" && argv[2] == "builtin" {
		return Lookup("builtin")
	}
	var pkg string
	if bin == "npx" || bin == "node" || bin == "bunx" || bin == "pnpx" {
		for _, a := range argv[1:] {
			if !strings.HasPrefix(a, "-") {
				pkg = a
				break
			}
		}
		// @scope/name@version, name@version.
		if i := strings.LastIndex(pkg, "@"); i > 0 {
			pkg = pkg[:i]
		}
	}
	for _, p := range All() {
		if p.Builtin {
			continue
		}
		if bin == p.Binary || (pkg != "" && (pkg == p.Package || filepath.Base(pkg) == p.Binary)) {
			return p, true
		}
	}
	return Preset{}, false
}

// copilotModes prefixes Copilot's mode ids.
const copilotModes = "https://agentclientprotocol.com/protocol/session-modes#"

// opencodeAsks makes opencode ask before edits, commands and fetches.
var opencodeAsks = []string{`OPENCODE_PERMISSION={"edit":"ask","bash":"ask","webfetch":"ask"}`}

// CommandFor returns the argv that launches the agent for the named driver:
// Command for its default driver, else the binary of its Drivers entry
// found in PATH.
func (p Preset) CommandFor(drv driver.Name) ([]string, error) {
	if drv == "" || drv == p.Driver {
		return p.Command()
	}
	argv, ok := p.Drivers[drv]
	if !ok {
		return nil, fmt.Errorf("agent %q has no %s command", p.Name, drv)
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("agent %q (%s driver) is not installed: %s not found in PATH", p.Name, drv, argv[0])
	}
	return append([]string{path}, argv[1:]...), nil
}

// All returns the presets, sorted by name.
func All() []Preset {
	out := []Preset{
		{Name: "builtin", Description: "tai's built-in scripted agent (no model, no API key)", Driver: driver.ACP, Builtin: true,
			Modes: driver.ModeRule{SelfApproving: []string{"auto"}, Asking: "default"}},
		{Name: "claude", Description: "Claude Code through the ACP adapter", Driver: driver.ACP, Binary: "claude-agent-acp",
			Fallback: []string{"npx", "-y", "@agentclientprotocol/claude-agent-acp"}, Package: "@agentclientprotocol/claude-agent-acp",
			Quirks: driver.Quirks{IgnoresStdinEOF: true},
			Drivers: map[driver.Name][]string{driver.StreamJSON: {"claude", "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"},
				driver.PTY: {"claude"}},
			// claude-agent-acp 0.101 starts in auto ("Claude handles
			// permission decisions").
			Modes: driver.ModeRule{SelfApproving: []string{"auto", "bypassPermissions"}, Asking: "default"}},
		{Name: "codex", Description: "OpenAI Codex through codex-acp", Driver: driver.ACP, Binary: "codex-acp",
			Fallback: []string{"npx", "-y", "@agentclientprotocol/codex-acp"}, Package: "@agentclientprotocol/codex-acp",
			Quirks: driver.Quirks{IgnoresStdinEOF: true},
			// The TUI with --no-daemon: by default codex 0.171 starts a
			// shared app server that outlives the TUI (a process left behind
			// the run) and that the TUI cannot reach from tai's sandbox.
			Drivers: map[driver.Name][]string{driver.StreamJSON: {"codex", "exec", "--json"}, driver.PTY: {"codex", "--no-daemon"}},
			// codex-acp 2.x starts in agent ("Auto review": a model
			// approves); in workspace-write codex edits the workspace
			// without asking; read-only asks for every edit.
			Modes:      driver.ModeRule{SelfApproving: []string{"agent", "agent-full-access", "workspace-write"}, Asking: "read-only"},
			OwnSandbox: "bubblewrap"},
		{Name: "gemini", Description: "Gemini CLI", Driver: driver.ACP, Binary: "gemini", Args: []string{"--acp"},
			Fallback: []string{"npx", "-y", "@google/gemini-cli", "--acp"}, Package: "@google/gemini-cli",
			Quirks:  driver.Quirks{NoClientFS: true},
			Drivers: map[driver.Name][]string{driver.StreamJSON: {"gemini", "--output-format", "stream-json"}, driver.PTY: {"gemini"}},
			Modes:   driver.ModeRule{SelfApproving: []string{"yolo"}, Asking: "default"}, ModelFlag: "-m"},
		{Name: "qwen", Description: "Qwen Code", Driver: driver.ACP, Binary: "qwen", Args: []string{"--acp"},
			Fallback: []string{"npx", "-y", "@qwen-code/qwen-code", "--acp"}, Package: "@qwen-code/qwen-code",
			Drivers: map[driver.Name][]string{driver.StreamJSON: {"qwen", "--input-format", "stream-json", "--output-format", "stream-json", "--approval-mode", "default"},
				driver.PTY: {"qwen", "--approval-mode", "default"}},
			// auto: an LLM classifier approves; auto-edit, like claude's
			// acceptEdits, still asks before commands.
			Modes: driver.ModeRule{SelfApproving: []string{"auto", "yolo"}, Asking: "default"}},
		{Name: "opencode", Description: "OpenCode", Driver: driver.ACP, Binary: "opencode", Args: []string{"acp"},
			Fallback: []string{"npx", "-y", "opencode-ai", "acp"}, Package: "opencode-ai",
			// opencode has no ACP modes, and by default asks for nothing;
			// OPENCODE_PERMISSION is merged over its config's permissions.
			// Not for `opencode run` (stream-json): it has no way to ask.
			AskEnv:  map[driver.Name][]string{driver.ACP: opencodeAsks, driver.PTY: opencodeAsks},
			Drivers: map[driver.Name][]string{driver.StreamJSON: {"opencode", "run", "--format", "json"}, driver.PTY: {"opencode"}}},
		{Name: "copilot", Description: "GitHub Copilot CLI", Driver: driver.ACP, Binary: "copilot", Args: []string{"--acp", "--stdio"},
			Fallback: []string{"npx", "-y", "@github/copilot", "--acp", "--stdio"}, Package: "@github/copilot",
			Drivers: map[driver.Name][]string{driver.PTY: {"copilot"}},
			// Its modes are ACP's URLs: agent (the conversational agent,
			// which asks before acting) is its asking mode; autopilot acts
			// on its own.
			Modes: driver.ModeRule{SelfApproving: []string{copilotModes + "autopilot"}, Asking: copilotModes + "agent"}},
		{Name: "goose", Description: "Block's goose", Driver: driver.ACP, Binary: "goose", Args: []string{"acp"}},
		{Name: "kimi", Description: "Moonshot Kimi CLI", Driver: driver.ACP, Binary: "kimi", Args: []string{"acp"}},
		{Name: "cursor", Description: "Cursor agent CLI", Driver: driver.ACP, Binary: "cursor-agent", Args: []string{"acp"},
			Drivers: map[driver.Name][]string{driver.StreamJSON: {"cursor-agent", "-p", "--output-format", "stream-json"}}},
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	// The npx fallback installs the tested release (tested.tsv), not
	// whatever the registry has newest.
	for i := range out {
		if r, ok := out[i].TestedRange(); ok {
			for j, a := range out[i].Fallback {
				if a == out[i].Package {
					out[i].Fallback[j] = a + "@" + r.Newest
				}
			}
		}
	}
	return out
}

// Names returns the preset names.
func Names() []string {
	var n []string
	for _, p := range All() {
		n = append(n, p.Name)
	}
	return n
}

// Lookup finds a preset by name.
func Lookup(name string) (Preset, bool) {
	for _, p := range All() {
		if p.Name == name {
			return p, true
		}
	}
	return Preset{}, false
}

// Installed reports whether the preset's binary is on PATH, and where.
func (p Preset) Installed() (string, bool) {
	if p.Builtin {
		exe, err := os.Executable()
		return exe, err == nil
	}
	path, err := exec.LookPath(p.Binary)
	return path, err == nil
}

// Command returns the argv that launches the agent: the installed binary if
// there is one, else the fallback (usually npx), else an error saying how to
// install it.
func (p Preset) Command() ([]string, error) {
	if p.Builtin {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("locating the tai binary for the built-in agent: %w", err)
		}
		return []string{exe, "agent", "builtin"}, nil
	}
	if path, ok := p.Installed(); ok {
		return append([]string{path}, p.Args...), nil
	}
	if len(p.Fallback) > 0 {
		if _, err := exec.LookPath(p.Fallback[0]); err == nil {
			return append([]string(nil), p.Fallback...), nil
		}
	}
	hint := ""
	if p.Package != "" {
		hint = fmt.Sprintf(" (npm install -g %s)", p.Package)
	}
	return nil, fmt.Errorf("agent %q is not installed: %s not found in PATH%s", p.Name, p.Binary, hint)
}

// Custom returns a preset for an arbitrary command line
// (--agent-cmd 'npx -y some-agent --acp'). The command is split like a shell
// would, but never run through one: a login shell's profile output would
// corrupt the protocol on stdout.
func Custom(cmdline string) (Preset, []string, error) {
	argv, err := shlex.Split(cmdline)
	if err != nil {
		return Preset{}, nil, fmt.Errorf("parsing --agent-cmd: %w", err)
	}
	if len(argv) == 0 {
		return Preset{}, nil, fmt.Errorf("--agent-cmd is empty")
	}
	// A URL is an A2A agent's endpoint, not a command.
	if u, err := url.Parse(argv[0]); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return Preset{Name: u.Host, Description: "A2A agent at " + argv[0], Driver: driver.A2A, Binary: argv[0]}, argv, nil
	}
	name := filepath.Base(argv[0])
	if name == "npx" || name == "node" || name == "uvx" {
		for _, a := range argv[1:] {
			if !strings.HasPrefix(a, "-") {
				name = strings.TrimSuffix(filepath.Base(a), ".js")
				break
			}
		}
	}
	p := Preset{Name: name, Description: "custom command", Driver: driver.ACP, Binary: argv[0]}
	if known, ok := Recognize(argv); ok {
		// A known agent by another command: its state directories (which
		// it needs under the sandbox), config files, modes and quirks.
		p.Kind, p.Modes, p.OwnSandbox, p.Quirks = known.Name, known.Modes, known.OwnSandbox, known.Quirks
	}
	return p, argv, nil
}
