package streamjson

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The output-only dialects: one CLI process per turn, prompt on the
// command line, JSON lines out, nothing in. tai cannot answer their
// permission prompts (there is no channel back), so each CLI decides for
// itself according to its own flags and config; these tests pin what the
// pinned versions really do.

// Pinned versions (scripts/install-agents.sh).
const (
	GeminiVersion   = "0.61.0"
	OpenCodeVersion = "1.18.33"
	CodexCLIVersion = "0.171.0"
)

// oneshotWriteScript offers each CLI's own write tool.
const oneshotWriteScript = `{"turns":[
  {"text":"I'll create hello.txt.","tool":{
    "write_file":{"file_path":"{{CWD}}/hello.txt","content":"hello\n"},
    "write":{"filePath":"{{CWD}}/hello.txt","content":"hello\n"},
    "apply_patch":"*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch\n",
    "exec_command":{"cmd":"printf 'hello\\n' > hello.txt"}}},
  {"text":"Created hello.txt."}],"untooled":{"text":"ok"},"default":{"text":"Done."}}`

// oneshotAgent is one output-only CLI: where it is installed, how it is
// pointed at the model server, and its dialect arguments.
type oneshotAgent struct {
	name     string // --agent and dialect
	env      string // install-agents.sh variable
	fallback string // path in the agents cache
	hint     string
	// cmd is the --agent-cmd for exe; yolo: with the CLI's own switch
	// that lets it write without asking.
	cmd       func(exe string, yolo bool) string
	configure func(t *testing.T, w *world, ask bool)
}

