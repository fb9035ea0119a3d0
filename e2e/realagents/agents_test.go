package realagents

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tai-dev/tai/preset"
)

// agent is one real agent and how the suite launches it against the
// scripted model server: the recipes of shared/design/real-agents.md, as
// test wiring. tai's preset supplies the protocol arguments and the quirks
// (--agent NAME with --agent-cmd keeps them); the suite adds the binary's
// absolute path, the model and a throw-away HOME.
type agent struct {
	name string // tai preset
	bin  string // env var naming the executable (scripts/install-agents.sh)
	// api is the provider API the agent must use (the model log's "api").
	api string
	// args follow the preset's arguments.
	args []string
	// modeID is a mode the agent does not start in, for the mode scenario.
	modeID string
	// startMode is the self-approving mode the agent starts in by
	// default (tai moves it to the preset's asking mode); "" = none.
	startMode string
	// asksCommands: the agent asks before the approve scenario's shell
	// command, so tai's policy decides it (an audited permission).
	asksCommands bool
	// stopsAtDenial says why the agent ends its turn at its first denied
	// request; its deny scenario writes only (write.json), so that the
	// one denial is the edit.
	stopsAtDenial string
	// configure writes the agent's settings into the HOME and returns its
	// environment. scenario lets a scenario ask for a different setup.
	configure func(t *testing.T, h paths, modelURL, scenario string) []string
	// limits are scenarios the agent cannot run, with the documented
	// reason; they are skipped, also in CI.
	limits map[string]string
}

// paths are one run's directories.
type paths struct {
	dir, home, repo string
}

var agents = []agent{
	{
		name: "qwen", bin: "TAI_AGENT_QWEN", api: "openai-chat",
		// qwen-code 0.24 starts in auto (an LLM classifier approves); tai
		// moves it to default, in which it asks.
		modeID: "plan", startMode: "auto",
		configure: func(t *testing.T, h paths, url, scenario string) []string {
			// At a limit qwen-code 0.24.4 retries a 429 up to 10 times more,
			// 60 s to 5 min apart (its stream rate-limit retry, silent on
			// ACP); model.generationConfig.maxRetries bounds it, 0 gives up
			// after its request-level retries (7, each Retry-After apart).
			gen := ""
			if scenario == "limit" {
				gen = `, "generationConfig": {"maxRetries": 0}`
			}
			writeFile(t, filepath.Join(h.home, ".qwen", "settings.json"), `{
  "security": {"auth": {"selectedType": "openai"}},
  "model": {"name": "fake-model"`+gen+`},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
  "ui": {"enableFollowupSuggestions": false},
  "memory": {"enableManagedAutoMemory": false},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false}
}`)
			// qwen-code 0.24 needs Node 22; its launcher finds node on PATH.
			node22 := os.Getenv("TAI_NODE22_BIN")
			if node22 == "" {
				t.Fatalf("TAI_NODE22_BIN is not set: qwen-code 0.24 needs Node 22 (scripts/install-agents.sh installs it)")
			}
			return []string{
				"PATH=" + node22 + string(os.PathListSeparator) + os.Getenv("PATH"),
				"OPENAI_BASE_URL=" + url + "/v1", "OPENAI_API_KEY=sk-fake", "OPENAI_MODEL=fake-model",
			}
		},
	},
	{
		name: "gemini", bin: "TAI_AGENT_GEMINI", api: "gemini",
		// A fixed model: "auto" routes through an extra JSON request.
		args:   []string{"-m", "gemini-2.5-flash"},
		modeID: "plan",
		configure: func(t *testing.T, h paths, url, scenario string) []string {
			// At a limit gemini-cli 0.61 tries a request 10 times, 5 s to
			// 30 s apart whatever Retry-After says: general.maxAttempts
			// bounds it.
			attempts := ""
			if scenario == "limit" {
				attempts = `, "maxAttempts": 2`
			}
			// The shell tool on pipes, not node-pty: gemini's PTY path can
			// finalize a command's output when the PTY reports its exit,
			// before the last output was read, and send the model an
			// empty or partial result (CI saw it once in stop 26). That
			// is the agent's race, not tai's; pipes end in EOF.
			writeFile(t, filepath.Join(h.home, ".gemini", "settings.json"), `{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "tools": {"shell": {"enableInteractiveShell": false}},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true`+attempts+`},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false}
}`)
			// The SDK appends /v1beta itself.
			return []string{"GEMINI_API_KEY=fake-key", "GOOGLE_GEMINI_BASE_URL=" + url}
		},
	},
	{
		name: "codex", bin: "TAI_AGENT_CODEX", api: "openai-responses",
		// codex-acp 2.x starts in agent ("Auto review": a model approves);
		// tai moves it to read-only, in which every edit asks. Its own
		// approval policy and sandbox are left as they come: the modes set
		// them per turn.
		modeID: "read-only", startMode: "agent", asksCommands: true,
		stopsAtDenial: "codex-acp 2.x offers only cancel (end the turn) as the reject option of an escalated command",
		configure: func(t *testing.T, h paths, url, _ string) []string {
			codexHome := filepath.Join(h.home, ".codex")
			// Nothing of codex's approval policy or sandbox: its modes set
			// them per turn (0.166 refuses approval_policy = "untrusted").
			writeFile(t, filepath.Join(codexHome, "config.toml"), fmt.Sprintf(`# A slug of codex 0.166's catalog: others get no apply_patch tool.
model = "gpt-5.5"
model_provider = "fake"

[model_providers.fake]
name = "tai modelserver"
base_url = "%s/v1"
wire_api = "responses"
env_key = "FAKE_API_KEY"
`, url))
			return []string{"CODEX_HOME=" + codexHome, "FAKE_API_KEY=sk-fake"}
		},
	},
	{
		name: "opencode", bin: "TAI_AGENT_OPENCODE", api: "openai-chat",
		// opencode has no ACP modes; its mode is a config option (build, plan).
		modeID: "plan",
		configure: func(t *testing.T, h paths, url, _ string) []string {
			// No permission block: opencode's default asks for nothing;
			// tai's preset launches it with OPENCODE_PERMISSION set to ask
			// (AskEnv), which is what makes it ask here.
			writeFile(t, filepath.Join(h.home, ".config", "opencode", "opencode.json"), fmt.Sprintf(`{
  "autoupdate": false,
  "share": "disabled",
  "model": "fake/fake-model",
  "small_model": "fake/fake-model",
  "provider": {"fake": {
    "npm": "@ai-sdk/openai-compatible",
    "name": "tai modelserver",
    "options": {"baseURL": "%s/v1", "apiKey": "sk-fake"},
    "models": {"fake-model": {"name": "fake-model", "tool_call": true}}
  }}
}`, url))
			return []string{
				"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1",
				// It installs its plugin package with npm in the background
				// at every start; offline, it does without.
				"npm_config_offline=true",
			}
		},
	},
	{
		name: "claude", bin: "TAI_AGENT_CLAUDE", api: "anthropic",
		modeID: "plan", startMode: "auto",
		configure: func(t *testing.T, h paths, url, _ string) []string {
			return []string{
				"ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=sk-ant-fake",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
				// Claude Code refuses to run as root outside a sandbox.
				"IS_SANDBOX=1",
			}
		},
	},
	{
		name: "copilot", bin: "TAI_AGENT_COPILOT", api: "openai-chat",
		// Copilot's mode ids are URLs.
		modeID: "https://agentclientprotocol.com/protocol/session-modes#plan",
		configure: func(t *testing.T, h paths, url, _ string) []string {
			// BYOK: no GitHub login.
			return []string{"COPILOT_PROVIDER_BASE_URL=" + url + "/v1", "COPILOT_PROVIDER_API_KEY=sk-fake", "COPILOT_MODEL=fake-model"}
		},
	},
}

