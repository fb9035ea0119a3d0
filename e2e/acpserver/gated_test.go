package acpserver

import (
	"encoding/json"
	"strings"
	"testing"
)

// tai advertises notices, compaction updates and boolean config options
// to the agents it drives; under tai acp, an editor that did not advertise
// them in its own initialize never gets them raw: a notice becomes a line
// of the agent's message, a compaction update and a boolean option are
// left out. An editor that advertised them gets them as the agent sent
// them.
func TestACPGatedUpdatesOnlyToEditorsThatAdvertised(t *testing.T) {
	script := scriptFor(t, `steps:
  - extension: {update: {sessionUpdate: notice, severity: warning, title: "Rate limited", description: "retrying"}}
  - extension: {update: {sessionUpdate: compaction_update, compactionId: c1, status: completed}}
  - extension: {update: {sessionUpdate: compaction_summary_chunk, compactionId: c1, content: {type: text, text: "summary"}}}
  - extension: {update: {sessionUpdate: config_option_update, configOptions: [{id: fast, name: Fast, type: boolean, currentValue: true}, {id: model, name: Model, type: select, currentValue: a, options: [{value: a, name: A}]}]}}
  - text: "end of turn"
`)
	for _, tc := range []struct {
		name      string
		caps      map[string]any
		want, not []string
	}{
		{"an editor that did not advertise them", map[string]any{},
			[]string{`"sessionUpdate":"agent_message_chunk"`, `[warning] Rate limited: retrying`, `"id":"model"`},
			[]string{`"sessionUpdate":"notice"`, `compaction`, `"type":"boolean"`}},
		{"an editor that advertised them", map[string]any{"session": map[string]any{"notices": map[string]any{}, "compaction": map[string]any{},
			"configOptions": map[string]any{"boolean": map[string]any{}}}},
			[]string{`"sessionUpdate":"notice"`, `"sessionUpdate":"compaction_update"`, `"sessionUpdate":"compaction_summary_chunk"`, `"type":"boolean"`, `"id":"model"`},
			[]string{`[warning] Rate limited`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			// The default sandbox and policy; the script's agent only talks.
			e := startRaw(t, dir, "--agent-cmd", taiBin+" agent builtin --script "+script)
			e.result(e.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": tc.caps}), nil)
			res := e.result(e.call("session/new", map[string]any{"cwd": dir, "mcpServers": []any{}}), nil)
			var ns struct {
				SessionID string `json:"sessionId"`
			}
			if err := json.Unmarshal(res["result"], &ns); err != nil || ns.SessionID == "" {
				t.Fatalf("session/new: %s %s", res["result"], res["error"])
			}
			var got strings.Builder
			pr := e.result(e.call("session/prompt", map[string]any{"sessionId": ns.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "go"}}}),
				func(m map[string]json.RawMessage) {
					if str(m["method"]) == "session/update" {
						got.Write(m["params"])
						got.WriteString("\n")
					}
				})
			if !strings.Contains(string(pr["result"]), "end_turn") {
				t.Fatalf("prompt: %s %s", pr["result"], pr["error"])
			}
			for _, w := range tc.want {
				if !strings.Contains(got.String(), w) {
					t.Errorf("the editor was not sent %s:\n%s", w, got.String())
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got.String(), n) {
					t.Errorf("the editor was sent %s:\n%s", n, got.String())
				}
			}
			e.finish()
		})
	}
}
