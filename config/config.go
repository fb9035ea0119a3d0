// Package config reads tai's configuration: the user's defaults and agent
// presets ($XDG_CONFIG_HOME/tai/config.toml), and a workspace's project
// file (.tai/config.toml or .tai.toml), which may set only what cannot
// weaken security. The policy is not configuration: it stays in the
// user's policy file, never the workspace's.
//
//	[defaults]
//	agent = "my-claude"    # a preset, or one of the agents below
//	driver = "acp"
//	approve = "reads"      # user file only
//	output = "text"
//
//	[[agent]]
//	name = "my-claude"
//	command = "npx -y @agentclientprotocol/claude-agent-acp"
//	driver = "acp"
//	quirks = ["no_client_fs"]
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/internal/readlimit"
	"github.com/tai-dev/tai/policy"
)

// Key names a setting, as written in the file: "defaults.agent".
type Key string

// The defaults a config file may set.
const (
	KeyAgent   Key = "defaults.agent"
	KeyDriver  Key = "defaults.driver"
	KeyApprove Key = "defaults.approve"
	KeyOutput  Key = "defaults.output"
	KeyAgents  Key = "agent"
)

// Keys lists the settings in the order `tai config show` prints them.
var Keys = []Key{KeyAgent, KeyDriver, KeyApprove, KeyOutput}

// projectKeys are what a project file may set: nothing that loosens the
// policy (approve, policy, sandbox, non_interactive, allow_denials), and no
// agent commands (a cloned repository must not choose what tai executes).
var projectKeys = []Key{KeyAgent, KeyDriver, KeyOutput}

// Quirk names, as written in a preset's quirks list.
const (
	QuirkNoClientFS      = "no_client_fs"
	QuirkIgnoresStdinEOF = "ignores_stdin_eof"
)

// Agent is a custom agent preset.
type Agent struct {
	Name    string      `toml:"name" json:"name"`
	Command string      `toml:"command" json:"command"`
	Driver  driver.Name `toml:"driver" json:"driver,omitempty"`
	Quirks  []string    `toml:"quirks" json:"quirks,omitempty"`
	From    string      `toml:"-" json:"from"`
}

// Value is one setting and where it came from.
type Value struct {
	Key   Key    `json:"key"`
	Value string `json:"value"`
	From  string `json:"from"` // the file, or "" when unset
}

// Config is the merged configuration.
type Config struct {
	values map[Key]Value
	Agents []Agent `json:"agents"`
	// Files are the files read, user file first.
	Files []string `json:"files"`
}

// Get returns a setting ("" when unset).
func (c Config) Get(k Key) string { return c.values[k].Value }

// Values returns every setting in Keys order, set or not.
func (c Config) Values() []Value {
	out := make([]Value, 0, len(Keys))
	for _, k := range Keys {
		v, ok := c.values[k]
		if !ok {
			v = Value{Key: k}
		}
		out = append(out, v)
	}
	return out
}

// Agent returns the custom agent named name.
func (c Config) Agent(name string) (Agent, bool) {
	for _, a := range c.Agents {
		if a.Name == name {
			return a, true
		}
	}
	return Agent{}, false
}

// UserPath is the user's config file: $XDG_CONFIG_HOME/tai/config.toml.
func UserPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "tai", "config.toml"), nil
}

// ProjectPaths are where a workspace's project file may be, in the order
// looked for; the first that exists is read.
func ProjectPaths(workspace string) []string {
	return []string{filepath.Join(workspace, ".tai", "config.toml"), filepath.Join(workspace, ".tai.toml")}
}

// Error is a mistake in a config file.
type Error struct {
	File string
	Msg  string
	Err  error // ErrWeakens, or nil
}

func (e *Error) Error() string { return e.File + ": " + e.Msg }

func (e *Error) Unwrap() error { return e.Err }

// ErrWeakens marks a project file setting what only the user may set.
var ErrWeakens = errors.New("a project file cannot set this: it could weaken security")

