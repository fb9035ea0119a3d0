package acp

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzSessionNotification checks that decoding arbitrary bytes never panics
// and that, once decoded, encode → decode → encode is a fixed point. The
// first encoding may differ from the input (unknown fields dropped, invalid
// list items skipped, whitespace compacted); after that nothing may drift,
// or a relaying client would mutate messages on every hop.
func FuzzSessionNotification(f *testing.F) {
	for _, u := range []string{
		`{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"hi"},"messageId":"m1"}`,
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"image","data":"AA==","mimeType":"image/png","annotations":{"audience":["user"],"priority":1}}}`,
		`{"sessionUpdate":"agent_thought_chunk","content":{"type":"resource","resource":{"uri":"u","blob":"AA=="}}}`,
		`{"sessionUpdate":"tool_call","toolCallId":"1","title":"t","kind":"edit","content":[{"type":"diff","path":"/a","oldText":null,"newText":"n"},{"type":"x"}],"locations":[{"path":"/a","line":1}],"rawInput":{ "a" : 1 }}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"1","content":[],"locations":null,"kind":null,"_meta":{"k":[1,2.5,"<x>"]}}`,
		`{"sessionUpdate":"plan","entries":[{"content":"a","priority":"high","status":"pending"},{"content":1}]}`,
		`{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"a","description":"b","input":{"hint":"h"}},null,{"name":2}]}`,
		`{"sessionUpdate":"current_mode_update","modeId":"x"}`,
		`{"sessionUpdate":"config_option_update","configOptions":[{"type":"select","id":"m","name":"M","currentValue":"a","options":[{"group":"g","name":"G","options":[{"value":"a","name":"A"}]},{"value":"b","name":"B"}]},{"type":"_x"}]}`,
		`{"sessionUpdate":"session_info_update","title":null,"updatedAt":"2026-01-01T00:00:00Z"}`,
		`{"sessionUpdate":"usage_update","used":1,"size":2,"cost":{"amount":0.1,"currency":"EUR"}}`,
		`{"sessionUpdate":"notice","severity":"_custom","title":"t"}`,
		`{"sessionUpdate":"compaction_update","compactionId":"c","status":"completed","summary":[{"type":"text","text":"s"}],"error":null}`,
		`{"sessionUpdate":"compaction_summary_chunk","compactionId":"c","content":{"type":"audio","data":"","mimeType":"a"}}`,
		`{"sessionUpdate":"plan_update","plan":{"type":"markdown"},  "x" : [ 1 ]}`,
		`{"sessionUpdate":7}`,
		`null`,
	} {
		f.Add([]byte(`{"sessionId":"s","update":` + u + `}`))
	}
	f.Add([]byte(`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"\xff\u2028<&>"}},"_meta":{"a":1e300}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","sessionUpdate":"tool_call","toolCallId":"x","title":"y"}}`))

	f.Fuzz(func(t *testing.T, data []byte) {
		var n SessionNotification
		if err := json.Unmarshal(data, &n); err != nil {
			return
		}
		first, err := Marshal(n)
		if err != nil {
			t.Fatalf("re-encoding a decoded notification failed: %v\ninput: %q", err, data)
		}
		var again SessionNotification
		if err := json.Unmarshal(first, &again); err != nil {
			t.Fatalf("decoding our own encoding failed: %v\nencoded: %s", err, first)
		}
		if again.Update.Kind() != n.Update.Kind() {
			t.Fatalf("kind drifted: %q → %q", n.Update.Kind(), again.Update.Kind())
		}
		second, err := Marshal(again)
		if err != nil {
			t.Fatalf("second encoding failed: %v", err)
		}
		if !bytes.Equal(first, second) {
			t.Fatalf("encoding not stable\nfirst:  %s\nsecond: %s", first, second)
		}
	})
}
