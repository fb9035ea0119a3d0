package pty

import "testing"

func init() {
	// The GitHub Copilot CLI TUI (@github/copilot 1.0.102, installed by
	// scripts/install-agents.sh), offline with its BYOK provider settings
	// (the e2e/realagents recipe): no GitHub login. The folder is not
	// trusted: Copilot asks first ("Do you trust the files in this
	// folder?") and tai answers by policy. By default it asks before
	// writing ("Manual Approval").
	realAgents["copilot"] = realAgent{
		name: "copilot", bin: "TAI_AGENT_COPILOT",
		files: func(string) map[string]string { return nil },
		env: func(url string) []string {
			return []string{"COPILOT_PROVIDER_BASE_URL=" + url + "/v1", "COPILOT_PROVIDER_API_KEY=sk-fake", "COPILOT_MODEL=fake-model",
				// Offline, 1.0.80's update check prints an error notice.
				"COPILOT_AUTO_UPDATE=false"}
		},
		// The trust dialog is a tool call of kind other: allowed in every
		// scenario, so that the outcome is the write's.
		flags: []string{"--allow", "other"},
		// The reply turns again with the profile made to miss: the
		// fallback reads the same reply.
		fallback: true,
	}
}

func TestRealCopilot(t *testing.T) { testReal(t, realAgents["copilot"]) }
