package a2a

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/e2e/internal/auditlog"
	"github.com/tai-dev/tai/e2e/internal/build"
	"github.com/tai-dev/tai/e2e/internal/userenv"
)

// limitAgent is an A2A agent at its account's limit, on a2a-go v2's
// reference server. The first message of each context is refused:
//
//	limit RESET ...  the task fails "You've hit your usage limit" with
//	                 resetsAt RESET in its status message's metadata
//	throttle ...     the server answers the message/send with HTTP 429,
//	                 Retry-After: 0, before any task (see limitServer)
//
// Every later message in the context (tai's continue prompt, a --resume)
// is answered: "resumed: " and the texts of its parts joined by " + ".
type limitAgent struct {
	mu   sync.Mutex
	seen map[string]bool // contexts whose first message was refused
	// texts are the messages the agent took, by context.
	texts map[string][]string
}

func (g *limitAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		var parts []string
		for _, p := range ec.Message.Parts {
			parts = append(parts, p.Text())
		}
		text := strings.Join(parts, " + ")
		g.mu.Lock()
		first := !g.seen[ec.ContextID]
		g.seen[ec.ContextID] = true
		g.texts[ec.ContextID] = append(g.texts[ec.ContextID], text)
		g.mu.Unlock()
		if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if f := strings.Fields(text); first && len(f) > 1 && f[0] == "limit" {
			m := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("You've hit your usage limit."))
			m.Metadata = map[string]any{"resetsAt": f[1]}
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, m), nil)
			return
		}
		if yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("resumed: "+text)), nil) {
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
		}
	}
}

func (*limitAgent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

func (g *limitAgent) took(contextID string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.texts[contextID]...)
}

// limitServer serves the agent at /v1 (A2A 1.0, blocking: its card does
// not say it streams) and refuses a single-part "throttle" message once
// with HTTP 429 before it reaches the agent, as a rate-limiting front
// does. It returns the agent and its base URL.
func limitServer(t *testing.T) (*limitAgent, string) {
	t.Helper()
	g := &limitAgent{seen: map[string]bool{}, texts: map[string][]string{}}
	rpc := a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(g))
	var mu sync.Mutex
	throttled := map[string]bool{}
	mux := http.NewServeMux()
	var srv *httptest.Server
	mux.Handle("/.well-known/agent-card.json", a2asrv.NewAgentCardHandler(a2asrv.AgentCardProducerFn(
		func(context.Context) (*a2a.AgentCard, error) {
			return &a2a.AgentCard{Name: "limited", Version: "1.0.0", Description: "an A2A agent at its limit",
				SupportedInterfaces: []*a2a.AgentInterface{{URL: srv.URL + "/v1", ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: "1.0"}},
				DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"}, Skills: []a2a.AgentSkill{}}, nil
		})))
	mux.Handle("/v1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		_, _ = b.ReadFrom(r.Body)
		var req struct {
			Params struct {
				Message struct {
					Parts []struct {
						Text string `json:"text"`
					} `json:"parts"`
				} `json:"message"`
			} `json:"params"`
		}
		_ = json.Unmarshal(b.Bytes(), &req)
		if ps := req.Params.Message.Parts; len(ps) == 1 && strings.HasPrefix(ps[0].Text, "throttle") {
			mu.Lock()
			refuse := !throttled[ps[0].Text]
			throttled[ps[0].Text] = true
			mu.Unlock()
			if refuse {
				w.Header().Set("Retry-After", "0")
				http.Error(w, "Too Many Requests", http.StatusTooManyRequests)
				return
			}
		}
		r.Body = readCloser{bytes.NewReader(b.Bytes())}
		rpc.ServeHTTP(w, r)
	}))
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return g, srv.URL
}

// parkedRun is the part of the JSON result a parked run adds.
type parkedRun struct {
	Status    string `json:"status"`
	ExitCode  int    `json:"exit_code"`
	SessionID string `json:"session_id"`
	Message   string `json:"message"`
	Parked    *struct {
		Kind     string    `json:"kind"`
		ResetsAt time.Time `json:"resets_at"`
		Source   string    `json:"source"`
		Session  string    `json:"session"`
		Reason   string    `json:"reason"`
		Account  struct {
			Agent string `json:"agent"`
			ID    string `json:"id"`
		} `json:"account"`
	} `json:"parked"`
}

// runAs runs tai as a user would: a user-like HOME, the default sandbox,
// no --dir, an audit log it names; it returns the result and the log.
func runAs(t *testing.T, u *userenv.User, args ...string) (parkedRun, []audit.Entry) {
	t.Helper()
	ws := filepath.Join(u.Home, "work")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	o := build.Run(t, taiBin, ws, u.Env, append([]string{"run", "--no-notify", "-o", "json", "--audit", log}, args...)...)
	var r parkedRun
	if err := json.Unmarshal([]byte(o.Stdout), &r); err != nil {
		t.Fatalf("exit %d, stdout is not one JSON result (%v):\n%s\n%s", o.Code, err, o.Stdout, o.Stderr)
	}
	if r.ExitCode != o.Code {
		t.Fatalf("JSON exit_code %d, process %d\n%s", r.ExitCode, o.Code, o.Stderr)
	}
	return r, auditlog.Read(t, log)
}

