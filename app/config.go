package app

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/tai-dev/tai/config"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/preset"
	"github.com/tai-dev/tai/runner"
)

// loadConfig reads the user's config file and workspace's project file.
// A mistake in either is a usage error.
func loadConfig(workspace string) (config.Config, error) {
	c, err := config.Load("", workspace)
	if err != nil {
		return c, exitcode.With(exitcode.Usage, fmt.Errorf("config: %w", err))
	}
	for _, v := range c.Values() {
		if v.Value == "" {
			continue
		}
		var bad error
		switch v.Key {
		case config.KeyOutput:
			if !slices.Contains([]string{OutputText, OutputJSON, OutputStreamJSON}, v.Value) {
				bad = fmt.Errorf("must be text, json or stream-json")
			}
		case config.KeyDriver:
			if !slices.Contains(runner.Drivers(), driver.Name(v.Value)) {
				bad = fmt.Errorf("unknown driver (drivers: %s)", runner.DriverList())
			}
		case config.KeyApprove:
			_, bad = policy.ParseMode(v.Value)
		}
		if bad != nil {
			return c, exitcode.Usagef("config: %s: %s = %q: %v", v.From, v.Key, v.Value, bad)
		}
	}
	for _, a := range c.Agents {
		if _, ok := preset.Lookup(a.Name); ok {
			return c, exitcode.Usagef("config: %s: agent %q has the name of a preset; name it something else", a.From, a.Name)
		}
		if a.Driver != "" && !slices.Contains(runner.Drivers(), a.Driver) {
			return c, exitcode.Usagef("config: %s: agent %q: unknown driver %q (drivers: %s)", a.From, a.Name, a.Driver, runner.DriverList())
		}
	}
	return c, nil
}

// applyConfig gives the run flags not given on the command line (f.Changed)
// cfg's defaults.
func applyConfig(f RunFlags, cfg config.Config) RunFlags {
	changed := f.Changed
	if changed == nil {
		changed = func(string) bool { return true } // called from code: the flags are what they are
	}
	set := func(flag string, dst *string, k config.Key) {
		if v := cfg.Get(k); v != "" && !changed(flag) {
			*dst = v
		}
	}
	if !changed("agent-cmd") {
		set("agent", &f.Agent, config.KeyAgent)
	}
	set("driver", &f.Driver, config.KeyDriver)
	set("approve", &f.Approve, config.KeyApprove)
	set("output", &f.Output, config.KeyOutput)
	return f
}

// configView is `tai config show -o json`.
type configView struct {
	Files    []string       `json:"files"`
	Looked   []string       `json:"looked_for"`
	Settings []config.Value `json:"settings"`
	Agents   []config.Agent `json:"agents"`
}

// ConfigShow prints the configuration that applies in workspace ("" = the
// current directory), with where each value came from.
func ConfigShow(workspace string, asJSON bool, std IO) error {
	if workspace == "" {
		workspace, _ = std.Wd()
	}
	ws, err := filepath.Abs(workspace)
	if err != nil {
		return exitcode.Usagef("config show: %v", err)
	}
	cfg, err := loadConfig(ws)
	if err != nil {
		return err
	}
	var looked []string
	if p, err := config.UserPath(); err == nil {
		looked = append(looked, p)
	}
	looked = append(looked, config.ProjectPaths(ws)...)
	v := configView{Files: append([]string{}, cfg.Files...), Looked: looked, Settings: cfg.Values(), Agents: cfg.Agents}
	if asJSON {
		return printJSON(std.Out, v)
	}
	tw := tabwriter.NewWriter(std.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tFROM")
	for _, s := range v.Settings {
		val, from := s.Value, s.From
		if from == "" {
			val, from = "-", "(default)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Key, val, from)
	}
	for _, a := range v.Agents {
		d := a.Command
		if a.Driver != "" {
			d += " (" + string(a.Driver) + ")"
		}
		if len(a.Quirks) > 0 {
			d += " quirks=" + strings.Join(a.Quirks, ",")
		}
		fmt.Fprintf(tw, "agent %s\t%s\t%s\n", a.Name, d, a.From)
	}
	_ = tw.Flush()
	if len(v.Files) == 0 {
		fmt.Fprintf(std.Out, "\nno config file (looked for %s)\n", strings.Join(looked, ", "))
	}
	return nil
}
