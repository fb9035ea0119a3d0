package agentspec

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tai-dev/tai/config"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/preset"
)

// ResolvedAgent is an agent found: its preset (a known one, a config
// agent's or a command's), the command that starts it, and its driver.
type ResolvedAgent struct {
	Preset preset.Preset
	Argv   []string
	Driver driver.Name
}

// ResolveAgent finds the agent a names and the command that starts it
// for its driver. Its errors are usage errors.
func ResolveAgent(a Agent) (ResolvedAgent, error) {
	p, argv, err := findAgent(a)
	if err != nil {
		return ResolvedAgent{}, exitcode.With(exitcode.Usage, err)
	}
	drv := a.Driver
	if drv == "" {
		drv = p.Driver
	}
	return ResolvedAgent{Preset: p, Argv: argv, Driver: drv}, nil
}

func findAgent(a Agent) (preset.Preset, []string, error) {
	if a.Command != "" {
		p, argv, err := preset.Custom(a.Command)
		if err != nil {
			return p, nil, err
		}
		if known, ok := preset.Lookup(a.Name); ok && a.Name != "builtin" {
			// A preset name plus a command: the command, with the preset's quirks.
			p.Quirks, p.Name = known.Quirks, known.Name
			p.Modes, p.OwnSandbox = known.Modes, known.OwnSandbox // and its modes and sandbox
			p.Kind = ""                                           // the name says which agent it is, whatever the command looks like
		}
		return p, argv, nil
	}
	if c, ok := customAgent(a.Custom, a.Name); ok {
		return configAgent(c)
	}
	name := a.Name
	if name == "" {
		name = "builtin"
	}
	known, ok := preset.Lookup(name)
	if !ok {
		names := preset.Names()
		for _, c := range a.Custom {
			names = append(names, c.Name)
		}
		hint := a.CommandHint
		if hint == "" {
			hint = "pass --agent-cmd"
		}
		return known, nil, fmt.Errorf("unknown agent %q (known: %s; or %s)", name, strings.Join(names, ", "), hint)
	}
	// The driver picks the command: claude over ACP is claude-agent-acp,
	// over stream-json the claude CLI itself.
	argv, err := known.CommandFor(a.Driver)
	if err != nil {
		return known, nil, err
	}
	if known.Builtin {
		if a.Exe != "" {
			argv[0] = a.Exe
		}
		if a.Script != "" {
			argv = append(argv, "--script", a.Script)
		}
	}
	return known, argv, nil
}

func customAgent(list []config.Agent, name string) (config.Agent, bool) {
	for _, c := range list {
		if c.Name == name && name != "" {
			return c, true
		}
	}
	return config.Agent{}, false
}

// configAgent is a config.toml agent as a preset and its argv.
func configAgent(a config.Agent) (preset.Preset, []string, error) {
	p, argv, err := preset.Custom(a.Command)
	if err != nil {
		return p, nil, fmt.Errorf("config agent %q: %w", a.Name, err)
	}
	p.Name = a.Name
	if a.Driver != "" {
		p.Driver = a.Driver
	}
	// The config's quirks add to those of the agent the command was
	// recognized as (preset.Recognize).
	p.Quirks.NoClientFS = p.Quirks.NoClientFS || slices.Contains(a.Quirks, config.QuirkNoClientFS)
	p.Quirks.IgnoresStdinEOF = p.Quirks.IgnoresStdinEOF || slices.Contains(a.Quirks, config.QuirkIgnoresStdinEOF)
	return p, argv, nil
}

// IsTai reports whether argv runs a tai binary (tai as the agent): this
// one, or one named tai.
func IsTai(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	if filepath.Base(argv[0]) == "tai" {
		return true
	}
	exe, err := os.Executable()
	if err != nil {
		return false
	}
	a, err1 := os.Stat(argv[0])
	b, err2 := os.Stat(exe)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}
