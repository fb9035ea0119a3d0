package acpserver

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/tai-dev/tai/e2e/internal/auditlog"
)

// sdkClient is an editor written with the Go SDK: it approves writes of
// approved.txt, rejects the others, and records what it was sent.
type sdkClient struct {
	mu      sync.Mutex
	text    strings.Builder
	asked   []string
	kinds   map[string]int
	diffs   []string
	denied  chan struct{} // closed once the denial's effect is seen
	deniedO sync.Once
	writes  []string // fs/write_text_file calls, when fs is offered
	// allowAll approves every ask (else only approved.txt's).
	allowAll bool
}

func newSDKClient() *sdkClient {
	return &sdkClient{kinds: map[string]int{}, denied: make(chan struct{})}
}

func (c *sdkClient) RequestPermission(_ context.Context, p acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	title := ""
	if p.ToolCall.Title != nil {
		title = *p.ToolCall.Title
	}
	c.mu.Lock()
	c.asked = append(c.asked, title)
	c.mu.Unlock()
	want := acpsdk.PermissionOptionKindRejectOnce
	if strings.Contains(title, "approved.txt") || c.allowAll {
		want = acpsdk.PermissionOptionKindAllowOnce
	}
	for _, o := range p.Options {
		if o.Kind == want {
			return acpsdk.RequestPermissionResponse{Outcome: acpsdk.RequestPermissionOutcome{Selected: &acpsdk.RequestPermissionOutcomeSelected{OptionId: o.OptionId}}}, nil
		}
	}
	return acpsdk.RequestPermissionResponse{}, errors.New("no option of kind " + string(want))
}

func (c *sdkClient) SessionUpdate(_ context.Context, n acpsdk.SessionNotification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := n.Update
	switch {
	case u.AgentMessageChunk != nil:
		c.kinds["agent_message_chunk"]++
		if t := u.AgentMessageChunk.Content.Text; t != nil {
			c.text.WriteString(t.Text)
			if strings.Contains(c.text.String(), "waiting for the cancel") {
				c.deniedO.Do(func() { close(c.denied) })
			}
		}
	case u.ToolCall != nil:
		c.kinds["tool_call"]++
		for _, tc := range u.ToolCall.Content {
			if tc.Diff != nil {
				c.diffs = append(c.diffs, filepath.Base(tc.Diff.Path))
			}
		}
	case u.ToolCallUpdate != nil:
		c.kinds["tool_call_update"]++
		for _, tc := range u.ToolCallUpdate.Content {
			if tc.Diff != nil {
				c.diffs = append(c.diffs, filepath.Base(tc.Diff.Path))
			}
		}
	case u.Plan != nil:
		c.kinds["plan"]++
	case u.AvailableCommandsUpdate != nil:
		c.kinds["available_commands_update"]++
	}
	return nil
}

func (c *sdkClient) ReadTextFile(_ context.Context, p acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	b, err := os.ReadFile(p.Path)
	return acpsdk.ReadTextFileResponse{Content: string(b)}, err
}

func (c *sdkClient) WriteTextFile(_ context.Context, p acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	c.mu.Lock()
	c.writes = append(c.writes, filepath.Base(p.Path))
	c.mu.Unlock()
	return acpsdk.WriteTextFileResponse{}, os.WriteFile(p.Path, []byte(p.Content), 0o644)
}

func (c *sdkClient) CreateTerminal(context.Context, acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	return acpsdk.CreateTerminalResponse{}, errors.New("no terminals in this client")
}

func (c *sdkClient) KillTerminal(context.Context, acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	return acpsdk.KillTerminalResponse{}, errors.New("no terminals in this client")
}

func (c *sdkClient) TerminalOutput(context.Context, acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	return acpsdk.TerminalOutputResponse{}, errors.New("no terminals in this client")
}

func (c *sdkClient) ReleaseTerminal(context.Context, acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	return acpsdk.ReleaseTerminalResponse{}, errors.New("no terminals in this client")
}

func (c *sdkClient) WaitForTerminalExit(context.Context, acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	return acpsdk.WaitForTerminalExitResponse{}, errors.New("no terminals in this client")
}

