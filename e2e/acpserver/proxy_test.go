package acpserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProxyPassThrough: in front of an ACP agent, what tai does not know
// passes through unchanged both ways: an update kind newer than tai, the
// agent's extension request (answered by the editor) and the editor's
// extension request (sent on to the agent).
func TestProxyPassThrough(t *testing.T) {
	dir := t.TempDir()
	script := scriptFor(t, `steps:
  - extension: {update: {sessionUpdate: future_update, detail: {answer: 42, list: [1, "two"]}}}
  - extension: {method: _example/ping, params: {n: 7}}
  - text: "done"
`)
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	e := startRaw(t, dir, "--trace", trace, "--agent-cmd", taiBin+" agent builtin --script "+script)
	e.result(e.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}), nil)
	res := e.result(e.call("session/new", map[string]any{"cwd": dir, "mcpServers": []any{}}), nil)
	var ns struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(res["result"], &ns)

	var future json.RawMessage
	var pinged json.RawMessage
	var text strings.Builder
	id := e.call("session/prompt", map[string]any{"sessionId": ns.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "go"}}})
	res = e.result(id, func(m map[string]json.RawMessage) {
		switch str(m["method"]) {
		case "session/update":
			var p struct {
				Update json.RawMessage `json:"update"`
			}
			_ = json.Unmarshal(m["params"], &p)
			var u struct {
				Kind    string `json:"sessionUpdate"`
				Content struct {
					Text string `json:"text"`
				} `json:"content"`
			}
			_ = json.Unmarshal(p.Update, &u)
			switch u.Kind {
			case "future_update":
				future = p.Update
			case "agent_message_chunk":
				text.WriteString(u.Content.Text)
			}
		case "_example/ping":
			pinged = m["params"]
			e.send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "result": map[string]any{"pong": 8}})
		}
	})
	if !strings.Contains(string(res["result"]), `"stopReason":"end_turn"`) {
		t.Fatalf("the prompt: %s", res["result"])
	}
	if string(future) != `{"detail":{"answer":42,"list":[1,"two"]},"sessionUpdate":"future_update"}` {
		t.Errorf("the unknown update reached the editor as %s", future)
	}
	if !strings.Contains(string(pinged), `"n":7`) || !strings.Contains(string(pinged), ns.SessionID) {
		t.Errorf("the agent's extension request reached the editor with params %s", pinged)
	}
	if !strings.Contains(text.String(), `extension _example/ping answered: {"pong":8}`) {
		t.Errorf("the editor's answer did not reach the agent unchanged:\n%s", text.String())
	}

	// The editor's extension request goes on to the agent (which does not
	// know it either, and says so).
	res = e.result(e.call("_example/hello", map[string]any{"sessionId": ns.SessionID, "x": "y"}), nil)
	if !strings.Contains(string(res["error"]), "-32601") {
		t.Errorf("the editor's extension request: %s", res["error"])
	}
	e.finish()
	noneLeft(t, script)
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"method":"_example/hello"`) {
		t.Errorf("the agent never got the editor's _example/hello; its wire:\n%s", b)
	}
}
