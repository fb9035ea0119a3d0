package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/tai-dev/tai/driver"
)

// The reference peer: a2a-go v2's server, in process, with its 1.0
// JSON-RPC handler at /v1 and its 0.3 compatibility handler at /v03 over
// one request handler. The first words of the prompt pick what a task
// does:
//
//	approve  asks "approve? yes/no"; the answer continues the task: done: <answer>
//	ask      asks "What is your name?" (no yes/no); the answer: hello <answer>
//	chunks   streams one artifact in three appended chunks
//	slow     works until cancelled
//	fail     fails with "boom"; reject is rejected, auth is auth-required
//	message  answers with a Message, no task
//	anything else is echoed as an artifact.
type peerExec struct {
	release chan struct{} // closed when the test ends: slow tasks give up
}

func (p peerExec) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		text := ec.Message.Parts[0].Text()
		if ec.StoredTask != nil && ec.StoredTask.Status.State == a2a.TaskStateInputRequired {
			asked := ""
			if m := ec.StoredTask.Status.Message; m != nil {
				asked = m.Parts[0].Text()
			}
			reply := "done: " + text
			if strings.Contains(asked, "name") {
				reply = "hello " + text
			}
			if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
				return
			}
			if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart(reply)), nil) {
				return
			}
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
			return
		}
		word, _, _ := strings.Cut(text, " ")
		if word == "message" {
			m := a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("just a message"))
			m.ContextID = ec.ContextID
			yield(m, nil)
			return
		}
		if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		agent := func(s string) *a2a.Message {
			return a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(s))
		}
		switch word {
		case "approve":
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, agent("approve? yes/no")), nil)
			return
		case "ask":
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, agent("What is your name?")), nil)
			return
		case "fail":
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, agent("boom")), nil)
			return
		case "reject":
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateRejected, agent("no thanks")), nil)
			return
		case "auth":
			if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateAuthRequired, agent("log in first")), nil) {
				return
			}
			// a2a-go keeps an auth-required execution open: end it with the test.
			<-p.release
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
			return
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		switch word {
		case "slow":
			select {
			case <-ctx.Done():
			case <-p.release:
				// A task whose client went away: end it, or a2a-go waits on.
				yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
			}
			return
		case "chunks":
			first := a2a.NewArtifactEvent(ec, a2a.NewTextPart("one "))
			if !yield(first, nil) {
				return
			}
			if !yield(a2a.NewArtifactUpdateEvent(ec, first.Artifact.ID, a2a.NewTextPart("two ")), nil) {
				return
			}
			last := a2a.NewArtifactUpdateEvent(ec, first.Artifact.ID, a2a.NewTextPart("three"))
			last.LastChunk = true
			if !yield(last, nil) {
				return
			}
		default:
			if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("echo: "+text)), nil) {
				return
			}
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (peerExec) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// Card shapes the peer serves.
const (
	cardUnion = "union" // a2a-go's compat card: 1.0 interfaces + 0.3 url/protocolVersion
	cardV1    = "v1"    // 1.0 only
	cardV03   = "v03"   // a 0.3 card
	cardLying = "lying" // a 1.0 card whose endpoint speaks only 0.3
	cardNone  = "none"  // no card
)

type peer struct {
	srv    *httptest.Server
	mu     sync.Mutex
	hdr    map[string][]string // path → the A2A-Version header of each request
	bodies []string
	waits  []bodyWait
}

type bodyWait struct {
	substr string
	ch     chan struct{}
}

// sawBody returns a channel closed once a request body containing substr
// has arrived.
func (p *peer) sawBody(substr string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch := make(chan struct{})
	for _, b := range p.bodies {
		if strings.Contains(b, substr) {
			close(ch)
			return ch
		}
	}
	p.waits = append(p.waits, bodyWait{substr, ch})
	return ch
}

func (p *peer) record(r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hdr[r.URL.Path] = append(p.hdr[r.URL.Path], r.Header.Get("A2A-Version"))
	p.bodies = append(p.bodies, string(body))
	keep := p.waits[:0]
	for _, w := range p.waits {
		if strings.Contains(string(body), w.substr) {
			close(w.ch)
			continue
		}
		keep = append(keep, w)
	}
	p.waits = keep
}

