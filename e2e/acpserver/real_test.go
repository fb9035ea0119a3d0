package acpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/tai-dev/tai/e2e/internal/realagent"
)

// wrapped is a real agent tai acp wraps, set up offline against `tai model
// serve`.
type wrapped struct {
	name, bin string
	node      bool
	driver    string
	// home are the files of its throw-away HOME; env its environment, given
	// the model server's URL; args follow its binary.
	home func(url string) map[string]string
	env  func(url string) []string
	args string
	// diffs: its writes show as tool-call diffs (a CLI's own Write).
	diffs bool
}

// qwen's HOME and environment, over either driver.
func wrappedQwenHome(string) map[string]string {
	return map[string]string{".qwen/settings.json": `{
  "security": {"auth": {"selectedType": "openai"}}, "model": {"name": "fake-model"},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
  "ui": {"enableFollowupSuggestions": false}, "memory": {"enableManagedAutoMemory": false},
  "privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false}}`}
}

func wrappedQwenEnv(url string) []string {
	return []string{"OPENAI_BASE_URL=" + url + "/v1", "OPENAI_API_KEY=sk-fake", "OPENAI_MODEL=fake-model"}
}

var wrappedAgents = map[string]wrapped{
	"qwen-pty": {name: "qwen", bin: "TAI_AGENT_QWEN", node: true, driver: "pty",
		home: wrappedQwenHome, env: wrappedQwenEnv,
		args: " --approval-mode default"},
	// A real ACP agent: tai acp is a proxy in front of it.
	"qwen-acp": {name: "qwen", bin: "TAI_AGENT_QWEN", node: true, driver: "acp", diffs: true,
		home: wrappedQwenHome, env: wrappedQwenEnv,
		args: " --acp --approval-mode default"},
	"claude-stream-json": {name: "claude", bin: "TAI_CLAUDE_CLI", driver: "stream-json", diffs: true,
		home: func(string) map[string]string {
			return map[string]string{".claude/settings.json": `{"autoUpdates": false}`}
		},
		env: func(url string) []string {
			return []string{"ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=sk-ant-fake", "DISABLE_AUTOUPDATER=1",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "IS_SANDBOX=1"}
		},
		args: " -p --input-format stream-json --output-format stream-json --verbose"},
}

// setup makes the agent's HOME, a git repo and the model server playing
// script (under modelserver/testdata/scripts, or a path from there).
func (a wrapped) setup(t *testing.T, script string) (repo, url string, env []string, cmd string) {
	t.Helper()
	s, ok := realagent.Start(t, taiBin, realagent.Agent{Name: a.name, Bin: a.bin, Node: a.node, Files: a.home, Env: a.env}, script)
	if !ok {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed (%s unset)", a.name, a.bin)
		}
		t.Skipf("skipping: %s is not installed (%s unset); see scripts/install-agents.sh and scripts/install-claude.sh", a.name, a.bin)
	}
	env = append(s.Env, "XDG_STATE_HOME="+filepath.Join(s.Dir, "state"), "NO_COLOR=1")
	return s.Repo, s.URL, env, s.Exe + a.args
}

func TestWrappedQwenPTY(t *testing.T)          { testWrapped(t, wrappedAgents["qwen-pty"]) }
func TestWrappedQwenACP(t *testing.T)          { testWrapped(t, wrappedAgents["qwen-acp"]) }
func TestWrappedClaudeStreamJSON(t *testing.T) { testWrapped(t, wrappedAgents["claude-stream-json"]) }

// testWrapped: a Go SDK editor drives `tai acp --agent NAME --driver D` in
// front of the real agent: a text turn, a write it approves, the same write
// denied, and a cancel while the model is slow.
func testWrapped(t *testing.T, a wrapped) {
	for _, tc := range []struct {
		name, script, prompt string
		allow                bool
		stop                 acpsdk.StopReason
		text                 string
		file                 bool
	}{
		{"text", "text.json", "Say hello.", false, acpsdk.StopReasonEndTurn, "Hello from the scripted model.", false},
		{"write-approved", "write.json", "Create hello.txt", true, acpsdk.StopReasonEndTurn, "Created hello.txt.", true},
		{"write-denied", "write.json", "Create hello.txt", false, "", "I'll create hello.txt.", false},
		{"cancel", "../../../e2e/realagents/testdata/slow-model.json", "Take your time.", false, acpsdk.StopReasonCancelled, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, url, env, agentCmd := a.setup(t, tc.script)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, taiBin, "acp", "--agent", a.name, "--agent-cmd", agentCmd, "--driver", a.driver, "-C", repo)
			cmd.Dir, cmd.Env, cmd.Stderr = repo, env, os.Stderr
			in, _ := cmd.StdinPipe()
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			cl := newSDKClient()
			cl.allowAll = tc.allow
			conn := acpsdk.NewClientSideConnection(cl, in, out)
			if _, err := conn.Initialize(ctx, acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber}); err != nil {
				t.Fatalf("initialize: %v", err)
			}
			ns, err := conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: repo, McpServers: []acpsdk.McpServer{}})
			if err != nil {
				t.Fatalf("session/new: %v", err)
			}
			done := prompt(ctx, conn, ns.SessionId, tc.prompt)
			if tc.stop == acpsdk.StopReasonCancelled {
				waitModelAsked(t, url)
				if err := conn.Cancel(ctx, acpsdk.CancelNotification{SessionId: ns.SessionId}); err != nil {
					t.Fatal(err)
				}
			}
			r := <-done
			in.Close()
			werr := cmd.Wait()
			if r.err != nil {
				t.Fatalf("the prompt: %v", r.err)
			}
			if tc.stop != "" && r.res.StopReason != tc.stop {
				t.Errorf("stop reason %q, want %q", r.res.StopReason, tc.stop)
			}
			if werr != nil {
				t.Errorf("tai acp: %v", werr)
			}
			cl.mu.Lock()
			text, asked, diffs := cl.text.String(), cl.asked, cl.diffs
			cl.mu.Unlock()
			if a.diffs && tc.name == "write-approved" && !slices.Contains(diffs, "hello.txt") {
				t.Errorf("no tool call showed the diff of hello.txt (diffs: %q)", diffs)
			}
			if tc.text != "" && !strings.Contains(text, tc.text) {
				t.Errorf("the editor's text lacks %q:\n%s", tc.text, text)
			}
			if strings.HasPrefix(tc.name, "write") && len(asked) == 0 {
				t.Errorf("the editor was never asked")
			}
			if _, err := os.Stat(filepath.Join(repo, "hello.txt")); (err == nil) != tc.file {
				t.Errorf("hello.txt exists = %v, want %v", err == nil, tc.file)
			}
			noneLeftIn(t, repo)
		})
	}
}

// waitModelAsked waits until the model server has taken the turn's
// request: the agent is mid-turn.
func waitModelAsked(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url + "/_state")
		if err == nil {
			var st struct {
				NextTurn int `json:"next_turn"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if st.NextTurn > 0 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the model was never asked")
}

// noneLeftIn fails if a process still runs in the workspace.
func noneLeftIn(t *testing.T, repo string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var left []string
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
			if err != nil || !strings.HasPrefix(cwd, repo) {
				continue
			}
			stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if i := strings.LastIndexByte(string(stat), ')'); i > 0 && strings.HasPrefix(string(stat[i+1:]), " Z") {
				continue
			}
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			left = append(left, e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left in the workspace:\n%s", strings.Join(left, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
