package pty

import "testing"

// Codex CLI 0.171 (TAI_AGENT_CODEX_CLI) against the model server as a
// Responses provider (the e2e/realagents recipe). On request in the
// read-only sandbox: the scripted write is a command that asks to leave
// the sandbox, so codex shows its approval picker. --no-daemon: by
// default it starts a shared app server that outlives the TUI. The
// workspace is not trusted: the trust dialog comes first, answered by
// policy as a tool call of kind other, allowed in every scenario so that
// the outcome is the write's.
func init() {
	realAgents["codex"] = realAgent{
		name: "codex", bin: "TAI_AGENT_CODEX_CLI",
		files: func(url string) map[string]string {
			return map[string]string{".codex/config.toml": `# A known model slug.
model = "gpt-5.3-codex"
model_provider = "fake"

[model_providers.fake]
name = "tai modelserver"
base_url = "` + url + `/v1"
wire_api = "responses"
env_key = "FAKE_API_KEY"
`}
		},
		env:   func(string) []string { return []string{"FAKE_API_KEY=sk-fake"} },
		args:  " -a on-request -s read-only --no-daemon",
		flags: []string{"--allow", "other"},
		// The reply turns again with the profile made to miss: the
		// fallback reads the same reply.
		fallback: true,
	}
}

func TestRealCodex(t *testing.T) { testReal(t, realAgents["codex"]) }
