package acpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
)

// editorPipe is an editor on the other end of Serve.
type editorPipe struct {
	t   *testing.T
	w   *io.PipeWriter
	sc  *bufio.Scanner
	end chan error
}

func startServe(t *testing.T) *editorPipe { return startServeRun(t, fakeRun) }

// startServeRun is an editor on the other end of Serve, whose agents run.
func startServeRun(t *testing.T, run RunFunc) *editorPipe {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	e := &editorPipe{t: t, w: inW, sc: bufio.NewScanner(outR), end: make(chan error, 1)}
	go func() {
		e.end <- Serve(context.Background(), inR, outW, Options{Run: run, Cwd: "/w", Agent: "fake", Version: "test"})
		outW.Close()
	}()
	return e
}

// finish closes the editor's side, reads what tai still writes, and
// returns what Serve returned.
func (e *editorPipe) finish() error {
	e.w.Close()
	for e.sc.Scan() {
	}
	return <-e.end
}

func (e *editorPipe) send(s string) {
	e.t.Helper()
	if _, err := fmt.Fprintln(e.w, s); err != nil {
		e.t.Fatal(err)
	}
}

// next returns the next message tai wrote.
func (e *editorPipe) next() map[string]json.RawMessage {
	e.t.Helper()
	if !e.sc.Scan() {
		e.t.Fatal("tai's output ended")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(e.sc.Bytes(), &m); err != nil {
		e.t.Fatalf("%q: %v", e.sc.Text(), err)
	}
	return m
}

// until returns the first message whose text contains s.
func (e *editorPipe) until(s string) map[string]json.RawMessage {
	e.t.Helper()
	for {
		m := e.next()
		b, _ := json.Marshal(m)
		if strings.Contains(string(b), s) {
			return m
		}
	}
}

// TestServeTurns: a turn whose ask the editor rejects ends the turn with
// the tool call failed; a turn cancelled while asking ends cancelled; the
// editor closing its side ends Serve with every run over.
func TestServeTurns(t *testing.T) {
	e := startServe(t)
	e.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	if m := e.until(`"id":1`); !strings.Contains(string(m["result"]), `"loadSession":true`) {
		t.Fatalf("initialize: %s", m["result"])
	}
	e.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`)
	if m := e.until(`"id":2`); !strings.Contains(string(m["result"]), `"sessionId":"fake-1"`) {
		t.Fatalf("session/new: %s", m["result"])
	}
	e.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"fake-1","prompt":[{"type":"text","text":"one"}]}}`)
	ask := e.until(`session/request_permission`)
	if !strings.Contains(string(ask["params"]), `"optionId":"reject_once"`) {
		t.Fatalf("the ask: %s", ask["params"])
	}
	e.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"selected","optionId":"reject_once"}}}`, ask["id"]))
	e.until(`"status":"failed"`)
	if m := e.until(`"id":3`); string(m["result"]) != `{"stopReason":"end_turn"}` {
		t.Fatalf("turn one: %s", m["result"])
	}

	e.send(`{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"fake-1","prompt":[{"type":"text","text":"two"}]}}`)
	e.until(`session/request_permission`)
	e.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"fake-1"}}`)
	if m := e.until(`"id":4`); string(m["result"]) != `{"stopReason":"cancelled"}` {
		t.Fatalf("turn two: %s", m["result"])
	}

	e.send(`{"jsonrpc":"2.0","id":5,"method":"session/set_mode","params":{"sessionId":"fake-1","modeId":"nope"}}`)
	if m := e.until(`"id":5`); !strings.Contains(string(m["error"]), `-32602`) {
		t.Fatalf("a mode the agent lacks: %s", m["error"])
	}
	e.send(`{"jsonrpc":"2.0","id":6,"method":"session/prompt","params":{"sessionId":"nobody","prompt":[{"type":"text","text":"x"}]}}`)
	if m := e.until(`"id":6`); !strings.Contains(string(m["error"]), `-32002`) {
		t.Fatalf("an unknown session: %s", m["error"])
	}
	e.send(`{"jsonrpc":"2.0","id":7,"method":"session/load","params":{"sessionId":"missing","cwd":"/w","mcpServers":[]}}`)
	if m := e.until(`"id":7`); !strings.Contains(string(m["error"]), `-32002`) {
		t.Fatalf("loading a session that is not there: %s", m["error"])
	}
	if err := e.finish(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// TestServePipelined: a client that sends session/new right after
// initialize, without waiting for its answer, has it served after the
// initialize, however long the agent takes to start; a request sent
// before any initialize is still refused, and so is a second initialize,
// the one later on the wire.
func TestServePipelined(t *testing.T) {
	release := make(chan struct{})
	slowStart := func(ctx context.Context, spec Spec, h Hooks) error {
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		return fakeRun(ctx, spec, h)
	}
	e := startServeRun(t, slowStart)
	e.send(`{"jsonrpc":"2.0","id":0,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`)
	if m := e.until(`"id":0`); !strings.Contains(string(m["error"]), "initialize first") {
		t.Fatalf("session/new before initialize: %s", m["error"])
	}
	e.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	e.send(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}}`)
	e.send(`{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`)
	// The second initialize is refused at once, while the first waits on
	// the agent's start.
	if m := e.until(`"id":2`); !strings.Contains(string(m["error"]), "already called") {
		t.Fatalf("a second initialize: %s", m)
	}
	close(release)
	got := map[string]map[string]json.RawMessage{}
	for len(got) < 2 {
		m := e.next()
		if id := string(m["id"]); id == "1" || id == "3" {
			got[id] = m
		}
	}
	if r := string(got["1"]["result"]); !strings.Contains(r, `"protocolVersion":1`) {
		t.Fatalf("initialize: %s", got["1"])
	}
	if r := string(got["3"]["result"]); !strings.Contains(r, `"sessionId":"fake-1"`) {
		t.Fatalf("session/new pipelined after initialize: %s", got["3"])
	}
	if err := e.finish(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
}
