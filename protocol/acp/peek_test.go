package acp

import (
	"encoding/json"
	"testing"
)

func FuzzPeekTag(f *testing.F) {
	for _, s := range []string{
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}`,
		`{"content":{"sessionUpdate":"nested"},"sessionUpdate":"plan"}`,
		`{"sessionUpdate":5}`, `{"a":[1,{"b":"}"}],"sessionUpdate":"x\"y"}`,
		`{"session\u0055pdate":"escaped"}`, `{"sessionUpdate":"a","sessionUpdate":"b"}`,
		`{}`, `null`, `[]`, `{"x":true,"y":null,"sessionUpdate":"t"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return // callers only ever pass validated JSON
		}
		tag, present, err := peekTagFast(data, "sessionUpdate")
		wtag, wpresent, _, werr := peekTag(data, "sessionUpdate")
		if (err == nil) != (werr == nil) || tag != wtag || present != wpresent {
			t.Fatalf("%s: fast (%q,%v,%v) slow (%q,%v,%v)", data, tag, present, err, wtag, wpresent, werr)
		}
	})
}

func BenchmarkPeekTag(b *testing.B) {
	data := []byte(`{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Write a.txt","kind":"edit","status":"pending","locations":[{"path":"/ws/a.txt"}],"rawInput":{"path":"/ws/a.txt","content":"hello"}}`)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_, _, _ = peekTagFast(data, "sessionUpdate")
		}
	})
	b.Run("map", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_, _, _, _ = peekTag(data, "sessionUpdate")
		}
	})
}
