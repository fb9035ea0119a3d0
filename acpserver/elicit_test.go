package acpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tai-dev/tai/driver"
)

// elicitRun is a run whose every turn elicits a form through Hooks.Elicitor
// and says the answer (or that there is no elicitor) as its message. A
// turn cancelled while the editor has the form withdraws it.
func elicitRun(ctx context.Context, spec Spec, h Hooks) error {
	s := &fakeSession{id: "fake-1", exited: make(chan struct{})}
	h.Sink.Emit(driver.Event{Type: driver.EventSessionStarted, Session: s.id, Started: &driver.SessionStarted{Driver: "acp", Cwd: spec.Cwd}})
	h.OnSession(fakeControl{s})
	for {
		select {
		case _, ok := <-h.Turns:
			if !ok {
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
		say := "no elicitor"
		if h.Elicitor != nil {
			actx, cancel := context.WithCancel(ctx)
			go func() {
				select {
				case <-h.Interrupts:
					cancel()
				case <-actx.Done():
				}
			}()
			min := 1.0
			ans, err := h.Elicitor.Answer(actx, driver.ElicitationRequest{ID: "e1", Mode: driver.ElicitForm, Message: "Which database?", Fields: []driver.ElicitField{
				{Name: "db", Type: "string", Enum: []string{"prod", "staging"}, EnumNames: []string{"Production", "Staging"}, Required: true},
				{Name: "port", Type: "integer", Minimum: &min},
				{Name: "token", Type: "string", Secret: true}}})
			cancel()
			say = fmt.Sprintf("%s %v by %s via %s", ans.Action, ans.Content, ans.DecidedBy, ans.Via)
			if err != nil {
				say = "error: " + err.Error()
			}
		}
		h.Sink.Emit(driver.Event{Type: driver.EventMessage, Message: &driver.MessageChunk{Role: driver.RoleAgent, Text: say}})
		h.Sink.Emit(driver.Event{Type: driver.EventTurnEnded, Turn: &driver.TurnEnded{StopReason: driver.StopEndTurn}})
	}
}

func startElicitServe(t *testing.T) *editorPipe {
	e := startServeRun(t, elicitRun)
	t.Cleanup(func() {
		if err := e.finish(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Serve: %v", err)
		}
	})
	return e
}

func (e *editorPipe) open(caps string) {
	e.t.Helper()
	e.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":` + caps + `}}`)
	e.until(`"id":1`)
	e.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`)
	e.until(`"id":2`)
}

// An editor that advertised form elicitation gets the agent's form as
// elicitation/create with its schema; its answer is the human's, via the
// editor. One that advertised none (or {} alone) is offered no elicitor.
func TestElicitationGoesToTheEditor(t *testing.T) {
	e := startElicitServe(t)
	e.open(`{"elicitation":{"form":{}}}`)
	e.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"fake-1","prompt":[{"type":"text","text":"go"}]}}`)
	req := e.until(`elicitation/create`)
	var p struct {
		Mode            string `json:"mode"`
		SessionID       string `json:"sessionId"`
		Message         string `json:"message"`
		RequestedSchema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		} `json:"requestedSchema"`
	}
	if err := json.Unmarshal(req["params"], &p); err != nil {
		t.Fatal(err)
	}
	sc := p.RequestedSchema
	if p.Mode != "form" || p.SessionID != "fake-1" || p.Message != "Which database?" || sc.Type != "object" || fmt.Sprint(sc.Required) != "[db]" {
		t.Fatalf("elicitation/create: %s", req["params"])
	}
	for name, want := range map[string]string{
		"db":    `{"oneOf":[{"const":"prod","title":"Production"},{"const":"staging","title":"Staging"}],"type":"string"}`,
		"port":  `{"minimum":1,"type":"integer"}`,
		"token": `{"type":"string","writeOnly":true}`,
	} {
		if got := string(sc.Properties[name]); got != want {
			t.Errorf("property %s = %s, want %s", name, got, want)
		}
	}
	e.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"db":"staging"}}}`, req["id"]))
	if m := e.until(`agent_message_chunk`); !strings.Contains(string(m["params"]), "accept map[db:staging] by human via editor") {
		t.Fatalf("the agent got: %s", m["params"])
	}
	e.until(`"id":3`)

	for _, caps := range []string{`{}`, `{"elicitation":{}}`} {
		t.Run(caps, func(t *testing.T) {
			e := startElicitServe(t)
			e.open(caps)
			e.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"fake-1","prompt":[{"type":"text","text":"go"}]}}`)
			if m := e.until(`agent_message_chunk`); !strings.Contains(string(m["params"]), "no elicitor") {
				t.Fatalf("the agent got: %s", m["params"])
			}
		})
	}
}

// A form withdrawn while the editor shows it (the turn cancelled, or
// another channel answered) is cancelled in the editor with
// $/cancel_request.
func TestElicitationWithdrawnFromTheEditor(t *testing.T) {
	e := startElicitServe(t)
	e.open(`{"elicitation":{"form":{},"url":{}}}`)
	e.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"fake-1","prompt":[{"type":"text","text":"go"}]}}`)
	req := e.until(`elicitation/create`)
	e.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"fake-1"}}`)
	// The withdrawal is sent on its own: it may come after the turn's message.
	var cancelled, told bool
	for !cancelled || !told {
		m := e.next()
		switch b := string(m["params"]); {
		case string(m["method"]) == `"$/cancel_request"`:
			if !strings.Contains(b, `"requestId":`+string(req["id"])) {
				t.Fatalf("$/cancel_request: %s", b)
			}
			cancelled = true
		case strings.Contains(b, "agent_message_chunk"):
			if !strings.Contains(b, "error: asking the editor") {
				t.Fatalf("the agent got: %s", b)
			}
			told = true
		}
	}
}
