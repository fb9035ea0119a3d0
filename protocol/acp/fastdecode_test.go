package acp

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"weak"
)

// DecodeSessionNotification, the one-pass decoder of the flood's updates,
// gives what json.Unmarshal gives, for every valid input.
func FuzzDecodeSessionNotification(f *testing.F) {
	for _, s := range []string{
		`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"},"messageId":"m1"}}`,
		`{"update":{"content":{"text":"a\nb\u00e9","type":"text"},"sessionUpdate":"agent_thought_chunk","messageId":null},"sessionId":"s"}`,
		`{"sessionId":"s","update":{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"x","annotations":{"priority":1}}}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"image","data":"AA==","mimeType":"image/png"}}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"1","title":"t"}}`,
		`{"SessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"\xff"}},"_meta":{"a":1}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","TEXT":"a","text":"b"}}}`,
		`{"sessionId":"s","sessionId":"t","update":{"sessionUpdate":"agent_message_chunk","sessionUpdate":"plan","entries":[]}}`,
		`{"sessionId":5,"update":{}}`, `{"sessionId":"s","update":null}`,
		`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"T","kind":"other","status":"in_progress","rawInput":{"a": [1]},"name":"n"}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","Title":"T","locations":[{"path":"/a"}]}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"completed","title":null}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","kind":"edit","rawOutput":null,"content":[]}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[{"content":"a","priority":"low","status":"pending"},{"content":"b"}]}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[null,{"content":1}],"_meta":{}}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[]}}`, `{"sessionId":"s","update":{"sessionUpdate":"plan"}}`,
		// Read in place: spaces everywhere, members in any order, duplicates.
		` { "sessionId" : "s" , "update" : { "content" : { "text" : "a" , "type" : "text" } , "sessionUpdate" : "agent_message_chunk" , "messageId" : null } } `,
		`{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[ {"content":"a"} , {"content":"b","priority":"high"} ]},"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"},"content":{"type":"text"}}}`,
		`{"update":{"sessionUpdate":"tool_call","toolCallId":"t","rawInput":{"a":"}\"]"},"title":"x","rawOutput":[1,{"b":null}]},"sessionId":"s"}`,
		`{"sessionId":"s","update":{"messageId":"m","content":{"type":"text","text":"é\u00e9"},"sessionUpdate":"agent_thought_chunk"},"sessionId":"t"}`,
	} {
		f.Add([]byte(s))
	}
	var d Decoder // shared by the inputs, as by a connection's updates
	reuse := Decoder{Reuse: true}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		var want, got, again SessionNotification
		werr := json.Unmarshal(data, &want)
		gerr := DecodeSessionNotification(data, &got)
		if derr := d.Decode(data, &again); (derr == nil) != (gerr == nil) {
			t.Fatalf("%q: a Decoder's err %v, DecodeSessionNotification's %v", data, derr, gerr)
		}
		if derr := d.Decode(data, &again); derr == nil { // the strings it keeps reused
			g, _ := Marshal(got)
			if a, _ := Marshal(again); !bytes.Equal(a, g) {
				t.Fatalf("%q: a Decoder's second decode %s, want %s", data, a, g)
			}
		}
		// A reusing decoder gives the same, twice over the same structs.
		for range 2 {
			var r SessionNotification
			if rerr := reuse.Decode(data, &r); (rerr == nil) != (gerr == nil) {
				t.Fatalf("%q: a reusing Decoder's err %v, DecodeSessionNotification's %v", data, rerr, gerr)
			} else if rerr == nil {
				g, _ := Marshal(got)
				if a, _ := Marshal(r); !bytes.Equal(a, g) {
					t.Fatalf("%q: a reusing Decoder's decode %s, want %s", data, a, g)
				}
			}
		}
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: json.Unmarshal err %v, DecodeSessionNotification err %v", data, werr, gerr)
		}
		if werr != nil {
			return
		}
		w, err1 := Marshal(want)
		g, err2 := Marshal(got)
		if (err1 == nil) != (err2 == nil) || !bytes.Equal(w, g) {
			t.Fatalf("%q:\n got %s (%v)\nwant %s (%v)", data, g, err2, w, err1)
		}
	})
}

