package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tai-dev/tai/driver"
)

// The test binary doubles as a scripted ACP agent: with TAI_FAKE_AGENT set
// it plays that scenario on stdin/stdout instead of running tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv("TAI_FAKE_AGENT"); mode != "" {
		fakeAgent(mode)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// fakeAgent answers like a sloppy real agent: updates before the
// session/new response, a permission request with id 0 that names only the
// tool call id, an update kind from the future, and updates after the prompt
// response.
func fakeAgent(mode string) {
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	send := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
	}
	update := func(u string) {
		send(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":%s}}`, u)
	}
	if mode == "stubborn" {
		signal.Ignore(syscall.SIGTERM)
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	for in.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
		}
		_ = json.Unmarshal(in.Bytes(), &msg)
		switch msg.Method {
		case "initialize":
			caps := `{}`
			switch mode {
			case "load":
				caps = `{"loadSession":true}`
			case "resume":
				caps = `{"loadSession":true,"sessionCapabilities":{"resume":{}}}`
			}
			send(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"agentCapabilities":%s,"agentInfo":{"name":"fake","version":"1"}}}`, msg.ID, caps)
		case "session/load":
			if !strings.Contains(in.Text(), `"sessionId":"s1"`) {
				send(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32002,"message":"Resource not found"}}`, msg.ID)
				continue
			}
			update(`{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"replayed question"}}`)
			update(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"replayed answer"}}`)
			send(`{"jsonrpc":"2.0","id":%s,"result":null}`, msg.ID)
		case "session/resume":
			send(`{"jsonrpc":"2.0","id":%s,"result":{"modes":{"currentModeId":"plan","availableModes":[{"id":"plan","name":"Plan"}]}}}`, msg.ID)
		case "session/new":
			update(`{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"early","description":"sent before the response"}]}`)
			if mode == "flood" { // updates the session must hold until it knows its id
				update(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"early 1"}}`)
				update(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"early 2"}}`)
			}
			send(`{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"s1","modes":{"currentModeId":"default","availableModes":[{"id":"default","name":"Default"},{"id":"plan","name":"Plan"}]}}}`, msg.ID)
		case "session/set_mode":
			send(`{"jsonrpc":"2.0","id":%s,"result":{}}`, msg.ID)
		case "session/prompt":
			switch mode {
			case "flood":
				for i := range floodUpdates {
					update(floodUpdate(i))
				}
				send(`{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}`, msg.ID)
				continue
			case "die":
				update(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"partial"}}`)
				fmt.Fprintln(os.Stderr, "panic: model backend unreachable")
				os.Exit(7)
			case "stubborn":
				time.Sleep(time.Hour) // never answers, ignores EOF and SIGTERM
			}
			update(`{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Write a.txt","kind":"edit","status":"pending","locations":[{"path":"/ws/a.txt"}]}`)
			// Our own request uses id 0 too: the client must not confuse it
			// with its pending session/prompt.
			send(`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"c1"},"options":[{"optionId":"yes","name":"Yes","kind":"allow_once"},{"optionId":"no","name":"No","kind":"reject_once"}]}}`)
			var answer string
			for in.Scan() {
				if strings.Contains(in.Text(), `"result"`) {
					answer = in.Text()
					break
				}
			}
			update(`{"sessionUpdate":"subagent_update","title":"from the future"}`)
			status := "failed"
			if strings.Contains(answer, `"optionId":"yes"`) {
				status = "completed"
			}
			update(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":%q}`, status))
			send(`{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}`, msg.ID)
			update(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"late"}}`)
		}
	}
	if mode == "stubborn" {
		time.Sleep(time.Hour) // like codex-acp: stdin EOF does not end it
	}
}

// recorder is a Sink and a PermissionDecider.
type recorder struct {
	mu     sync.Mutex
	events []driver.Event
	asked  []driver.PermissionRequest
	allow  bool
}

func (r *recorder) Emit(ev driver.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *recorder) Decide(ctx context.Context, req driver.PermissionRequest) (driver.PermissionDecision, error) {
	r.mu.Lock()
	r.asked = append(r.asked, req)
	r.mu.Unlock()
	id := "no"
	if r.allow {
		id = "yes"
	}
	return driver.PermissionDecision{Outcome: driver.OutcomeSelected, OptionID: id, Verdict: driver.VerdictAllow, DecidedBy: "test"}, nil
}

func (r *recorder) types() []driver.EventType {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []driver.EventType
	for _, e := range r.events {
		out = append(out, e.Type)
	}
	return out
}

func start(t *testing.T, mode string, rec *recorder, grace time.Duration) *Session {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(context.Background(), Config{
		Argv: []string{exe}, Env: append(os.Environ(), "TAI_FAKE_AGENT="+mode), Cwd: t.TempDir(), Agent: "fake",
		Host: driver.Host{Sink: rec, Decider: rec}, StopGrace: grace,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSloppyAgent(t *testing.T) {
	for _, allow := range []bool{true, false} {
		t.Run(fmt.Sprint("allow=", allow), func(t *testing.T) {
			rec := &recorder{allow: allow}
			s := start(t, "ok", rec, time.Second)
			defer s.Close(context.Background())
			if err := s.SetMode(context.Background(), "plan"); err != nil {
				t.Fatal(err)
			}
			res, err := s.Prompt(context.Background(), []driver.Content{driver.TextContent("go")})
			if err != nil || res.StopReason != "end_turn" {
				t.Fatalf("prompt: %+v %v", res, err)
			}
			// The permission request named only the tool call id; the
			// tool_call that preceded it on the wire filled in the rest.
			if len(rec.asked) != 1 {
				t.Fatalf("asked %d times", len(rec.asked))
			}
			tc := rec.asked[0].ToolCall
			if tc.Title != "Write a.txt" || tc.Kind != "edit" || len(tc.Locations) != 1 {
				t.Fatalf("permission request lost the tool call state: %+v", tc)
			}
			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := rec.types()
			// The early update arrives after session.started, not lost.
			if got[0] != driver.EventSessionStarted || got[1] != driver.EventCommands {
				t.Fatalf("events start %v", got[:2])
			}
			var raw, late, final bool
			for _, e := range rec.events {
				switch {
				case e.Type == driver.EventRaw && e.Raw.Kind == "subagent_update":
					raw = true
				case e.Type == driver.EventMessage && e.Message.Text == "late":
					late = true
				case e.Type == driver.EventToolCall && e.ToolCall.Status != "pending":
					final = true
					want := "failed"
					if allow {
						want = "completed"
					}
					if e.ToolCall.Status != want || e.ToolCall.Title != "Write a.txt" {
						t.Fatalf("merged tool call %+v", e.ToolCall)
					}
				}
			}
			if !raw || !late || !final {
				t.Fatalf("raw %v late %v final %v: %v", raw, late, final, got)
			}
		})
	}
}

func TestAgentDiesMidTurn(t *testing.T) {
	rec := &recorder{}
	s := start(t, "die", rec, time.Second)
	defer s.Close(context.Background())
	_, err := s.Prompt(context.Background(), []driver.Content{driver.TextContent("go")})
	var exit *driver.AgentExitError
	if !errors.As(err, &exit) || exit.ExitCode != 7 || !strings.Contains(exit.Stderr, "model backend unreachable") {
		t.Fatalf("err = %v", err)
	}
}

// An agent that ignores stdin EOF and SIGTERM is killed, and Close returns.
func TestCloseEscalatesToKill(t *testing.T) {
	rec := &recorder{}
	s := start(t, "stubborn", rec, 50*time.Millisecond)
	done := make(chan error, 1)
	go func() {
		_, err := s.Prompt(context.Background(), []driver.Content{driver.TextContent("go")})
		done <- err
	}()
	// The prompt is in flight once the agent has it; Close must still end
	// everything.
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Fatal("prompt succeeded against a killed agent")
	}
	if e := s.ExitError(); e == nil || e.Signal != "SIGKILL" {
		t.Fatalf("exit %+v, want SIGKILL", e)
	}
	if err := syscall.Kill(-s.Pid(), 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("process group still alive: %v", err)
	}
}

// --resume: session/resume when offered, else session/load with the
// replayed history kept out of the new run's output.
func TestResume(t *testing.T) {
	for _, mode := range []string{"load", "resume"} {
		t.Run(mode, func(t *testing.T) {
			rec := &recorder{allow: true}
			exe, _ := os.Executable()
			s, err := Start(context.Background(), Config{
				Argv: []string{exe}, Env: append(os.Environ(), "TAI_FAKE_AGENT="+mode), Cwd: t.TempDir(),
				Host: driver.Host{Sink: rec, Decider: rec}, ResumeID: "s1", StopGrace: time.Second,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(context.Background())
			if s.ID() != "s1" {
				t.Fatalf("session id %q", s.ID())
			}
			for _, e := range rec.events {
				if e.Type == driver.EventMessage {
					t.Fatalf("replayed history re-emitted: %+v", e.Message)
				}
				if e.Type == driver.EventSessionStarted && !e.Started.Resumed {
					t.Fatal("session.started not marked resumed")
				}
			}
			if res, err := s.Prompt(context.Background(), []driver.Content{driver.TextContent("go on")}); err != nil || res.StopReason != "end_turn" {
				t.Fatalf("prompt after resume: %+v %v", res, err)
			}
		})
	}
	t.Run("unknown session", func(t *testing.T) {
		exe, _ := os.Executable()
		rec := &recorder{}
		_, err := Start(context.Background(), Config{
			Argv: []string{exe}, Env: append(os.Environ(), "TAI_FAKE_AGENT=load"), Cwd: t.TempDir(),
			Host: driver.Host{Sink: rec, Decider: rec}, ResumeID: "nope", StopGrace: time.Second,
		})
		if !errors.Is(err, driver.ErrNoSession) {
			t.Fatalf("err = %v, want ErrNoSession", err)
		}
	})
}
