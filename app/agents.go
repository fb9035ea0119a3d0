package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/tai-dev/tai/builtin"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/internal/statedir"
	"github.com/tai-dev/tai/preset"
)

// AgentInfo is one row of `tai agents`.
type AgentInfo struct {
	preset.Preset
	Installed bool     `json:"installed"`
	Path      string   `json:"path,omitempty"`
	Command   []string `json:"command,omitempty"`
}

// Agents lists the presets and whether each is installed here.
func Agents(w io.Writer, asJSON bool) error {
	var rows []AgentInfo
	for _, p := range preset.All() {
		path, ok := p.Installed()
		argv, _ := p.Command()
		rows = append(rows, AgentInfo{Preset: p, Installed: ok, Path: path, Command: argv})
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rows)
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tDRIVER\tINSTALLED\tCOMMAND")
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, r.Driver, inst, cmd)
	}
	_ = tw.Flush()
	return nil
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
