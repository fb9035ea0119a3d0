package pty

import "testing"

// Older releases of the TUIs than the ones the profiles were tuned to
// (scripts/install-agents.sh; opencode-old only when named), through
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

// older is the agent's set-up with the older release's binary, and the
// reply source its turns must show.
func older(name, source string) realAgent {
	a := realAgents[name]
	a.bin += "_OLD"
	a.source = source
	return a
}
