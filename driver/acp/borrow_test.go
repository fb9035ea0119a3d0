package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/driver"
)

// floodUpdates is how many updates the fake agent's flood mode sends.
const floodUpdates = 3000

// floodText is the i-th text of the flood: lengths from none to past the
// reader's buffer and the decoder's aliasing bound, some with escapes and
// some not ASCII, each telling which one it is.
func floodText(i int) string {
	n := (i * 7919) % 3000
	switch {
	case i%97 == 5:
		n = 70 << 10
	case i%89 == 7:
		n = 40 << 10
	}
	head := fmt.Sprintf("#%d ", i)
	switch i % 13 {
	case 3:
		head += "\"quoted\"\n\ttab "
	case 8:
		head += "é ✓ "
	}
	body := strings.Repeat(string(rune('a'+i%26)), n)
	return head + body
}

// floodUpdate is the i-th update of the flood, as the agent sends it:
// chunks, tool calls and their updates, plans and an update kind tai does
// not know.
func floodUpdate(i int) string {
	text, _ := json.Marshal(floodText(i))
	switch i % 5 {
	case 1:
		return fmt.Sprintf(`{"sessionUpdate":"tool_call","toolCallId":"t%d","title":%s,"kind":"read","status":"pending","rawInput":{"n":%d,"t":%s}}`, i, text, i, text)
	case 2:
		return fmt.Sprintf(`{"sessionUpdate":"plan","entries":[{"content":%s,"priority":"high","status":"pending"}]}`, text)
	case 3:
		return fmt.Sprintf(`{"sessionUpdate":"future_update","v":%s}`, text)
	case 4: // the tool call of three updates ago is done
		return fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":"t%d","status":"completed","title":"done %d"}`, i-3, i-3)
	}
	return fmt.Sprintf(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":%s}}`, text)
}

// TestFloodKeepsEveryUpdate runs a flood whose lines the reader lends the
// session (it spares their copy) and checks every event once the turn is
// over, when the reader's buffers have long been reused: an event that
// kept a reference into a lent line shows another line's bytes.
func TestFloodKeepsEveryUpdate(t *testing.T) {
	rec := &recorder{allow: true}
	s := start(t, "flood", rec, time.Second)
	defer s.Close(context.Background())
	res, err := s.Prompt(context.Background(), []driver.Content{driver.TextContent("go")})
	if err != nil || res.StopReason != "end_turn" {
		t.Fatalf("prompt: %+v %v", res, err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var texts, titles, plans, raws []string
	var inputs []json.RawMessage
	var done []*driver.ToolCall
	for _, e := range rec.events {
		switch {
		case e.Type == driver.EventMessage:
			texts = append(texts, e.Message.Text)
		case e.Type == driver.EventToolCall && e.ToolCall.Status == "pending":
			titles = append(titles, e.ToolCall.ID+" "+e.ToolCall.Title)
			inputs = append(inputs, e.ToolCall.RawInput)
		case e.Type == driver.EventToolCall:
			done = append(done, e.ToolCall)
		case e.Type == driver.EventPlan:
			plans = append(plans, e.Plan.Entries[0].Content)
		case e.Type == driver.EventRaw && e.Raw.Kind == "future_update":
			raws = append(raws, string(e.Raw.Data))
		}
	}
	// The two chunks sent before session/new's answer were held, then
	// shown, each as it came.
	if len(texts) < 2 || texts[0] != "early 1" || texts[1] != "early 2" {
		t.Fatalf("the chunks held before the session's id: %.20q", texts[:min(2, len(texts))])
	}
	texts = texts[2:]
	var chunk, tool, plan, raw int
	for i := range floodUpdates {
		want := floodText(i)
		var got string
		switch i % 5 {
		case 1:
			if tool >= len(titles) {
				t.Fatalf("tool call %d missing", i)
			}
			got, want = titles[tool], fmt.Sprintf("t%d %s", i, want)
			var in struct {
				N int    `json:"n"`
				T string `json:"t"`
			}
			if err := json.Unmarshal(inputs[tool], &in); err != nil || in.N != i || in.T != floodText(i) {
				t.Fatalf("tool call %d: raw input %.80q (%v)", i, inputs[tool], err)
			}
			// Its update came later, as a call of its own: the call sent
			// first is as it was.
			if i+3 < floodUpdates {
				if tool >= len(done) {
					t.Fatalf("tool call %d's update missing", i)
				}
				d := done[tool]
				if d.ID != fmt.Sprintf("t%d", i) || d.Title != fmt.Sprintf("done %d", i) || d.Status != "completed" || !bytes.Equal(d.RawInput, inputs[tool]) {
					t.Fatalf("tool call %d's update: %+v", i, d)
				}
			}
			tool++
		case 2:
			if plan >= len(plans) {
				t.Fatalf("plan %d missing", i)
			}
			got = plans[plan]
			plan++
		case 3:
			if raw >= len(raws) {
				t.Fatalf("raw update %d missing", i)
			}
			var u struct{ V string }
			if err := json.Unmarshal([]byte(raws[raw]), &u); err != nil {
				t.Fatalf("raw update %d: %.80q: %v", i, raws[raw], err)
			}
			got = u.V
			raw++
		case 4:
			continue
		default:
			if chunk >= len(texts) {
				t.Fatalf("chunk %d missing", i)
			}
			got = texts[chunk]
			chunk++
		}
		if got != want {
			t.Fatalf("update %d: got %.60q (%d bytes), want %.60q (%d bytes)", i, got, len(got), want, len(want))
		}
	}
	if len(texts) != chunk || len(titles) != tool || len(plans) != plan || len(raws) != raw {
		t.Fatalf("%d chunks, %d tool calls, %d plans, %d raw updates: more than sent", len(texts), len(titles), len(plans), len(raws))
	}
}
