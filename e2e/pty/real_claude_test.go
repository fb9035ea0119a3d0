package pty

import "testing"

// claudeKey is the fake API key the model server accepts. Claude Code asks
// once whether to use a key from the environment; a user who said yes has
// its last 20 characters in ~/.claude.json, as the throw-away HOME does.
const claudeKey = "sk-ant-api03-tai-offline-fake-key-0123456789"

func init() {
	// The Claude Code TUI (@anthropic-ai/claude-code 2.1.332, installed by
	// scripts/install-claude.sh). ~/.claude.json holds what a user who set
	// Claude Code up has answered: onboarding done, a theme, the key
	// approved, and the diff side panel (which opens by itself on a wide
	// terminal once a file changed, over the transcript) off. The folder is
	// not trusted: Claude asks first ("Accessing workspace: … one you
	// trust?") and tai answers by policy. Its default permission mode,
	// auto, writes without asking: --permission-mode default makes it
	// ask through its picker.
	realAgents["claude"] = realAgent{
		name: "claude", bin: "TAI_CLAUDE_CLI",
		files: func(string) map[string]string {
			return map[string]string{".claude.json": `{
  "hasCompletedOnboarding": true, "theme": "dark", "autoUpdates": false, "diffSidebarOpen": false,
  "customApiKeyResponses": {"approved": ["` + claudeKey[len(claudeKey)-20:] + `"], "rejected": []}}`}
		},
		env: func(url string) []string {
			return []string{"ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=" + claudeKey, "CLAUDE_CODE_MAX_RETRIES=0",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}
		},
		args: " --permission-mode default",
		// The trust dialog is a tool call of kind other: allowed in every
		// scenario, so that the outcome is the write's.
		flags: []string{"--allow", "other"},
		// The reply turns again with the profile made to miss: the
		// fallback reads the same reply.
		fallback: true,
	}
}

func TestRealClaude(t *testing.T) { testReal(t, realAgents["claude"]) }
