package pty

import "testing"

// Older releases of the TUIs than the ones the profiles were tuned to
// (scripts/install-agents.sh qwen-old gemini-old opencode-old): their
// layouts differ from the recorded ones, so the reply comes from the
// layout-independent fallback where the profile finds none. The same
// scenarios as the current releases, through the real tai binary.
func TestRealOlderQwen(t *testing.T)     { testReal(t, older("qwen")) }
func TestRealOlderGemini(t *testing.T)   { testReal(t, older("gemini")) }
func TestRealOlderOpencode(t *testing.T) { testReal(t, older("opencode")) }

// older is the agent's set-up with the older release's binary.
func older(name string) realAgent {
	a := realAgents[name]
	a.bin += "_OLD"
	return a
}