// A long chunk's text is not copied: it is the line's own bytes.
func TestDecodeLongChunkInPlace(t *testing.T) {
	text := strings.Repeat("x", 2*aliasMin)
	data := []byte(`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"` + text + `"}}}`)
	var n SessionNotification
	if err := DecodeSessionNotification(data, &n); err != nil {
		t.Fatal(err)
	}
	got := n.Update.AgentMessageChunk.Content.Text.Text
	if got != text {
		t.Fatal("text differs")
	}
	if allocs := testing.AllocsPerRun(10, func() { _ = DecodeSessionNotification(data, &n) }); allocs > 4 {
		t.Fatalf("%v allocations for one chunk", allocs)
	}
}

// A Decoder decodes the updates a flood is made of with the fewest
// allocations: one for each update's struct (none with Reuse) and one for
// each string that is new (text, title, plan entry); the session id,
// enumerations and a recent tool call's id are not copied.
func TestDecoderFloodAllocations(t *testing.T) {
	for _, c := range []struct {
		line string
		max  float64
	}{
		{`{"sessionId":"sess-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"flood 0 "}}}`, 2},
		{`{"sessionId":"sess-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"flood 0 "},"messageId":"m1"}}`, 3},
		{`{"sessionId":"sess-1","update":{"sessionUpdate":"tool_call","toolCallId":"flood-1","title":"Flood flood-1","kind":"other","status":"in_progress"}}`, 2},
		{`{"sessionId":"sess-1","update":{"sessionUpdate":"tool_call_update","toolCallId":"flood-1","status":"completed"}}`, 1},
		{`{"sessionId":"sess-1","update":{"sessionUpdate":"plan","entries":[{"content":"Flood 4/100000","priority":"low","status":"in_progress"}]}}`, 2},
	} {
		for _, reuse := range []bool{false, true} {
			d := Decoder{Reuse: reuse}
			var n SessionNotification
			data := []byte(c.line)
			if err := d.Decode(data, &n); err != nil {
				t.Fatal(err)
			}
			max := c.max
			if reuse {
				max-- // the update's struct is the decoder's
			}
			if allocs := testing.AllocsPerRun(100, func() { _ = d.Decode(data, &n) }); allocs > max {
				t.Errorf("%s (reuse %v): %v allocations, want at most %v", c.line, reuse, allocs, max)
			}
		}
	}
}

// BenchmarkDecodeFlood decodes the four updates a flood is made of.
func BenchmarkDecodeFlood(b *testing.B) {
	lines := [][]byte{
		[]byte(`{"sessionId":"builtin-6516dcbe0e86b511","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"flood 4242 "}}}`),
		[]byte(`{"sessionId":"builtin-6516dcbe0e86b511","update":{"sessionUpdate":"tool_call","toolCallId":"flood-4243","title":"Flood flood-4243","kind":"other","status":"in_progress"}}`),
		[]byte(`{"sessionId":"builtin-6516dcbe0e86b511","update":{"sessionUpdate":"tool_call_update","toolCallId":"flood-4243","status":"completed"}}`),
		[]byte(`{"sessionId":"builtin-6516dcbe0e86b511","update":{"sessionUpdate":"plan","entries":[{"content":"Flood 4245/100000","priority":"low","status":"in_progress"}]}}`),
	}
	var d Decoder
	var n SessionNotification
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range lines {
			if err := d.Decode(l, &n); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// A reusing Decoder holds a long chunk's line through its own structs
// until Release, and not after.
func TestReleaseLetsALongLineGo(t *testing.T) {
	d := Decoder{Reuse: true}
	line := func() *byte {
		data := []byte(`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"` + strings.Repeat("x", 2*aliasMin) + `"}}}`)
		var n SessionNotification
		if err := d.Decode(data, &n); err != nil || len(n.Update.AgentMessageChunk.Content.Text.Text) != 2*aliasMin {
			t.Fatalf("decode: %v", err)
		}
		return &data[0]
	}
	held := weak.Make(line())
	runtime.GC()
	if held.Value() == nil {
		t.Fatal("the reusing decoder does not hold the line: this test checks nothing")
	}
	d.Release()
	runtime.GC()
	if held.Value() != nil {
		t.Fatal("the line is still held after Release")
	}
}
