package acpserver

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestLoadResumeList: a session of the built-in agent kept by one `tai
// acp` is listed, loaded (its history replayed before the answer) and
// resumed by later ones, each a new run of the wrapped agent.
func TestLoadResumeList(t *testing.T) {
	dir := t.TempDir()
	init := map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}
	prompt := func(e *rawEditor, id, text string) string {
		var got strings.Builder
		res := e.result(e.call("session/prompt", map[string]any{"sessionId": id, "prompt": []any{map[string]any{"type": "text", "text": text}}}),
			func(m map[string]json.RawMessage) { got.Write(m["params"]) })
		if !strings.Contains(string(res["result"]), "end_turn") {
			t.Fatalf("prompt %q: %s %s", text, res["result"], res["error"])
		}
		return got.String()
	}

	e := startRaw(t, dir, "--agent", "builtin")
	e.result(e.call("initialize", init), nil)
	res := e.result(e.call("session/new", map[string]any{"cwd": dir, "mcpServers": []any{}}), nil)
	var ns struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(res["result"], &ns)
	if out := prompt(e, ns.SessionID, "/echo first words"); !strings.Contains(out, "first words") {
		t.Fatalf("the first turn: %s", out)
	}
	e.finish() // the editor goes away: the session is kept (session/close would free it)

	e = startRaw(t, dir, "--agent", "builtin")
	ir := e.result(e.call("initialize", init), nil)
	if !strings.Contains(string(ir["result"]), `"list":{}`) || !strings.Contains(string(ir["result"]), `"resume":{}`) {
		t.Fatalf("initialize does not offer list and resume: %s", ir["result"])
	}
	lr := e.result(e.call("session/list", map[string]any{"cwd": dir}), nil)
	if !strings.Contains(string(lr["result"]), ns.SessionID) {
		t.Fatalf("session/list lacks %s: %s %s", ns.SessionID, lr["result"], lr["error"])
	}
	var replay strings.Builder
	load := e.result(e.call("session/load", map[string]any{"sessionId": ns.SessionID, "cwd": dir, "mcpServers": []any{}}),
		func(m map[string]json.RawMessage) { replay.Write(m["params"]) })
	if load["error"] != nil {
		t.Fatalf("session/load: %s", load["error"])
	}
	if !strings.Contains(replay.String(), "first words") {
		t.Errorf("the history was not replayed before session/load answered:\n%s", replay.String())
	}
	if out := prompt(e, ns.SessionID, "/echo second words"); !strings.Contains(out, "second words") {
		t.Errorf("the turn after the load: %s", out)
	}
	miss := e.result(e.call("session/load", map[string]any{"sessionId": "builtin-0000000000000000", "cwd": dir, "mcpServers": []any{}}), nil)
	if !strings.Contains(string(miss["error"]), "-32002") {
		t.Errorf("loading a session that is not there: %s", miss["error"])
	}
	e.finish()

	e = startRaw(t, dir, "--agent", "builtin")
	e.result(e.call("initialize", init), nil)
	if r := e.result(e.call("session/resume", map[string]any{"sessionId": ns.SessionID, "cwd": dir, "mcpServers": []any{}}), nil); r["error"] != nil {
		t.Fatalf("session/resume: %s", r["error"])
	}
	if out := prompt(e, ns.SessionID, "/echo third words"); !strings.Contains(out, "third words") {
		t.Errorf("the turn after the resume: %s", out)
	}
	e.finish()
}