// knownMissing are agents that may be absent in CI, with the documented
// reason. None today: every agent installs from npm.
var knownMissing = map[string]string{}

var versionDir = regexp.MustCompile(`/([a-z0-9]+)-([0-9][0-9A-Za-z.+-]*)/`)

// installed returns the agent's executable and its pinned version (from
// its install directory, <name>-<version>), or skips (fails in CI) when the
// agent is not installed.
func (a agent) installed(t *testing.T) (exe, version string) {
	t.Helper()
	exe = os.Getenv(a.bin)
	why := ""
	switch {
	case exe == "":
		why = fmt.Sprintf("%s is not set", a.bin)
	default:
		if st, err := os.Stat(exe); err != nil {
			why = fmt.Sprintf("%s=%s: %v", a.bin, exe, err)
		} else if st.Mode()&0o111 == 0 {
			why = fmt.Sprintf("%s=%s is not executable", a.bin, exe)
		}
	}
	if why != "" {
		hint := `; run eval "$(scripts/install-agents.sh | sed 's/^/export /')"`
		if reason, ok := knownMissing[a.name]; ok {
			t.Skipf("skipping %s: %s (%s)", a.name, why, reason)
		}
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed: %s%s", a.name, why, hint)
		}
		t.Skipf("skipping %s: not installed: %s%s", a.name, why, hint)
	}
	version = "unknown"
	if m := versionDir.FindAllStringSubmatch(exe, -1); len(m) > 0 {
		for _, g := range m {
			if g[1] == a.name {
				version = g[2]
			}
		}
	}
	return exe, version
}

// command is the --agent-cmd: the absolute binary, the preset's arguments,
// then the agent's own.
func (a agent) command(t *testing.T, exe string) string {
	t.Helper()
	p, ok := preset.Lookup(a.name)
	if !ok {
		t.Fatalf("tai has no preset %q", a.name)
	}
	argv := append(append([]string{exe}, p.Args...), a.args...)
	for _, s := range argv {
		if strings.ContainsAny(s, " '\"\\") {
			t.Fatalf("argument %q would need quoting in --agent-cmd", s)
		}
	}
	return strings.Join(argv, " ")
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
