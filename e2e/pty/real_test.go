package pty

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tai-dev/tai/e2e/internal/auditlog"
	"github.com/tai-dev/tai/e2e/internal/modelsrv"
)

// realAgent is one real TUI agent set up against `tai model serve`: its
// installed binary (environment variable bin), the files of a throw-away
// HOME (the settings of e2e/realagents), its environment given the model
// server's URL, and its command line.
type realAgent struct {
	name, bin string
	node      bool // needs TAI_NODE22_BIN first in PATH
	files     func(url string) map[string]string
	env       func(url string) []string
	args      string
	// tai flags every scenario adds.
	flags []string
	// source is the reply_source the audit log's turn.end must give a
	// turn with a reply ("" for any).
	source string
	// optional: not in install-agents.sh's default set, so it skips when
	// not installed even in CI.
	optional bool
}

var realAgents = map[string]realAgent{
	"qwen": {
		name: "qwen", bin: "TAI_AGENT_QWEN", node: true,
		files: func(string) map[string]string {
			return map[string]string{".qwen/settings.json": `{
  "security": {"auth": {"selectedType": "openai"}}, "model": {"name": "fake-model"},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
  "ui": {"enableFollowupSuggestions": false}, "memory": {"enableManagedAutoMemory": false},
  "privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false}}`}
		},
		env: func(url string) []string {
			return []string{"OPENAI_BASE_URL=" + url + "/v1", "OPENAI_API_KEY=sk-fake", "OPENAI_MODEL=fake-model"}
		},
		args: " --approval-mode default",
	},
	"gemini": {
		// The workspace is not trusted: gemini asks first ("Do you trust
		// the files in this folder?"), tai answers by policy, and gemini
		// restarts itself when trusted.
		name: "gemini", bin: "TAI_AGENT_GEMINI",
		files: func(string) map[string]string {
			return map[string]string{".gemini/settings.json": `{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
  "privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false}}`}
		},
		// The SDK appends /v1beta itself.
		env:  func(url string) []string { return []string{"GEMINI_API_KEY=fake-key", "GOOGLE_GEMINI_BASE_URL=" + url} },
		args: " -m gemini-2.5-flash",
		// The trust dialog is a tool call of kind other: allowed in every
		// scenario, so that the outcome is the write's.
		flags: []string{"--allow", "other"},
	},
	"opencode": {
		// Without the permission block opencode never asks.
		name: "opencode", bin: "TAI_AGENT_OPENCODE",
		files: func(url string) map[string]string {
			return map[string]string{".config/opencode/opencode.json": `{
  "autoupdate": false, "share": "disabled", "model": "fake/fake-model", "small_model": "fake/fake-model",
  "permission": {"edit": "ask", "bash": "ask"},
  "provider": {"fake": {"npm": "@ai-sdk/openai-compatible", "name": "tai modelserver",
    "options": {"baseURL": "` + url + `/v1", "apiKey": "sk-fake"},
    "models": {"fake-model": {"name": "fake-model", "tool_call": true}}}}}`}
		},
		env: func(string) []string {
			return []string{"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1",
				// It installs its plugin package with npm in the background
				// at every start; offline, it does without.
				"npm_config_offline=true"}
		},
	},
}

