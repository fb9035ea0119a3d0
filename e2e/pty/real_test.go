package pty

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tai-dev/tai/e2e/internal/auditlog"
	"github.com/tai-dev/tai/e2e/internal/realagent"
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
	// fallback: the reply turns run again with the profile made to miss
	// (TAI_TEST_PTY_PROFILE_MISS), read by the layout-independent fallback:
	// the same reply.
	fallback bool
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

// start prepares the agent's TUI against `tai model serve` with script
// (a path under modelserver/testdata/scripts): a throw-away HOME, a git
// repo, the model server. It skips when the agent is not installed and
// CI is unset.
func (a realAgent) start(t *testing.T, script string) realagent.Setup {
	t.Helper()
	s, ok := realagent.Start(t, taiBin, realagent.Agent{Name: a.name, Bin: a.bin, Node: a.node, Files: a.files, Env: a.env}, script)
	if !ok {
		if os.Getenv("CI") != "" && !a.optional {
			t.Fatalf(`%s is not installed: %s/TAI_NODE22_BIN unset; .ci/run must eval "$(scripts/%s | sed 's/^/export /')"`, a.name, a.bin, installer(a))
		}
		t.Skipf(`skipping: %s is not installed (%s unset); run eval "$(scripts/%s | sed 's/^/export /')"`, a.name, a.bin, installer(a))
	}
	return s
}

// The real TUIs through tai: a text turn, a write allowed and denied by
// policy through the agent's permission picker, and a cancelled turn.
// Further agents register themselves in realAgents from their own files
// (real_<agent>_test.go) with their own Test function.
func TestRealQwen(t *testing.T)     { testReal(t, realAgents["qwen"]) }
func TestRealGemini(t *testing.T)   { testReal(t, realAgents["gemini"]) }
func TestRealOpencode(t *testing.T) { testReal(t, realAgents["opencode"]) }

func testReal(t *testing.T, a realAgent) {
	type scenario struct {
		name, script, prompt string
		args                 []string
		code                 int
		status, message      string
		file                 bool
		miss                 bool // the profile made to miss: the fallback reads the reply
		// interrupt: tai gets SIGINT once the agent is mid-turn (the model
		// server took its request), however long the agent took to start.
		interrupt bool
	}
	text := scenario{name: "text", script: "text.json", prompt: "Say hello.", status: "ok", message: "Hello from the scripted model."}
	// --approve all / --approve deny (below): the write allowed and denied are the scenarios.
	write := scenario{name: "write-allowed", script: "write.json", prompt: "Create hello.txt", args: []string{"--approve", "all"}, status: "ok",
		message: "I'll create hello.txt.\nCreated hello.txt.", file: true}
	scenarios := []scenario{
		text, write,
		// --approve deny: the denied write.
		{name: "write-denied", script: "write.json", prompt: "Create hello.txt", args: []string{"--approve", "deny"}, code: 5, status: "denied",
			message: "I'll create hello.txt."},
		{name: "cancel", script: "../../../e2e/realagents/testdata/slow-model.json", prompt: "Take your time.", code: 130, status: "interrupted",
			interrupt: true},
	}
	if a.fallback {
		for _, sc := range []scenario{text, write} {
			sc.name, sc.miss = sc.name+"-fallback", true
			scenarios = append(scenarios, sc)
		}
	}
	for _, tc := range scenarios {
		t.Run(tc.name, func(t *testing.T) {
			st := a.start(t, tc.script)
			repo, env, cmd := st.Repo, st.Env, st.Exe+a.args
			source := a.source
			if tc.miss {
				env, source = append(env, "TAI_TEST_PTY_PROFILE_MISS=1"), "fallback"
			}
			auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
			args := append([]string{"run", "--agent", a.name, "--agent-cmd", cmd, "--driver", "pty", "-C", repo, "-o", "json", "--audit", auditPath}, a.flags...)
			args = append(args, tc.args...)
			// TAI_E2E_DEBUG=DIR keeps each run's PTY recording in DIR and
			// logs tai's output.
			if d := os.Getenv("TAI_E2E_DEBUG"); d != "" {
				env = append(env, "TAI_PTY_RECORD="+filepath.Join(d, a.name+"-"+tc.name+".rec"))
			}
			var o outcome
			if tc.interrupt {
				o = taiInterrupted(t, repo, env, st.URL, append(args, tc.prompt)...)
			} else {
				o = tai(t, repo, env, append(args, tc.prompt)...)
			}
			r := parse(t, o)
			if os.Getenv("TAI_E2E_DEBUG") != "" {
				t.Logf("stdout:\n%s\nstderr:\n%s", o.stdout, o.stderr)
			}
			if o.code != tc.code || r.Status != tc.status {
				t.Fatalf("exit %d status %q error %q; want %d %q\nresult:\n%s\nstderr:\n%s\nlast screen:\n%s", o.code, r.Status, r.Error, tc.code, tc.status, o.stdout, o.stderr, finalScreen(t, auditPath))
			}
			if tc.message != "" && r.Message != tc.message {
				t.Errorf("message %q, want %q\nlast screen:\n%s", r.Message, tc.message, finalScreen(t, auditPath))
			}
			if src := replySource(t, auditPath); tc.message != "" && (src == "" || source != "" && src != source) {
				t.Errorf("turn.end reply_source %q, want %q", src, source)
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
	bin, old := strings.CutSuffix(a.bin, "_OLD")
	switch {
	case bin == "TAI_CLAUDE_CLI" && old:
		return "install-claude.sh old"
	case bin == "TAI_CLAUDE_CLI":
		return "install-claude.sh"
	case old:
		return "install-agents.sh " + strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(bin, "TAI_AGENT_")), "_", "-") + "-old"
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

// taiInterrupted runs tai like tai() and sends it SIGINT once the model
// server at url has handed out its first scripted turn: the agent is then
// mid-turn, waiting on the model (the script delays its answer for
// minutes), so the interrupt cancels a running turn.
func taiInterrupted(t *testing.T, dir string, env []string, url string, args ...string) outcome {
	t.Helper()
	cmd := exec.Command(taiBin, args...)
	cmd.Dir, cmd.Env = dir, append(env, "NO_COLOR=1", "XDG_STATE_HOME="+filepath.Join(filepath.Dir(dir), "state"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// The bounds only guard against a hang; nothing is asserted on time.
	guard := time.After(5 * time.Minute)
	for taken := false; !taken; {
		select {
		case err := <-exited:
			t.Fatalf("tai ended before the agent was mid-turn: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
		case <-guard:
			_ = cmd.Process.Kill()
			<-exited
			t.Fatalf("the agent never took its turn from the model server\nstderr:\n%s", errb.String())
		case <-time.After(50 * time.Millisecond):
			taken = nextTurn(t, url) > 0
		}
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	var err error
	select {
	case err = <-exited:
	case <-guard:
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("tai did not end after SIGINT\nstderr:\n%s", errb.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return outcome{out.String(), errb.String(), code}
}

// nextTurn is the model server's next scripted turn (GET /_state).
func nextTurn(t *testing.T, url string) int {
	resp, err := http.Get(url + "/_state")
	if err != nil {
		t.Fatalf("GET /_state: %v", err)
	}
	defer resp.Body.Close()
	var st struct {
		NextTurn int `json:"next_turn"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("decoding /_state: %v", err)
	}
	return st.NextTurn
}
