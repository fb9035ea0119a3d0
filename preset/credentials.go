package preset

import "github.com/tai-dev/tai/quota"

// credentials are where each known agent reads its account from, for the
// account a usage limit belongs to (quota.AccountOf hashes them; their
// values never leave it).
var credentials = map[string]quota.Credentials{
	// TAI_BUILTIN_ACCOUNT stands for an API key, so that tests can tell
	// two accounts of the built-in agent apart.
	"builtin":  {Env: []string{"TAI_BUILTIN_ACCOUNT"}},
	"claude":   {Env: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"}, Files: []string{".claude/.credentials.json"}},
	"codex":    {Env: []string{"OPENAI_API_KEY", "CODEX_API_KEY"}, Files: []string{".codex/auth.json"}},
	"gemini":   {Env: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"}, Files: []string{".gemini/oauth_creds.json"}},
	"qwen":     {Env: []string{"OPENAI_API_KEY", "DASHSCOPE_API_KEY"}, Files: []string{".qwen/oauth_creds.json"}},
	"opencode": {Files: []string{".local/share/opencode/auth.json"}},
	"copilot":  {Env: []string{"COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "COPILOT_PROVIDER_API_KEY"}},
	"cursor":   {Env: []string{"CURSOR_API_KEY"}},
}

// Credentials are the variables and files the agent reads its account
// from (none known: empty).
func (p Preset) Credentials() quota.Credentials {
	return credentials[p.Known()]
}