func count(entries []audit.Entry, kind string) int {
	n := 0
	for _, e := range entries {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// limitPeer is an A2A agent at its limit (limitAgent's behaviour): its
// URL, and what a context of it took.
type limitPeer struct {
	url  string
	took func(t *testing.T, contextID string) []string
}

// An A2A agent at its limit parks the run (exit 75, status parked, the
// reset its task's metadata gave, the account, the contextId as the
// session); tai run --resume CONTEXT continues that context after the
// reset, and --wait-quota waits and sends the continue prompt in the same
// context. A 429 on the first send (no context yet) parks too; with
// --wait-quota the refused prompt goes out again with the continue prompt.
// Against two real A2A servers: a2a-go's (blocking sends) and
// @a2a-js/sdk's (streaming). Every run: default sandbox, no --dir, a
// user-like HOME.
func TestA2ALimitParksAndResumes(t *testing.T) {
	peers := []struct {
		name  string
		start func(t *testing.T) limitPeer
	}{
		{"a2a-go", func(t *testing.T) limitPeer {
			g, url := limitServer(t)
			return limitPeer{url: url, took: func(_ *testing.T, c string) []string { return g.took(c) }}
		}},
		{"a2a-js", jsLimitServer},
	}
	for _, pr := range peers {
		t.Run(pr.name, func(t *testing.T) {
			limitCases(t, pr.start(t))
		})
	}
}

// limitCases are the runs TestA2ALimitParksAndResumes makes against one
// server.
func limitCases(t *testing.T, lp limitPeer) {
	url := lp.url
	later := time.Now().Add(3 * time.Hour).UTC().Truncate(time.Second)
	past := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)

	t.Run("parks, then --resume continues the context", func(t *testing.T) {
		u := userenv.New(t)
		r, log := runAs(t, u, "--agent-cmd", url, "limit "+later.Format(time.RFC3339)+" build the site")
		p := r.Parked
		if r.ExitCode != 75 || r.Status != "parked" || p == nil {
			t.Fatalf("exit %d, %+v", r.ExitCode, r)
		}
		if p.Kind != "usage_limit" || p.Source != "fields" || !p.ResetsAt.Equal(later) || p.Session == "" || p.Session != r.SessionID ||
			p.Account.Agent == "" || !strings.Contains(url, p.Account.Agent) || !strings.Contains(p.Reason, "tai run --resume "+p.Session) {
			t.Errorf("parked %+v (session %s)", *p, r.SessionID)
		}
		if count(log, audit.KindRunParked) != 1 {
			t.Error("no run.parked in the audit log")
		}
		again, _ := runAs(t, u, "--agent-cmd", url, "--resume", p.Session, "go on")
		if again.ExitCode != 0 || again.SessionID != p.Session || again.Message != "resumed: go on" {
			t.Fatalf("resumed: %+v", again)
		}
		if took := lp.took(t, p.Session); len(took) != 2 || took[1] != "go on" {
			t.Errorf("the context took %q", took)
		}
	})

	t.Run("--wait-quota resumes in the same context", func(t *testing.T) {
		u := userenv.New(t)
		r, log := runAs(t, u, "--agent-cmd", url, "--wait-quota=1h", "limit "+past.Format(time.RFC3339)+" build the site")
		if r.ExitCode != 0 || r.Status != "ok" || r.Parked != nil || !strings.Contains(r.Message, "resumed: The usage limit that stopped you has reset") {
			t.Fatalf("exit %d, %+v", r.ExitCode, r)
		}
		if count(log, audit.KindQuotaResume) != 1 {
			t.Errorf("%d quota.resume entries", count(log, audit.KindQuotaResume))
		}
		if took := lp.took(t, r.SessionID); len(took) != 2 || !strings.HasPrefix(took[1], "The usage limit that stopped you has reset") {
			t.Errorf("the context took %q", took)
		}
	})

	t.Run("a 429 before any context parks", func(t *testing.T) {
		u := userenv.New(t)
		r, _ := runAs(t, u, "--agent-cmd", url, "throttle the first")
		p := r.Parked
		if r.ExitCode != 75 || r.Status != "parked" || p == nil {
			t.Fatalf("exit %d, %+v", r.ExitCode, r)
		}
		if p.Kind != "rate_limit" || p.Source != "http_429" || p.Session != "" || !strings.Contains(p.Reason, "run the prompt again") {
			t.Errorf("parked %+v", *p)
		}
	})

	t.Run("a 429 then --wait-quota sends the refused prompt again", func(t *testing.T) {
		u := userenv.New(t)
		r, log := runAs(t, u, "--agent-cmd", url, "--wait-quota=1h", "throttle the second")
		if r.ExitCode != 0 || r.Status != "ok" || !strings.HasPrefix(r.Message, "resumed: throttle the second + The usage limit that stopped you") {
			t.Fatalf("exit %d, %+v", r.ExitCode, r)
		}
		if count(log, audit.KindQuotaResume) != 1 {
			t.Errorf("%d quota.resume entries", count(log, audit.KindQuotaResume))
		}
	})
}

// jsLimitServer runs testdata/limit-agent.cjs, the same agent on
// @a2a-js/sdk's server (installed by scripts/install-peers.sh into
// $TAI_A2A_JS), until the test ends.
func jsLimitServer(t *testing.T) limitPeer {
	t.Helper()
	dir := os.Getenv("TAI_A2A_JS")
	if dir == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("TAI_A2A_JS is not set: .ci/run must install the peers (scripts/install-peers.sh)")
		}
		t.Skip("skipping: TAI_A2A_JS not set; run scripts/install-peers.sh and export its output")
	}
	script, err := filepath.Abs(filepath.Join("testdata", "limit-agent.cjs"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", script)
	cmd.Env = append(os.Environ(), "TAI_A2A_JS="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe() // its end ends the agent
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("the @a2a-js/sdk agent did not start (%q, %v):\n%s", line, err, stderr.String())
	}
	return limitPeer{url: url, took: func(t *testing.T, contextID string) []string {
		t.Helper()
		resp, err := http.Get(url + "/took?context=" + contextID)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var took []string
		if err := json.NewDecoder(resp.Body).Decode(&took); err != nil {
			t.Fatal(err)
		}
		return took
	}}
}
