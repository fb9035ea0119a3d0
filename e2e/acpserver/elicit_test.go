package acpserver

import (
	"context"
	"encoding/json"
	"errors"
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

// elicitScript has the built-in agent ask for a form and say the values.
const elicitScript = `steps:
  - elicit_form:
      message: "Which database should I migrate?"
      schema:
        properties:
          database: {type: string, enum: [dev, staging, prod]}
          port: {type: integer, minimum: 1, maximum: 65535}
        required: [database, port]
  - text: "Done."
`

// elicitingClient is an editor that shows forms: it answers with answer
// once released, or, when answer is nil, waits until tai withdraws the form.
type elicitingClient struct {
	*sdkClient
	answer    map[string]any
	release   chan struct{}
	asked     chan acpsdk.UnstableCreateElicitationRequest
	withdrawn chan struct{}
}

func (c *elicitingClient) UnstableCreateElicitation(ctx context.Context, p acpsdk.UnstableCreateElicitationRequest) (acpsdk.UnstableCreateElicitationResponse, error) {
	c.asked <- p
	if c.answer != nil {
		<-c.release
		return acpsdk.UnstableCreateElicitationResponse{Accept: &acpsdk.UnstableCreateElicitationAccept{Action: "accept", Content: c.answer}}, nil
	}
	<-ctx.Done() // tai's $/cancel_request
	close(c.withdrawn)
	return acpsdk.UnstableCreateElicitationResponse{Cancel: &acpsdk.UnstableCreateElicitationCancel{Action: "cancel"}}, ctx.Err()
}

func (c *elicitingClient) UnstableCompleteElicitation(context.Context, acpsdk.UnstableCompleteElicitationNotification) error {
	return nil
}

// Under tai acp an inner agent's form goes to an editor that advertised
// elicitation.form (a Go SDK client) and to the session's feed at once.
// Answered in the editor, the agent gets the values and the feed sees the
// form closed via editor; answered through the feed, the editor's request
// is withdrawn; an editor that shows no forms leaves the feed alone to
// answer. The audit log records a human via each channel.
func TestACPElicitation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		noForms bool           // the editor advertises no elicitation: the feed alone
		answer  map[string]any // the editor's; nil: the feed answers
		message string
		via     string
	}{
		{"editor", false, map[string]any{"database": "staging", "port": 5432}, `database="staging"`, "editor"},
		{"feed", false, nil, `database="prod"`, "dashboard"},
		{"feed alone", true, nil, `database="prod"`, "dashboard"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			rt, err := os.MkdirTemp("", "rt") // short: a socket path has 108 bytes
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(rt)
			script := scriptFor(t, elicitScript)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, taiBin, "acp", "--no-notify", "--agent-cmd", taiBin+" agent builtin --script "+script)
			cmd.Dir, cmd.Env, cmd.Stderr = dir, append(env(dir), "XDG_RUNTIME_DIR="+rt), os.Stderr
			in, _ := cmd.StdinPipe()
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			cl := &elicitingClient{sdkClient: newSDKClient(), answer: tc.answer,
				asked: make(chan acpsdk.UnstableCreateElicitationRequest, 1), withdrawn: make(chan struct{}), release: make(chan struct{})}
			conn := acpsdk.NewClientSideConnection(cl, in, out)
			caps := acpsdk.ClientCapabilities{Elicitation: &acpsdk.ElicitationCapabilities{Form: &acpsdk.ElicitationFormCapabilities{}}}
			if tc.noForms {
				caps = acpsdk.ClientCapabilities{}
			}
			if _, err := conn.Initialize(ctx, acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber, ClientCapabilities: caps}); err != nil {
				t.Fatalf("initialize: %v", err)
			}
			ns, err := conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: dir, McpServers: []acpsdk.McpServer{}})
			if err != nil {
				t.Fatalf("session/new: %v", err)
			}
			done := prompt(ctx, conn, ns.SessionId, "go")
			if !tc.noForms {
				var req acpsdk.UnstableCreateElicitationRequest
				select {
				case req = <-cl.asked:
				case r := <-done:
					t.Fatalf("the turn ended without a form in the editor: %+v %v", r.res, r.err)
				}
				if req.Form == nil || !strings.Contains(req.Form.Message, "database") || len(req.Form.RequestedSchema.Properties) != 2 {
					t.Fatalf("the editor's form: %+v", req)
				}
			}
			// The same form is on the session's feed.
			c, el := feedElicitation(ctx, t, rt)
			defer c.Close()
			if el.Request.Mode != "form" || len(el.Request.Fields) != 2 {
				t.Fatalf("the feed's elicitation: %+v", el)
			}
			if tc.answer != nil {
				close(cl.release)
			} else {
				if err := c.AnswerElicitation(ctx, el.ID, "accept", map[string]any{"database": "prod", "port": 5433}, "dashboard"); err != nil {
					t.Fatal(err)
				}
				if !tc.noForms {
					<-cl.withdrawn
				}
			}
			r := <-done
			if tc.noForms && len(cl.asked) != 0 {
				t.Fatal("an editor that advertised no elicitation was sent a form")
			}
			if r.err != nil || r.res.StopReason != acpsdk.StopReasonEndTurn {
				t.Fatalf("the turn: %+v, %v", r.res, r.err)
			}
			cl.mu.Lock()
			got := cl.text.String()
			cl.mu.Unlock()
			if !strings.Contains(got, tc.message) {
				t.Fatalf("the agent said %q, want %s", got, tc.message)
			}
			if st, err := c.State(ctx); err != nil || len(st.Elicitations) != 0 {
				t.Fatalf("the feed still holds %+v (%v)", st.Elicitations, err)
			}
			in.Close()
			if err := cmd.Wait(); err != nil {
				t.Fatalf("tai acp did not exit cleanly: %v", err)
			}
			noneLeft(t, script)
			var vias []string
			logs, _ := filepath.Glob(filepath.Join(dir, ".state", "tai", "audit", "*.jsonl"))
			for _, p := range logs {
				for _, e := range auditlog.Read(t, p) {
					if e.Kind != "elicitation.answer" {
						continue
					}
					var d struct {
						DecidedBy string `json:"decided_by"`
						Via       string `json:"via"`
					}
					if err := json.Unmarshal(e.Data, &d); err != nil {
						t.Fatal(err)
					}
					vias = append(vias, d.DecidedBy+" via "+d.Via)
				}
			}
			if got := strings.Join(vias, ", "); got != "human via "+tc.via {
				t.Fatalf("audit elicitation answers: %q", got)
			}
		})
	}
}

// feedElicitation waits for the one feed under rt that holds an
// elicitation.
func feedElicitation(ctx context.Context, t *testing.T, rt string) (*feed.Client, feed.Elicitation) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		eps, _ := feed.List(filepath.Join(rt, "tai"))
		for _, ep := range eps {
			fc := feed.Dial(ep.Path)
			if st, err := fc.State(ctx); err == nil && len(st.Elicitations) == 1 {
				return fc, st.Elicitations[0]
			}
			fc.Close()
		}
		if time.Now().After(deadline) {
			t.Fatal(errors.New("no feed holds the elicitation"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