func newPeer(t *testing.T, card string, streaming bool) *peer {
	t.Helper()
	release := make(chan struct{})
	h := a2asrv.NewHandler(peerExec{release: release})
	p := &peer{hdr: map[string][]string{}}
	mux := http.NewServeMux()
	mux.Handle("/v1", a2asrv.NewJSONRPCHandler(h))
	mux.Handle("/v03", a2av0.NewJSONRPCHandler(h))
	v1Card := func(ifaces ...*a2a.AgentInterface) *a2a.AgentCard {
		return &a2a.AgentCard{Name: "peer", Version: "2.3.1", Description: "test peer", SupportedInterfaces: ifaces,
			Capabilities: a2a.AgentCapabilities{Streaming: streaming}, DefaultInputModes: []string{"text/plain"},
			DefaultOutputModes: []string{"text/plain"}, Skills: []a2a.AgentSkill{}}
	}
	iface := func(path, version string) *a2a.AgentInterface {
		return &a2a.AgentInterface{URL: p.srv.URL + path, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.ProtocolVersion(version)}
	}
	switch card {
	case cardUnion:
		mux.Handle(CardPath, a2asrv.NewAgentCardHandler(a2av0.NewAgentCardProducer(a2asrv.AgentCardProducerFn(
			func(context.Context) (*a2a.AgentCard, error) {
				return v1Card(iface("/v1", "1.0"), iface("/v03", "0.3")), nil
			}))))
	case cardV1:
		mux.Handle(CardPath, a2asrv.NewAgentCardHandler(a2asrv.AgentCardProducerFn(
			func(context.Context) (*a2a.AgentCard, error) { return v1Card(iface("/v1", "1.0")), nil })))
	case cardLying:
		mux.Handle(CardPath, a2asrv.NewAgentCardHandler(a2asrv.AgentCardProducerFn(
			func(context.Context) (*a2a.AgentCard, error) { return v1Card(iface("/v03", "1.0")), nil })))
	case cardV03:
		mux.HandleFunc(CardPath, func(w http.ResponseWriter, _ *http.Request) {
			_ = json.NewEncoder(w).Encode(map[string]any{"name": "peer", "version": "0.3.15", "protocolVersion": "0.3.0",
				"url": p.srv.URL + "/v03", "preferredTransport": "JSONRPC", "capabilities": map[string]any{"streaming": streaming},
				"defaultInputModes": []string{"text/plain"}, "defaultOutputModes": []string{"text/plain"}, "skills": []any{}})
		})
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.record(r)
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		close(release)
		p.srv.Close()
	})
	return p
}

// versions are the A2A-Version headers sent to path.
func (p *peer) versions(path string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.hdr[path])
}