var oneshotAgents = []oneshotAgent{
	{
		name: "gemini", env: "TAI_AGENT_GEMINI", fallback: "gemini-" + GeminiVersion + "/node_modules/.bin/gemini",
		hint: `eval "$(scripts/install-agents.sh gemini | sed 's/^/export /')"`,
		cmd: func(exe string, yolo bool) string {
			c := exe + " --output-format stream-json -m gemini-2.5-flash"
			if yolo {
				c += " --yolo" // gemini's own switch, not tai's: the yolo cases are about it
			}
			return c
		},
		configure: func(t *testing.T, w *world, _ bool) {
			writeFile(t, filepath.Join(w.home, ".gemini", "settings.json"), `{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false}
}`)
			// Headless gemini refuses an untrusted folder (exit 55).
			w.env = append(w.env, "GEMINI_API_KEY=fake-key", "GOOGLE_GEMINI_BASE_URL="+w.url, "GEMINI_CLI_TRUST_WORKSPACE=true")
		},
	},
	{
		name: "opencode", env: "TAI_AGENT_OPENCODE", fallback: "opencode-" + OpenCodeVersion + "/node_modules/opencode-linux-x64/bin/opencode",
		hint: `eval "$(scripts/install-agents.sh opencode | sed 's/^/export /')"`,
		cmd: func(exe string, yolo bool) string {
			return exe + " run --format json"
		},
		configure: func(t *testing.T, w *world, ask bool) {
			perm := ""
			if ask {
				perm = `"permission": {"edit": "ask", "bash": "ask"},`
			}
			writeFile(t, filepath.Join(w.home, ".config", "opencode", "opencode.json"), fmt.Sprintf(`{
  %s
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
}`, perm, w.url))
			w.env = append(w.env, "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1",
				"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "npm_config_offline=true")
		},
	},
	{
		name: "codex", env: "TAI_AGENT_CODEX_CLI",
		fallback: "codex-cli-" + CodexCLIVersion + "/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
		hint:     `eval "$(scripts/install-agents.sh codex-cli | sed 's/^/export /')"`,
		cmd: func(exe string, yolo bool) string {
			c := exe + " exec --json --skip-git-repo-check"
			if yolo {
				c += " --dangerously-bypass-approvals-and-sandbox"
			}
			return c
		},
		configure: func(t *testing.T, w *world, _ bool) {
			codexHome := filepath.Join(w.home, ".codex")
			writeFile(t, filepath.Join(codexHome, "config.toml"), fmt.Sprintf(`# A known model slug: others get no apply_patch tool.
model = "gpt-5.3-codex"
model_provider = "fake"

[model_providers.fake]
name = "tai modelserver"
base_url = "%s/v1"
wire_api = "responses"
env_key = "FAKE_API_KEY"
`, w.url))
			w.env = append(w.env, "CODEX_HOME="+codexHome, "FAKE_API_KEY=sk-fake")
		},
	},
}

// writeCase is one write scenario: the CLI's own switches, and what it
// then really does.
type writeCase struct {
	name      string
	yolo, ask bool
	code      int
	status    string
	hello     bool
	// tool is the status of the CLI's write tool call as tai reports it
	// ("": the CLI reports no tool call at all).
	tool    string
	denials int
	// written: file.written frames (the CLI's own write tool completed).
	written int
}

// writeCases: tai has no channel to answer a one-shot CLI's permission
// prompts, so --approve all changes nothing; each CLI applies its own
// policy, and tai reports what it did.
var writeCases = map[string][]writeCase{
	// gemini -p in the default approval mode leaves out the tools that
	// would need approval: write_file is "not found" (a failed tool call,
	// not a denial); --yolo registers and runs it.
	"gemini": {
		{name: "write", code: 0, status: "ok", tool: "failed"},
		{name: "write-yolo", yolo: true, code: 0, status: "ok", hello: true, tool: "completed", written: 1},
	},
	// opencode run allows edits by default; with "edit": "ask" it rejects
	// the call on the spot and stops: tai reports the CLI's denial (exit 5).
	"opencode": {
		{name: "write", code: 0, status: "ok", hello: true, tool: "completed", written: 1},
		{name: "write-ask", ask: true, code: 5, status: "denied", tool: "failed", denials: 1},
	},
	// codex exec runs in its read-only sandbox by default: the write fails
	// inside it ("Read-only file system", told to the model only) and
	// --json reports no command item at all. With the sandbox bypassed the
	// command runs (codex 0.171 with an unknown model offers exec_command,
	// not apply_patch), so it is no file_change and no file.written: the
	// shell wrote the file.
	"codex": {
		{name: "write", code: 0, status: "ok"},
		{name: "write-yolo", yolo: true, code: 0, status: "ok", hello: true, tool: "completed"},
	},
}

func TestOneShot(t *testing.T) {
	for _, a := range oneshotAgents {
		t.Run(a.name, func(t *testing.T) {
			exe := need(t, a.env, a.fallback, a.hint)
			run := func(t *testing.T, script string, yolo, ask bool, args ...string) (*world, outcome) {
				w := newWorld(t, script)
				a.configure(t, w, ask)
				all := append([]string{"--agent", a.name, "--driver", "stream-json", "--agent-cmd", a.cmd(exe, yolo)}, args...)
				return w, w.run(all...)
			}
			t.Run("text", func(t *testing.T) {
				w, o := run(t, textScript, false, false, "--output", "json", "say hello")
				r := w.result(o)
				if o.code != 0 || r.Status != "ok" || r.StopReason != "end_turn" {
					t.Fatalf("exit %d status %q stop %q, want 0 ok end_turn (error %q)", o.code, r.Status, r.StopReason, r.Error)
				}
				if !strings.Contains(r.Message, "Hello from the scripted model.") {
					t.Errorf("message = %q", r.Message)
				}
				if r.Driver != "stream-json" || r.SessionID == "" {
					t.Errorf("driver %q session %q", r.Driver, r.SessionID)
				}
				if r.Usage == nil || r.Usage.OutputTokens == 0 {
					t.Errorf("no usage in the result: %+v", r.Usage)
				}
				w.checkNoLeftovers()
				w.saveWire(a.name, "text")
			})
			for _, c := range writeCases[a.name] {
				t.Run(c.name, func(t *testing.T) {
					// --approve all: tai allows the write, so what the CLI's own mode does is the subject.
					w, o := run(t, oneshotWriteScript, c.yolo, c.ask, "--approve", "all", "--output", "stream-json", "create hello.txt")
					if o.code != c.code {
						t.Fatalf("exit %d, want %d\nstdout: %s", o.code, c.code, tailStr(o.stdout, 3000))
					}
					var status, tool string
					var denials, asked, written int
					for _, f := range w.frames(o.stdout) {
						switch f["type"] {
						case "tool_call":
							if tc, ok := f["tool_call"].(map[string]any); ok {
								tool, _ = tc["status"].(string)
							}
						case "permission.asked":
							asked++
						case "file.written":
							if fw, ok := f["file"].(map[string]any); ok && fw["path"] == filepath.Join(w.repo, "hello.txt") {
								written++
							}
						case "permission.decided":
							if d, ok := f["decision"].(map[string]any); ok && d["verdict"] == "deny" {
								denials++
							}
						case "result":
							status, _ = f["status"].(string)
						}
					}
					if status != c.status || tool != c.tool || denials != c.denials || asked != 0 || written != c.written {
						t.Errorf("status %q, tool call %q, %d denials, %d asked, %d written; want %q, %q, %d, 0, %d",
							status, tool, denials, asked, written, c.status, c.tool, c.denials, c.written)
					}
					_, err := os.Stat(filepath.Join(w.repo, "hello.txt"))
					if got := err == nil; got != c.hello {
						t.Errorf("hello.txt exists = %v, want %v", got, c.hello)
					}
					w.checkNoLeftovers()
					w.saveWire(a.name, c.name)
				})
			}
		})
	}
}
