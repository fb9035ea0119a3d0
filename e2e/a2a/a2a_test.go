// Package a2a runs the real tai binary against an A2A agent: a2a-go v2's
// reference server, in this test process, serving its 1.0 JSON-RPC
// handler and the 0.3 one behind a union agent card; and, for the usage
// limit tests, an agent on @a2a-js/sdk's server (testdata, run with node).
//
//	go test ./e2e/a2a
package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/tai-dev/tai/e2e/internal/build"
)

var taiBin string

func TestMain(m *testing.M) {
	build.Main(m, "tai-e2e-a2a-", func(_ string, bins []string) { taiBin = bins[0] }, build.Tai)
}

// agent is the peer's behaviour, by the prompt's first word:
//
//	deploy  asks "Deploy to production? yes/no" (input-required), then: deployed: <answer>
//	slow    works until cancelled
//	else    echo: <prompt>
type agent struct{ release chan struct{} }

func (g agent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		text := ec.Message.Parts[0].Text()
		if ec.StoredTask != nil && ec.StoredTask.Status.State == a2a.TaskStateInputRequired {
			if yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("deployed: "+text)), nil) {
				yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
			}
			return
		}
		if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		switch word, _, _ := strings.Cut(text, " "); word {
		case "deploy":
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired,
				a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("Deploy to production? yes/no"))), nil)
		case "slow":
			if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
				return
			}
			select {
			case <-ctx.Done():
			case <-g.release:
				yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
			}
		default:
			if yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("echo: "+text)), nil) {
				yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
			}
		}
	}
}

func (agent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// server is the peer with a record of the JSON-RPC methods it was sent.
type server struct {
	url     string
	mu      sync.Mutex
	methods []string
}

func (s *server) called(method string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.methods {
		if m == method {
			return true
		}
	}
	return false
}

func startPeer(t *testing.T) *server {
	t.Helper()
	release := make(chan struct{})
	h := a2asrv.NewHandler(agent{release: release})
	mux := http.NewServeMux()
	mux.Handle("/v1", a2asrv.NewJSONRPCHandler(h))
	mux.Handle("/v03", a2av0.NewJSONRPCHandler(h))
	s := &server{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		_, _ = b.ReadFrom(r.Body)
		r.Body.Close()
		var req struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(b.Bytes(), &req) == nil && req.Method != "" {
			s.mu.Lock()
			s.methods = append(s.methods, req.Method)
			s.mu.Unlock()
		}
		r.Body = http.NoBody
		if b.Len() > 0 {
			r.Body = readCloser{bytes.NewReader(b.Bytes())}
		}
		mux.ServeHTTP(w, r)
	}))
	iface := func(path, version string) *a2a.AgentInterface {
		return &a2a.AgentInterface{URL: srv.URL + path, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.ProtocolVersion(version)}
	}
	mux.Handle("/.well-known/agent-card.json", a2asrv.NewAgentCardHandler(a2av0.NewAgentCardProducer(a2asrv.AgentCardProducerFn(
		func(context.Context) (*a2a.AgentCard, error) {
			return &a2a.AgentCard{Name: "deployer", Version: "2.3.1", Description: "an A2A test agent",
				SupportedInterfaces: []*a2a.AgentInterface{iface("/v1", "1.0"), iface("/v03", "0.3")},
				Capabilities:        a2a.AgentCapabilities{Streaming: true}, DefaultInputModes: []string{"text/plain"},
				DefaultOutputModes: []string{"text/plain"}, Skills: []a2a.AgentSkill{}}, nil
		}))))
	s.url = srv.URL
	t.Cleanup(func() {
		close(release)
		srv.Close()
	})
	return s
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

type result struct {
	Status      string `json:"status"`
	StopReason  string `json:"stop_reason"`
	SessionID   string `json:"session_id"`
	Driver      string `json:"driver"`
	Message     string `json:"message"`
	ExitCode    int    `json:"exit_code"`
	Error       string `json:"error"`
	Permissions []struct {
		Title     string `json:"title"`
		Verdict   string `json:"verdict"`
		DecidedBy string `json:"decided_by"`
	} `json:"permissions"`
}

// tai runs the binary to its end; the deadline only guards against a hang.
func tai(t *testing.T, args ...string) (result, int, string) {
	t.Helper()
	dir := t.TempDir()
	o := build.Run(t, taiBin, dir, append(os.Environ(), "XDG_STATE_HOME="+dir+"/state"),
		append([]string{"run", "-C", dir, "--no-audit", "-o", "json"}, args...)...)
	var r result
	if err := json.Unmarshal([]byte(o.Stdout), &r); err != nil {
		t.Fatalf("stdout is not one JSON result (%v):\n%s\nstderr:\n%s", err, o.Stdout, o.Stderr)
	}
	if r.ExitCode != o.Code {
		t.Fatalf("JSON exit_code %d, process %d", r.ExitCode, o.Code)
	}
	return r, o.Code, o.Stderr
}

func TestA2A(t *testing.T) {
	p := startPeer(t)
	t.Run("text", func(t *testing.T) {
		r, code, stderr := tai(t, "--agent-cmd", p.url, "hello there")
		if code != 0 || r.Driver != "a2a" || r.Message != "echo: hello there" || r.SessionID == "" {
			t.Fatalf("exit %d, %+v\n%s", code, r, stderr)
		}
		// The same context goes on in a second run.
		again, code, stderr := tai(t, "--agent-cmd", p.url, "--resume", r.SessionID, "and again")
		if code != 0 || again.SessionID != r.SessionID || again.Message != "echo: and again" {
			t.Fatalf("resumed: exit %d, %+v\n%s", code, again, stderr)
		}
	})
	t.Run("approval allowed by policy", func(t *testing.T) {
		// --approve all / deny (next): the A2A approval decided by policy is the subject.
		r, code, stderr := tai(t, "--agent-cmd", p.url, "--approve", "all", "deploy the site")
		// The agent's question is part of the transcript, then its answer.
		if code != 0 || !strings.HasSuffix(r.Message, "deployed: yes") || len(r.Permissions) != 1 || r.Permissions[0].Verdict != "allow" ||
			r.Permissions[0].Title != "Deploy to production? yes/no" {
			t.Fatalf("exit %d, %+v\n%s", code, r, stderr)
		}
	})
	t.Run("approval denied by policy", func(t *testing.T) {
		// --approve deny: as above.
		r, code, stderr := tai(t, "--agent-cmd", p.url, "--approve", "deny", "deploy the site")
		if code != 5 || r.Status != "denied" || !strings.HasSuffix(r.Message, "deployed: no") {
			t.Fatalf("exit %d, %+v\n%s", code, r, stderr)
		}
	})
	t.Run("timeout cancels the task", func(t *testing.T) {
		r, code, stderr := tai(t, "--agent-cmd", p.url, "--timeout", "2s", "slow work")
		if code != 3 || r.Status != "timeout" {
			t.Fatalf("exit %d, %+v\n%s", code, r, stderr)
		}
		if !p.called("CancelTask") && !p.called("tasks/cancel") {
			t.Fatal("the agent was never asked to cancel the task")
		}
	})
	t.Run("nothing listening", func(t *testing.T) {
		r, code, _ := tai(t, "--agent-cmd", "http://127.0.0.1:1", "hi")
		if code != 1 || !strings.Contains(r.Error, "127.0.0.1:1") {
			t.Fatalf("exit %d, %+v", code, r)
		}
	})
}