func launch(t *testing.T, url string, dec driver.PermissionDecider, o Options) (*Session, *sink) {
	t.Helper()
	sk := &sink{}
	if o.PollInterval == 0 {
		o.PollInterval = 1 // polls are not what these tests wait for
	}
	s, err := Start(t.Context(), driver.Launch{Argv: []string{url}, Cwd: "/work", Agent: "peer",
		Host: driver.Host{Sink: sk, Decider: dec}}, o)
	if err != nil {
		t.Fatalf("launch %s: %v", url, err)
	}
	t.Cleanup(func() {
		if err := s.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s, sk
}

func prompt(t *testing.T, s *Session, text string) (driver.TurnResult, error) {
	t.Helper()
	return s.Prompt(t.Context(), []driver.Content{driver.TextContent(text)})
}

func TestPeerDialects(t *testing.T) {
	tests := []struct {
		name      string
		card      string
		path      string // appended to the peer's URL for Argv[0]
		streaming bool
		want      string
	}{
		{"union card streaming", cardUnion, "", true, Dialect10},
		{"union card blocking", cardUnion, "", false, Dialect10},
		{"1.0 card", cardV1, "", true, Dialect10},
		{"0.3 card streaming", cardV03, "", true, Dialect03},
		{"0.3 card blocking", cardV03, "", false, Dialect03},
		{"1.0 card over a 0.3 endpoint negotiates down", cardLying, "", true, Dialect03},
		{"card given by URL", cardUnion, CardPath, true, Dialect10},
		{"no card, 1.0 endpoint", cardNone, "/v1", false, Dialect10},
		{"no card, 0.3 endpoint", cardNone, "/v03", false, Dialect03},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPeer(t, tt.card, tt.streaming)
			s, sk := launch(t, p.srv.URL+tt.path, nil, Options{})
			res, err := prompt(t, s, "hi there")
			if err != nil || res.StopReason != driver.StopEndTurn {
				t.Fatalf("turn 1: %+v, %v", res, err)
			}
			ctxID := s.ID()
			if ctxID == "" {
				t.Fatal("no context id after the first turn")
			}
			res, err = prompt(t, s, "again")
			if err != nil || res.StopReason != driver.StopEndTurn {
				t.Fatalf("turn 2: %+v, %v", res, err)
			}
			if s.ID() != ctxID {
				t.Errorf("context changed: %s → %s", ctxID, s.ID())
			}
			if got := s.Dialect(); got != tt.want {
				t.Errorf("dialect %s, want %s", got, tt.want)
			}
			if got, want := sk.text(), []string{"echo: hi there", "echo: again"}; !slices.Equal(got, want) {
				t.Errorf("messages %q, want %q", got, want)
			}
			started := sk.ofType(driver.EventSessionStarted)
			if len(started) != 1 || started[0].Started.Protocol != "a2a/"+tt.want || started[0].Session != ctxID {
				t.Errorf("session.started: %+v", started)
			}
			if ends := sk.ofType(driver.EventTurnEnded); len(ends) != 2 {
				t.Errorf("%d turn.ended events, want 2", len(ends))
			}
			for _, v := range p.versions("/v1") {
				if v != "1.0" {
					t.Errorf("a request to the 1.0 endpoint had A2A-Version %q", v)
				}
			}
			v03 := p.versions("/v03")
			if tt.want == Dialect03 && len(v03) == 0 {
				t.Error("no request reached the 0.3 endpoint")
			}
			// At a 0.3 endpoint tai first tried as 1.0 (and negotiated down)
			// only when nothing said it was 0.3.
			if negotiated := tt.card == cardLying || tt.card == cardNone; negotiated && tt.want == Dialect03 {
				// The 1.0 attempt carried the header, the 0.3 ones do not.
				if len(v03) < 2 || v03[0] != "1.0" || slices.Contains(v03[1:], "1.0") {
					t.Errorf("headers at the lying endpoint: %q", v03)
				}
			} else if slices.Contains(v03, "1.0") {
				t.Errorf("A2A-Version sent to the 0.3 endpoint: %q", v03)
			}
		})
	}
}

func TestPeerApproval(t *testing.T) {
	tests := []struct {
		name      string
		card      string
		streaming bool
		verdict   string
		want      string
		stop      string
	}{
		{"1.0 allow", cardUnion, true, driver.VerdictAllow, "done: yes", driver.StopEndTurn},
		{"1.0 deny", cardUnion, true, driver.VerdictDeny, "done: no", driver.StopEndTurn},
		{"0.3 allow", cardV03, true, driver.VerdictAllow, "done: yes", driver.StopEndTurn},
		{"0.3 blocking deny", cardV03, false, driver.VerdictDeny, "done: no", driver.StopEndTurn},
		{"1.0 blocking allow", cardV1, false, driver.VerdictAllow, "done: yes", driver.StopEndTurn},
		{"decider fails", cardUnion, true, "error", "", driver.StopCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPeer(t, tt.card, tt.streaming)
			dec := &decider{verdict: tt.verdict}
			s, sk := launch(t, p.srv.URL, dec, Options{})
			res, err := prompt(t, s, "approve the plan")
			if err != nil || res.StopReason != tt.stop {
				t.Fatalf("turn: %+v, %v", res, err)
			}
			if len(dec.asked) != 1 {
				t.Fatalf("decider asked %d times", len(dec.asked))
			}
			req := dec.asked[0]
			if req.ToolCall.Title != "approve? yes/no" || len(req.Options) != 2 || req.Options[0].ID != "yes" || req.Options[1].ID != "no" {
				t.Errorf("permission request: %+v", req)
			}
			if n := len(sk.ofType(driver.EventPermissionAsked)); n != 1 {
				t.Errorf("%d permission.asked", n)
			}
			decided := sk.ofType(driver.EventPermissionDecided)
			if len(decided) != 1 || decided[0].Decision.RequestID != req.ID {
				t.Errorf("permission.decided: %+v", decided)
			}
			text := sk.text()
			if tt.want != "" && (len(text) != 2 || text[0] != "approve? yes/no" || text[1] != tt.want) {
				t.Errorf("messages %q, want the question then %q", text, tt.want)
			}
			// The answer continued the task: the next prompt starts a new one.
			res, err = prompt(t, s, "after")
			if err != nil || res.StopReason != driver.StopEndTurn {
				t.Fatalf("next turn: %+v, %v", res, err)
			}
		})
	}
}