// TestGoSDKClient: a Go SDK editor drives `tai acp` in front of the
// built-in agent (over ACP, as a proxy): text, a write it approves, one it
// denies, a cancel, and a turn after the cancel; the files on disk, the
// audit log's provenance and the processes are checked.
func TestGoSDKClient(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   bool // the client offers fs: writes go through it
	}{{"host-fs", false}, {"editor-fs", true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			script := scriptFor(t, turnScript)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, taiBin, "acp", "--agent-cmd", taiBin+" agent builtin --script "+script)
			cmd.Dir, cmd.Env, cmd.Stderr = dir, env(dir), os.Stderr
			in, _ := cmd.StdinPipe()
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			cl := newSDKClient()
			conn := acpsdk.NewClientSideConnection(cl, in, out)
			caps := acpsdk.ClientCapabilities{}
			if tc.fs {
				caps.Fs = acpsdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}
			}
			ir, err := conn.Initialize(ctx, acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber, ClientCapabilities: caps})
			if err != nil {
				t.Fatalf("initialize: %v", err)
			}
			if ir.AgentInfo == nil || ir.AgentInfo.Name != "tai" || !ir.AgentCapabilities.LoadSession {
				t.Errorf("initialize: agent info %+v, capabilities %+v (the built-in agent can load sessions)", ir.AgentInfo, ir.AgentCapabilities)
			}
			ns, err := conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: dir, McpServers: []acpsdk.McpServer{}})
			if err != nil {
				t.Fatalf("session/new: %v", err)
			}
			done := prompt(ctx, conn, ns.SessionId, "go")
			select {
			case <-cl.denied:
			case r := <-done:
				t.Fatalf("the turn ended before the cancel: %+v %v", r.res, r.err)
			}
			if err := conn.Cancel(ctx, acpsdk.CancelNotification{SessionId: ns.SessionId}); err != nil {
				t.Fatal(err)
			}
			r := <-done
			if r.err != nil || r.res.StopReason != acpsdk.StopReasonCancelled {
				t.Fatalf("the cancelled turn: %+v, %v; want stop reason cancelled", r.res, r.err)
			}
			// The session goes on after a cancel.
			r2, err := conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: ns.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("/echo still here")}})
			if err != nil || r2.StopReason != acpsdk.StopReasonEndTurn {
				t.Fatalf("the turn after the cancel: %+v, %v", r2, err)
			}
			in.Close()
			if err := cmd.Wait(); err != nil {
				t.Fatalf("tai acp did not exit cleanly when the editor went away: %v", err)
			}
			noneLeft(t, script)

			if got := mustRead(t, filepath.Join(dir, "approved.txt")); got != "approved by the client\n" {
				t.Errorf("approved.txt = %q", got)
			}
			mustNotExist(t, filepath.Join(dir, "denied.txt"))
			cl.mu.Lock()
			defer cl.mu.Unlock()
			text := cl.text.String()
			for _, want := range []string{"hello from the wrapped agent", "still here"} {
				if !strings.Contains(text, want) {
					t.Errorf("the client's text lacks %q:\n%s", want, text)
				}
			}
			if strings.Contains(text, "never reached") {
				t.Errorf("the cancel did not stop the turn:\n%s", text)
			}
			if len(cl.asked) != 2 {
				t.Errorf("the client was asked %d times (%q), want the two writes", len(cl.asked), cl.asked)
			}
			if cl.kinds["tool_call"] == 0 || cl.kinds["tool_call_update"] == 0 {
				t.Errorf("updates seen: %v", cl.kinds)
			}
			if len(cl.diffs) == 0 {
				t.Errorf("no tool call carried a diff")
			}
			if tc.fs && strings.Join(cl.writes, ",") != "approved.txt" {
				t.Errorf("the client offered fs, but its fs wrote %q; want approved.txt only", cl.writes)
			}
			if !tc.fs && len(cl.writes) > 0 {
				t.Errorf("the client did not offer fs, yet was asked to write %q", cl.writes)
			}

			// The audit log: each answer is the human's, given in the editor.
			logs, _ := filepath.Glob(filepath.Join(dir, ".state", "tai", "audit", "*.jsonl"))
			if len(logs) != 1 {
				t.Fatalf("audit logs: %v, want the one session's", logs)
			}
			var decisions []string
			for _, e := range auditlog.Read(t, logs[0]) {
				if e.Kind != "permission.decision" {
					continue
				}
				var d struct {
					Decision  string `json:"decision"`
					DecidedBy string `json:"decided_by"`
					Reason    string `json:"reason"`
				}
				if err := json.Unmarshal(e.Data, &d); err != nil {
					t.Fatal(err)
				}
				if d.DecidedBy == "default" {
					continue // the mode's reads
				}
				decisions = append(decisions, d.Decision+" by "+d.DecidedBy)
				if !strings.Contains(d.Reason, "in the editor") {
					t.Errorf("decision reason %q does not say the editor answered", d.Reason)
				}
			}
			if got := strings.Join(decisions, ", "); got != "allow by human, deny by human" {
				t.Errorf("audit decisions: %s", got)
			}
		})
	}
}
