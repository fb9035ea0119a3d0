package acpserver

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/tai-dev/tai/e2e/internal/auditlog"
	"github.com/tai-dev/tai/feed"
)

// waitingClient is an editor that never answers a permission request
// itself: it waits until tai withdraws it (or the test ends).
type waitingClient struct {
	*sdkClient
	asked    chan string
	released chan struct{}
}

func (c *waitingClient) RequestPermission(ctx context.Context, p acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	title := ""
	if p.ToolCall.Title != nil {
		title = *p.ToolCall.Title
	}
	c.asked <- title
	select {
	case <-ctx.Done():
	case <-c.released:
	}
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.RequestPermissionOutcome{Cancelled: &acpsdk.RequestPermissionOutcomeCancelled{}}}, nil
}

// Under tai acp, an inner agent's ask goes to the editor (a Go SDK client)
// and to the session's live feed at once: answered through the feed, it
// decides (the editor's request is withdrawn), the agent writes its file,
// and the audit log says a human answered via the dashboard.
func TestACPAskAnsweredThroughTheFeed(t *testing.T) {
	dir := t.TempDir()
	rt := filepath.Join(t.TempDir(), "rt")
	script := scriptFor(t, "steps:\n  - write: {path: fed.txt, content: \"allowed through the feed\\n\"}\n  - text: \"wrote it\"\n")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, taiBin, "acp", "--no-notify", "--agent-cmd", taiBin+" agent builtin --script "+script)
	cmd.Dir, cmd.Env, cmd.Stderr = dir, append(env(dir), "XDG_RUNTIME_DIR="+rt), os.Stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cl := &waitingClient{sdkClient: newSDKClient(), asked: make(chan string, 4), released: make(chan struct{})}
	defer close(cl.released)
	conn := acpsdk.NewClientSideConnection(cl, in, out)
	if _, err := conn.Initialize(ctx, acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	ns, err := conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: dir, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	done := prompt(ctx, conn, ns.SessionId, "go")
	var title string
	select {
	case title = <-cl.asked:
	case r := <-done:
		t.Fatalf("the turn ended without asking: %+v %v", r.res, r.err)
	}
	if !strings.Contains(title, "fed.txt") {
		t.Fatalf("the editor was asked %q", title)
	}
	// The same ask waits on the session's feed.
	var c *feed.Client
	var ask feed.Ask
	for deadline := time.Now().Add(time.Minute); c == nil; {
		eps, _ := feed.List(filepath.Join(rt, "tai"))
		for _, ep := range eps {
			fc := feed.Dial(ep.Path)
			if st, err := fc.State(ctx); err == nil && len(st.Asks) == 1 {
				c, ask = fc, st.Asks[0]
				break
			}
			fc.Close()
		}
		if c == nil && time.Now().After(deadline) {
			t.Fatalf("no feed in %s holds the ask (feeds: %v)", rt, eps)
		}
		if c == nil {
			time.Sleep(20 * time.Millisecond)
		}
	}
	defer c.Close()
	if !strings.Contains(ask.Request.ToolCall.Title, "fed.txt") {
		t.Fatalf("the feed's ask: %+v", ask)
	}
	if err := c.Answer(ctx, ask.ID, "once", "dashboard"); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.res.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("the turn: %+v, %v", r.res, r.err)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("tai acp did not exit cleanly: %v", err)
	}
	noneLeft(t, script)
	if got := mustRead(t, filepath.Join(dir, "fed.txt")); got != "allowed through the feed\n" {
		t.Fatalf("fed.txt = %q", got)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, ".state", "tai", "audit", "*.jsonl"))
	var decisions []string
	for _, p := range logs {
		for _, e := range auditlog.Read(t, p) {
			if e.Kind != "permission.decision" {
				continue
			}
			var d struct {
				Decision  string `json:"decision"`
				DecidedBy string `json:"decided_by"`
				Via       string `json:"via"`
			}
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			if d.DecidedBy != "default" {
				decisions = append(decisions, d.Decision+" by "+d.DecidedBy+" via "+d.Via)
			}
		}
	}
	if got := strings.Join(decisions, ", "); got != "allow by human via dashboard" {
		t.Fatalf("audit decisions: %q", got)
	}
}