func TestPeerQuestion(t *testing.T) {
	tests := []struct {
		name      string
		card      string
		streaming bool
		text      string
		question  string
		answer    string
		want      string
	}{
		{"1.0 open question", cardUnion, true, "ask me", "What is your name?", "Bob", "hello Bob"},
		{"0.3 blocking open question", cardV03, false, "ask me", "What is your name?", "Ann", "hello Ann"},
		// No Decider: even a yes/no question is put to the user.
		{"approval without a decider", cardV1, true, "approve it", "approve? yes/no", "yes", "done: yes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPeer(t, tt.card, tt.streaming)
			s, sk := launch(t, p.srv.URL, nil, Options{})
			res, err := prompt(t, s, tt.text)
			if err != nil || res.StopReason != StopInputRequired {
				t.Fatalf("turn 1: %+v, %v", res, err)
			}
			if text := sk.text(); len(text) != 1 || text[0] != tt.question {
				t.Errorf("messages %q", text)
			}
			if st := sk.ofType(driver.EventStatus); len(st) == 0 || st[len(st)-1].Status.State != "waiting" {
				t.Errorf("status events: %+v", st)
			}
			res, err = prompt(t, s, tt.answer)
			if err != nil || res.StopReason != driver.StopEndTurn {
				t.Fatalf("turn 2: %+v, %v", res, err)
			}
			if text := sk.text(); len(text) != 2 || text[1] != tt.want {
				t.Errorf("messages %q, want %q last", text, tt.want)
			}
		})
	}
}

func TestPeerOutcomes(t *testing.T) {
	tests := []struct {
		name  string
		card  string
		text  string
		stop  string
		check func(error) bool
	}{
		{"1.0 failed", cardUnion, "fail now", StopFailed, func(err error) bool {
			var te *TaskError
			return errors.As(err, &te) && te.State == StateFailed && te.Message == "boom"
		}},
		{"0.3 rejected", cardV03, "reject this", StopRejected, func(err error) bool {
			var te *TaskError
			return errors.As(err, &te) && te.State == StateRejected && te.Message == "no thanks"
		}},
		{"1.0 auth-required", cardV1, "auth please", StopAuthRequired, func(err error) bool {
			var ae *driver.AuthRequiredError
			return errors.As(err, &ae) && ae.Message == "log in first"
		}},
		{"1.0 message answer", cardUnion, "message me", driver.StopEndTurn, func(err error) bool { return err == nil }},
		{"0.3 message answer", cardV03, "message me", driver.StopEndTurn, func(err error) bool { return err == nil }},
	}
	for _, tt := range tests {
		for _, streaming := range []bool{true, false} {
			t.Run(tt.name+map[bool]string{true: " streaming", false: " blocking"}[streaming], func(t *testing.T) {
				p := newPeer(t, tt.card, streaming)
				s, sk := launch(t, p.srv.URL, nil, Options{})
				res, err := prompt(t, s, tt.text)
				if res.StopReason != tt.stop || !tt.check(err) {
					t.Fatalf("turn: %+v, %v", res, err)
				}
				ends := sk.ofType(driver.EventTurnEnded)
				if len(ends) != 1 || ends[0].Turn.StopReason != tt.stop {
					t.Errorf("turn.ended: %+v", ends)
				}
				if tt.text == "message me" && !slices.Equal(sk.text(), []string{"just a message"}) {
					t.Errorf("messages %q", sk.text())
				}
			})
		}
	}
}

