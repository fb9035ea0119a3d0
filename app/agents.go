package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/tai-dev/tai/agentspec"
	"github.com/tai-dev/tai/builtin"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/internal/statedir"
	"github.com/tai-dev/tai/preset"
)

// AgentSource says where an agent of `tai agents` comes from.
type AgentSource string

// The agent sources.
const (
	SourcePreset AgentSource = "preset" // built into tai
	SourceConfig AgentSource = "config" // an [[agent]] of config.toml
)

// AgentInfo is one row of `tai agents`.
type AgentInfo struct {
	preset.Preset
	Source AgentSource `json:"source"`
	// From is the config file of a config agent.
	From      string   `json:"from,omitempty"`
	Installed bool     `json:"installed"`
	Path      string   `json:"path,omitempty"`
	Command   []string `json:"command,omitempty"`
	AgentVersion
}

// AgentVersion is the version of an agent installed here and how it
// stands to the releases of its npm package (the preset's Package) that
// tai's suites run (preset/tested.tsv).
type AgentVersion struct {
	Version       string               `json:"version,omitempty"`
	Tested        *preset.Range        `json:"tested,omitempty"`
	VersionStatus preset.VersionStatus `json:"version_status,omitempty"`
}

// agentVersion reads the version of the agent p installed at path
// (known: the preset p is or runs) from its package.json: nothing is run.
func agentVersion(p preset.Preset, path string) AgentVersion {
	var v AgentVersion
	if p.Builtin {
		return AgentVersion{Version: ReadBuildInfo().Version}
	}
	known, ok := preset.Lookup(p.Known())
	if !ok {
		return v
	}
	r, ok := known.TestedRange()
	if !ok {
		return v
	}
	v.Tested = &r
	if path == "" {
		return v // not installed: no version to place
	}
	v.Version, _ = known.InstalledVersion(path)
	v.VersionStatus = r.Status(v.Version)
	return v
}

// npxVersion is the version a command that runs the agent through npx
// (or bunx, pnpx) asks for, "latest" when it names none: what is
// installed beside npx says nothing of what npx runs.
func npxVersion(p preset.Preset, argv []string) (AgentVersion, bool) {
	switch filepath.Base(argv[0]) {
	case "npx", "bunx", "pnpx":
	default:
		return AgentVersion{}, false
	}
	v := agentVersion(p, "")
	for _, a := range argv[1:] {
		if strings.HasPrefix(a, "-") {
			continue
		}
		if i := strings.LastIndex(a, "@"); i > 0 {
			v.Version = a[i+1:]
		} else {
			v.Version = "latest"
		}
		break
	}
	if v.Tested != nil {
		v.VersionStatus = v.Tested.Status(v.Version)
	}
	return v, true
}

// String is the version as the text listings show it.
func (v AgentVersion) String() string {
	switch {
	case v.Version == "":
		return "-"
	case v.VersionStatus == preset.VersionOlder || v.VersionStatus == preset.VersionNewer:
		return fmt.Sprintf("%s (%s %s)", v.Version, v.VersionStatus, v.Tested)
	}
	return v.Version
}

// testedString is the tested range as the text listings show it.
func (v AgentVersion) testedString() string {
	if v.Tested == nil {
		return "-"
	}
	return v.Tested.String()
}

// listAgents is the presets, then the agents of the user's config.toml.
func listAgents() ([]AgentInfo, error) {
	var rows []AgentInfo
	for _, p := range preset.All() {
		path, ok := p.Installed()
		argv, _ := p.Command()
		rows = append(rows, AgentInfo{Preset: p, Source: SourcePreset, Installed: ok, Path: path, Command: argv,
			AgentVersion: agentVersion(p, path)})
	}
	cfg, err := loadConfig("")
	if err != nil {
		return rows, err
	}
	for _, c := range cfg.Agents {
		r, err := agentspec.ResolveAgent(agentspec.Agent{Name: c.Name, Custom: cfg.Agents})
		if err != nil {
			return rows, exitcode.With(exitcode.Usage, fmt.Errorf("config: %s: %w", c.From, err))
		}
		row := AgentInfo{Preset: r.Preset, Source: SourceConfig, From: c.From, Command: r.Argv}
		row.Driver = r.Driver
		if known, ok := preset.Lookup(r.Preset.Kind); ok {
			row.Package = known.Package
		}
		if path, err := exec.LookPath(r.Argv[0]); err == nil {
			row.Installed, row.Path = true, path
			row.AgentVersion = agentVersion(r.Preset, path)
		}
		if v, ok := npxVersion(r.Preset, r.Argv); ok {
			row.AgentVersion = v
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// Agents lists the presets and the config's agents, whether each is
// installed here, and at which version.
func Agents(w io.Writer, asJSON bool) error {
	rows, err := listAgents()
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(w, rows)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tDRIVER\tINSTALLED\tVERSION\tTESTED\tPACKAGE\tCOMMAND")
	for _, r := range rows {
		inst := "no"
		if r.Installed {
			inst = "yes"
		}
		cmd := strings.Join(r.Command, " ")
		if r.Builtin {
			cmd = "tai agent builtin"
		}
		if cmd == "" {
			cmd = strings.Join(append([]string{r.Binary}, r.Args...), " ") + "  (not found)"
		}
		if r.Source == SourceConfig {
			cmd += "  (config: " + r.From + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Driver, inst, r.AgentVersion, r.testedString(), orDash(r.Package), cmd)
	}
	return tw.Flush()
}

// builtinOptions are the built-in agent's options: its agentInfo.version
// is tai's Version.
func builtinOptions(std IO, pageSize int) builtin.Options {
	return builtin.Options{Logger: newLogger(std.Err, std.Getenv("TAI_DEBUG") != ""), Stderr: std.Err, Version: Version,
		StateDir: statedir.BuiltinSessions(), PageSize: pageSize}
}

// BuiltinAgent runs tai's built-in agent on stdin/stdout.
// pageSize is its session/list page (0: the default).
func BuiltinAgent(ctx context.Context, scriptPath string, printScript bool, pageSize int, std IO) error {
	if printScript {
		_, _ = std.Out.Write(builtin.DefaultScriptSource())
		return nil
	}
	opts := builtinOptions(std, pageSize)
	if pageSize < 0 {
		return exitcode.Usagef("agent builtin: --page-size must not be negative")
	}
	if scriptPath != "" {
		s, err := builtin.LoadScript(scriptPath)
		if err != nil {
			return exitcode.With(exitcode.Usage, fmt.Errorf("agent builtin: %w", err))
		}
		opts.Script = s
	}
	err := builtin.Serve(ctx, std.In, std.Out, opts)
	if err == nil {
		return nil
	}
	var ce *builtin.CrashError
	if errors.As(err, &ce) {
		return exit(ce.Code) // a scripted crash: its code, nothing said
	}
	return exitcode.With(exitcode.AgentError, fmt.Errorf("agent builtin: %w", err))
}

// AgentNames returns the preset names, for completion.
func AgentNames() []string { return preset.Names() }
