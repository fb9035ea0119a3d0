package app

import (
	"slices"
	"strings"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/runner"
)

// checkRunFlags refuses what no run can mean, before anything starts: each
// is a usage error (exit 2) that says what was wrong.
func checkRunFlags(f RunFlags) error {
	switch {
	case f.Timeout < 0:
		return exitcode.Usagef("--timeout must not be negative, not %s", f.Timeout)
	case f.CancelGrace < 0:
		return exitcode.Usagef("--cancel-grace must not be negative, not %s", f.CancelGrace)
	case f.MaxLineBytes < 0:
		return exitcode.Usagef("--max-line-bytes must not be negative, not %d", f.MaxLineBytes)
	case f.MaxMessageBytes < 0:
		return exitcode.Usagef("--max-message-bytes must not be negative, not %d", f.MaxMessageBytes)
	case f.AgentCmdSet && strings.TrimSpace(f.AgentCmd) == "":
		return exitcode.Usagef("--agent-cmd is empty: name the command to launch (or drop it for --agent)")
	}
	if f.Driver != "" && !slices.Contains(runner.Drivers(), driver.Name(f.Driver)) {
		return exitcode.Usagef("unknown driver %q (drivers: %s)", f.Driver, runner.DriverList())
	}
	for _, kv := range f.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return exitcode.Usagef("-e/--env wants KEY=VALUE, not %q", kv)
		}
	}
	return nil
}

// checkPrompt refuses a prompt that is there but says nothing.
func checkPrompt(text string, given bool) error {
	if given && strings.TrimSpace(text) == "" {
		return exitcode.Usagef("the prompt is empty: say what the agent should do")
	}
	return nil
}