// setup prepares the agent's TUI against `tai model serve` with script
// (a path under modelserver/testdata/scripts): a throw-away HOME, a git
// repo, the model server. It skips when the agent is not installed and
// CI is unset.
func (a realAgent) setup(t *testing.T, script string) (repo string, env []string, cmd string) {
	t.Helper()
	exe, node := os.Getenv(a.bin), os.Getenv("TAI_NODE22_BIN")
	if exe == "" || (a.node && node == "") {
		if os.Getenv("CI") != "" && !a.optional {
			t.Fatalf(`%s is not installed: %s/TAI_NODE22_BIN unset; .ci/run must eval "$(scripts/%s | sed 's/^/export /')"`, a.name, a.bin, installer(a))
		}
		t.Skipf(`skipping: %s is not installed (%s unset); run eval "$(scripts/%s | sed 's/^/export /')"`, a.name, a.bin, installer(a))
	}
	dir := t.TempDir()
	home, repo := filepath.Join(dir, "home"), filepath.Join(dir, "repo")
	for _, d := range []string{filepath.Join(home, "tmp"), repo} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	git := exec.Command("git", "init", "-q", "-b", "main")
	git.Dir = repo
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	abs, err := filepath.Abs(filepath.Join("..", "..", "modelserver", "testdata", "scripts", script))
	if err != nil {
		t.Fatal(err)
	}
	url := modelsrv.Start(t, taiBin, abs, repo, "").URL
	for name, body := range a.files(url) {
		p := filepath.Join(home, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := os.Getenv("PATH")
	if a.node {
		path = node + string(os.PathListSeparator) + path
	}
	env = append([]string{
		"HOME=" + home, "TMPDIR=" + filepath.Join(home, "tmp"), "LANG=C.UTF-8", "SHELL=/bin/bash", "PATH=" + path,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
	}, a.env(url)...)
	return repo, env, exe + a.args
}

// The real TUIs through tai: a text turn, a write allowed and denied by
// policy through the agent's permission picker, and a cancelled turn.
// Further agents register themselves in realAgents from their own files
// (real_<agent>_test.go) with their own Test function.
func TestRealQwen(t *testing.T)     { testReal(t, realAgents["qwen"]) }
func TestRealGemini(t *testing.T)   { testReal(t, realAgents["gemini"]) }
func TestRealOpencode(t *testing.T) { testReal(t, realAgents["opencode"]) }

func testReal(t *testing.T, a realAgent) {
	for _, tc := range []struct {
		name, script, prompt string
		args                 []string
		code                 int
		status, message      string
		file                 bool
	}{
		{"text", "text.json", "Say hello.", nil, 0, "ok", "Hello from the scripted model.", false},
		{"write-allowed", "write.json", "Create hello.txt", []string{"--approve", "all"}, 0, "ok", "I'll create hello.txt.\nCreated hello.txt.", true},
		{"write-denied", "write.json", "Create hello.txt", []string{"--approve", "deny"}, 5, "denied", "I'll create hello.txt.", false},
		{"cancel", "../../../e2e/realagents/testdata/slow-model.json", "Take your time.", []string{"--timeout", "8s"}, 3, "timeout", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, env, cmd := a.setup(t, tc.script)
			auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
			args := append([]string{"run", "--agent", a.name, "--agent-cmd", cmd, "--driver", "pty", "-C", repo, "-o", "json", "--audit", auditPath}, a.flags...)
			args = append(args, tc.args...)
			// TAI_E2E_DEBUG=DIR keeps each run's PTY recording in DIR and
			// logs tai's output.
			if d := os.Getenv("TAI_E2E_DEBUG"); d != "" {
				env = append(env, "TAI_PTY_RECORD="+filepath.Join(d, a.name+"-"+tc.name+".rec"))
			}
			o := tai(t, repo, env, append(args, tc.prompt)...)
			r := parse(t, o)
			if os.Getenv("TAI_E2E_DEBUG") != "" {
				t.Logf("stdout:\n%s\nstderr:\n%s", o.stdout, o.stderr)
			}
			if o.code != tc.code || r.Status != tc.status {
				t.Fatalf("exit %d status %q error %q; want %d %q\nstderr:\n%s\nlast screen:\n%s", o.code, r.Status, r.Error, tc.code, tc.status, o.stderr, finalScreen(t, auditPath))
			}
			if tc.message != "" && r.Message != tc.message {
				t.Errorf("message %q, want %q\nlast screen:\n%s", r.Message, tc.message, finalScreen(t, auditPath))
			}
			if src := replySource(t, auditPath); tc.message != "" && (src == "" || a.source != "" && src != a.source) {
				t.Errorf("turn.end reply_source %q, want %q", src, a.source)
			}
			if _, err := os.Stat(filepath.Join(repo, "hello.txt")); (err == nil) != tc.file {
				t.Errorf("hello.txt exists = %v, want %v", err == nil, tc.file)
			}
			checkNoLeftovers(t, repo)
		})
	}
}

// installer is the script that installs the agent.
func installer(a realAgent) string {
	if a.bin == "TAI_CLAUDE_CLI" {
		return "install-claude.sh"
	}
	if old, ok := strings.CutSuffix(a.bin, "_OLD"); ok {
		return "install-agents.sh " + strings.ToLower(strings.TrimPrefix(old, "TAI_AGENT_")) + "-old"
	}
	return "install-agents.sh"
}

// finalScreen is the screen the audit log kept, for failure reports.
func finalScreen(t *testing.T, auditPath string) string {
	e, ok := auditlog.First(auditlog.Read(t, auditPath), "screen.final")
	if !ok {
		return "(none in the audit log)"
	}
	var sc struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(e.Data, &sc)
	return sc.Text
}

// replySource is the reply_source of the audit log's turn.end.
func replySource(t *testing.T, auditPath string) string {
	e, ok := auditlog.First(auditlog.Read(t, auditPath), "turn.end")
	if !ok {
		return ""
	}
	var te struct {
		Source string `json:"reply_source"`
	}
	_ = json.Unmarshal(e.Data, &te)
	return te.Source
}

// checkNoLeftovers fails if a process still runs in the repo after tai
// is gone (the TUI's group was killed).
func checkNoLeftovers(t *testing.T, repo string) {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil || !strings.HasPrefix(cwd, repo) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) > 0 && f[0] == "Z" {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		sc := bufio.NewScanner(strings.NewReader(strings.ReplaceAll(string(cmdline), "\x00", " ")))
		sc.Scan()
		t.Errorf("process %s left running in the workspace: %s", e.Name(), sc.Text())
	}
}