func TestPeerArtifactChunks(t *testing.T) {
	for _, card := range []string{cardUnion, cardV03} {
		for _, streaming := range []bool{true, false} {
			t.Run(card+map[bool]string{true: " streaming", false: " blocking"}[streaming], func(t *testing.T) {
				p := newPeer(t, card, streaming)
				s, sk := launch(t, p.srv.URL, nil, Options{})
				res, err := prompt(t, s, "chunks please")
				if err != nil || res.StopReason != driver.StopEndTurn {
					t.Fatalf("turn: %+v, %v", res, err)
				}
				if got := sk.text(); !slices.Equal(got, []string{"one two three"}) {
					t.Errorf("reassembled %q", got)
				}
				chunks := 0
				for _, ev := range sk.ofType(driver.EventMessage) {
					if ev.Message.Replace {
						t.Errorf("unexpected replace chunk %+v", ev.Message)
					}
					chunks++
				}
				if streaming && chunks != 3 {
					t.Errorf("%d chunks streamed, want 3", chunks)
				}
			})
		}
	}
}

func TestPeerCancel(t *testing.T) {
	for _, card := range []string{cardUnion, cardV03} {
		for _, streaming := range []bool{true, false} {
			t.Run(card+map[bool]string{true: " streaming", false: " blocking"}[streaming], func(t *testing.T) {
				p := newPeer(t, card, streaming)
				s, sk := launch(t, p.srv.URL, nil, Options{})
				if err := s.Cancel(t.Context(), nil); err != nil {
					t.Fatalf("cancel between turns: %v", err)
				}
				type out struct {
					res driver.TurnResult
					err error
				}
				done := make(chan out, 1)
				go func() {
					res, err := prompt(t, s, "slow down")
					done <- out{res, err}
				}()
				if streaming {
					<-sk.on(func(ev driver.Event) bool { return ev.Type == driver.EventStatus && ev.Status.State == "working" })
				} else {
					<-p.sawBody("slow down")
				}
				for range 2 { // idempotent
					if err := s.Cancel(t.Context(), nil); err != nil {
						t.Fatalf("cancel: %v", err)
					}
				}
				o := <-done
				if o.err != nil || o.res.StopReason != driver.StopCancelled {
					t.Fatalf("turn: %+v, %v", o.res, o.err)
				}
				if !streaming {
					if errs := sk.ofType(driver.EventError); len(errs) != 1 || errs[0].Error.Code != "cancel_unsent" {
						t.Errorf("errors: %+v", errs)
					}
					return
				}
				// The session goes on.
				res, err := prompt(t, s, "still there")
				if err != nil || res.StopReason != driver.StopEndTurn {
					t.Fatalf("next turn: %+v, %v", res, err)
				}
			})
		}
	}
}

func TestPeerCloseDuringTurn(t *testing.T) {
	p := newPeer(t, cardUnion, true)
	sk := &sink{}
	s, err := Launch(t.Context(), driver.Launch{Argv: []string{p.srv.URL}, Host: driver.Host{Sink: sk}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := prompt(t, s, "slow again")
		done <- err
	}()
	<-sk.on(func(ev driver.Event) bool { return ev.Type == driver.EventStatus && ev.Status.State == "working" })
	if err := s.Close(t.Context()); err != nil {
		t.Fatalf("close: %v", err)
	}
	<-done // cancelled at close (the peer confirmed) or dropped: either way it returned
	select {
	case <-s.Exited():
	default:
		t.Error("Exited not closed after Close")
	}
	if _, err := prompt(t, s, "after close"); !errors.Is(err, errClosed) {
		t.Errorf("prompt after close: %v", err)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Errorf("second close: %v", err)
	}
}

func TestPeerCallerContextEndsTurn(t *testing.T) {
	p := newPeer(t, cardUnion, true)
	s, sk := launch(t, p.srv.URL, nil, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := s.Prompt(ctx, []driver.Content{driver.TextContent("slow please")})
		done <- err
	}()
	<-sk.on(func(ev driver.Event) bool { return ev.Type == driver.EventStatus && ev.Status.State == "working" })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("prompt: %v", err)
	}
	// tai still tells the agent, so its task does not run on.
	<-p.sawBody(`"method":"CancelTask"`)
	if res, err := prompt(t, s, "next"); err != nil || res.StopReason != driver.StopEndTurn {
		t.Fatalf("next turn: %+v, %v", res, err)
	}
}
