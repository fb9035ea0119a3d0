package builtin

import (
	_ "embed"
	"fmt"
)

//go:embed default.yaml
var defaultScriptYAML []byte

// DefaultScriptSource returns the YAML source of DefaultScript, a starting
// point for custom scripts.
func DefaultScriptSource() []byte {
	return append([]byte(nil), defaultScriptYAML...)
}

// DefaultScript returns the script played when Options.Script is nil: a tour
// of every non-fault step kind that takes well under 2 s of delays.
func DefaultScript() *Script {
	sc, err := ParseScript(defaultScriptYAML)
	if err != nil {
		panic(fmt.Sprintf("builtin: default script is invalid: %v", err)) // caught by tests
	}
	return sc
}

// modeInfo describes one session mode.
type modeInfo struct {
	id, name, description string
}

// sessionModes are the modes every session offers, in display order.
var sessionModes = []modeInfo{
	{"plan", "Plan", "Plan only; proposes switching modes before acting"},
	{"default", "Default", "Ask before every edit"},
	{"accept-edits", "Accept edits", "Write files without asking"},
	// An agent that approves itself, as claude-agent-acp's auto and
	// codex-acp's agent do: a script starts in it (start_mode: auto) to
	// test that tai refuses it.
	{"auto", "Auto", "Approves its own requests: writes and runs without asking"},
}

const (
	modeDefault     = "default"
	modeAcceptEdits = "accept-edits"
	modePlan        = "plan"
	modeAuto        = "auto"
)

func modeIDs() []string {
	ids := make([]string, len(sessionModes))
	for i, m := range sessionModes {
		ids[i] = m.id
	}
	return ids
}

func modeByID(id string) (modeInfo, bool) {
	for _, m := range sessionModes {
		if m.id == id {
			return m, true
		}
	}
	return modeInfo{}, false
}

// Models offered by the "model" config option. They change nothing: there is
// no model; they exist so clients can exercise model selection.
var sessionModels = []modeInfo{
	{"builtin-small", "Built-in small", "Scripted, no model"},
	{"builtin-large", "Built-in large", "Scripted, no model (same script)"},
}

// defaultCommands is the initial available command list.
var defaultCommands = []Command{
	{Name: "echo", Description: "Echo text back", Hint: "text to echo"},
	{Name: "plan", Description: "Switch to plan mode"},
	{Name: "help", Description: "List the available commands"},
}
