package pty

import "testing"

// Older releases of the TUIs than the ones the profiles were tuned to
// (scripts/install-agents.sh; all but qwen-old only when named), through
// the real tai binary in the same scenarios as the current releases.
// qwen 0.15 marks its replies "✦ ", not 0.24's "◆︎ ": the profile finds
// no reply and the layout-independent fallback reads it, which the audit
// log says (reply_source fallback). gemini 0.52 and opencode 1.17 still
// read by their profiles.
func TestRealOlderQwen(t *testing.T) { testReal(t, older("qwen", "fallback")) }
func TestRealOlderGemini(t *testing.T) {
	// Installed only when named: gemini restarts itself after its trust
	// dialog and, on a loaded machine, can lose a prompt typed in between
	// (a known race, see driver/pty), which the current release's test
	// already exercises in CI.
	a := older("gemini", "profile")
	a.optional = true
	testReal(t, a)
}
func TestRealOlderOpencode(t *testing.T) {
	// 360 MB: installed only when named (its recordings in driver/pty
	// testdata check the fallback on it always).
	a := older("opencode", "profile")
	a.optional = true
	testReal(t, a)
}

// Claude Code 2.1.300 (scripts/install-claude.sh old), the codex CLI
// 0.160.0 and Copilot 1.0.80 (install-agents.sh codex-cli-old
// copilot-old): 190-420 MB each, so installed only when named. Their
// profiles read them (codex 0.160 loses a key sent as its trust dialog is
// drawn: the driver presses it again); each reply turn runs once more with
// the profile made to miss, and the fallback reads the same reply.
func TestRealOlderClaude(t *testing.T)  { testReal(t, olderOptional("claude", "profile")) }
func TestRealOlderCodex(t *testing.T)   { testReal(t, olderOptional("codex", "profile")) }
func TestRealOlderCopilot(t *testing.T) { testReal(t, olderOptional("copilot", "profile")) }

func olderOptional(name, source string) realAgent {
	a := older(name, source)
	a.optional, a.fallback = true, true
	return a
}

// older is the agent's set-up with the older release's binary, and the
// reply source its turns must show.
func older(name, source string) realAgent {
	a := realAgents[name]
	a.bin += "_OLD"
	a.source = source
	return a
}
