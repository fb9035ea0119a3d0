package app

import (
	"github.com/tai-dev/tai/agentspec"
	"github.com/tai-dev/tai/config"
	"github.com/tai-dev/tai/exitcode"
)

// resolvedRun is a command line of tai run, tai chat or tai acp resolved
// once, at the top of its command (resolveRun): the flags with the
// config's defaults, the config (its agents), and the agent they name.
// The run, chat and acp take it, each of acp's sessions too.
type resolvedRun struct {
	f     RunFlags
	cfg   config.Config
	agent agentspec.ResolvedAgent
}

// resolveRun reads the config once, gives the flags its defaults, checks
// what no run can mean and finds the agent: its errors are what a run
// refused before it started reports.
func resolveRun(o RunOptions) (resolvedRun, error) {
	load, find := o.LoadConfig, o.FindAgent
	if load == nil {
		load = loadConfig
	}
	if find == nil {
		find = agentspec.ResolveAgent
	}
	ws := o.Flags.Cwd
	if ws == "" {
		ws, _ = o.IO.Wd()
	}
	cfg, err := load(ws)
	if err != nil {
		return resolvedRun{}, err
	}
	f := applyConfig(o.Flags, cfg)
	if err := checkRunFlags(f); err != nil {
		return resolvedRun{}, err
	}
	switch f.Output {
	case "", OutputText, OutputJSON, OutputStreamJSON:
	default:
		return resolvedRun{}, exitcode.Usagef("--output must be text, json or stream-json, not %q", f.Output)
	}
	// The agent (its driver decides what --continue and --fork can do)
	// before the workspace, as tai run has always reported them.
	a, err := find(f.agent(cfg.Agents))
	if err != nil {
		return resolvedRun{}, err
	}
	return resolvedRun{f: f, cfg: cfg, agent: a}, nil
}