// Load reads the user's file (userPath; "" = UserPath, and a missing file
// is no configuration) and, if workspace is not "", the project file in
// it. A project value overrides the user's.
func Load(userPath, workspace string) (Config, error) {
	c := Config{values: map[Key]Value{}, Agents: []Agent{}}
	if userPath == "" {
		p, err := UserPath()
		if err != nil {
			return c, nil // no config directory: no configuration
		}
		userPath = p
	}
	if err := c.read(userPath, false); err != nil {
		return c, err
	}
	if workspace != "" {
		for _, p := range ProjectPaths(workspace) {
			if _, err := os.Stat(p); err == nil {
				if err := c.read(p, true); err != nil {
					return c, err
				}
				break
			}
		}
	}
	return c, nil
}

type file struct {
	Defaults map[string]any `toml:"defaults"`
	Agent    []Agent        `toml:"agent"`
}

func (c *Config) read(path string, project bool) error {
	data, err := readlimit.ReadFile(path, readlimit.Config)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &Error{File: path, Msg: err.Error()}
	}
	if err := policy.CheckDepth(path, data, policy.MaxDepth); err != nil {
		return err
	}
	var f file
	md, err := toml.Decode(string(data), &f)
	if err != nil {
		return &Error{File: path, Msg: strings.TrimPrefix(err.Error(), "toml: ")}
	}
	if un := md.Undecoded(); len(un) > 0 {
		k := un[0]
		return &Error{File: path, Msg: fmt.Sprintf("unknown key %s%s", k, weakHint(k[len(k)-1]))}
	}
	c.Files = append(c.Files, path)
	keys := make([]string, 0, len(f.Defaults))
	for k := range f.Defaults {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		key := Key("defaults." + k)
		if !slices.Contains(Keys, key) {
			return &Error{File: path, Msg: fmt.Sprintf("unknown key %s (known: %s)%s", key, keyList(Keys), weakHint(k))}
		}
		s, ok := f.Defaults[k].(string)
		if !ok {
			return &Error{File: path, Msg: fmt.Sprintf("%s must be a string", key)}
		}
		if project && !slices.Contains(projectKeys, key) {
			return &Error{File: path, Msg: fmt.Sprintf("%s: %v; set it in your own config (%s) or with a flag", key, ErrWeakens, userHint()), Err: ErrWeakens}
		}
		c.values[key] = Value{Key: key, Value: s, From: path}
	}
	if len(f.Agent) > 0 && project {
		return &Error{File: path, Msg: fmt.Sprintf("[[agent]]: %v (an agent preset is a command tai runs); define agents in %s", ErrWeakens, userHint()), Err: ErrWeakens}
	}
	for i, a := range f.Agent {
		switch {
		case a.Name == "":
			return &Error{File: path, Msg: fmt.Sprintf("[[agent]] #%d has no name", i+1)}
		case strings.TrimSpace(a.Command) == "":
			return &Error{File: path, Msg: fmt.Sprintf("agent %q has no command", a.Name)}
		}
		for _, q := range a.Quirks {
			if q != QuirkNoClientFS && q != QuirkIgnoresStdinEOF {
				return &Error{File: path, Msg: fmt.Sprintf("agent %q: unknown quirk %q (known: %s, %s)", a.Name, q, QuirkNoClientFS, QuirkIgnoresStdinEOF)}
			}
		}
		if _, dup := c.Agent(a.Name); dup {
			return &Error{File: path, Msg: fmt.Sprintf("agent %q is defined twice", a.Name)}
		}
		a.From = path
		c.Agents = append(c.Agents, a)
	}
	return nil
}

// weakHint explains why a policy-like key is not configuration.
func weakHint(k string) string {
	switch strings.ReplaceAll(strings.TrimPrefix(k, "defaults."), "-", "_") {
	case "policy", "sandbox", "non_interactive", "allow_denials", "rule", "floor", "approve":
		return " (policy settings live in the policy file, never in a config file)"
	}
	return ""
}

func userHint() string {
	if p, err := UserPath(); err == nil {
		return p
	}
	return "$XDG_CONFIG_HOME/tai/config.toml"
}

func keyList(ks []Key) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}
