package modelserver

import (
	"net/http"
	"strings"
	"testing"
)

func parseAnthropicMessage(t *testing.T, m map[string]any, r *result) {
	t.Helper()
	must(t, m["type"] == "message" && m["role"] == "assistant", "message %v", m)
	for _, b := range m["content"].([]any) {
		switch dig(b, "type") {
		case "thinking":
			must(t, str(dig(b, "signature")) != "", "thinking without signature")
			r.thinking += str(dig(b, "thinking"))
		case "text":
			r.text += str(dig(b, "text"))
		case "tool_use":
			r.calls = append(r.calls, gotCall{ID: str(dig(b, "id")), Name: str(dig(b, "name")),
				Args: string(mustMarshal(dig(b, "input")))})
		}
	}
	r.stop = anthropicStop(t, str(m["stop_reason"]))
	r.usageIn, r.usageOut = num(dig(m, "usage", "input_tokens")), num(dig(m, "usage", "output_tokens"))
}

func anthropicStop(t *testing.T, s string) string {
	switch s {
	case "end_turn":
		return "stop"
	case "tool_use":
		return "tool"
	}
	t.Fatalf("stop_reason %q", s)
	return ""
}

func parseAnthropicStream(t *testing.T, events []sseEvent, r *result) {
	t.Helper()
	must(t, events[0].Event == "message_start", "first event %s", events[0].Event)
	must(t, events[len(events)-1].Event == "message_stop", "last event %s", events[len(events)-1].Event)
	start := decodeMap(t, events[0].Data)
	must(t, dig(start, "message", "stop_reason") == nil, "stop_reason set in message_start")
	r.usageIn = num(dig(start, "message", "usage", "input_tokens"))

	type block struct {
		typ, id, name string
		buf           strings.Builder
		sig           string
		stopped       bool
	}
	var blocks []*block
	sawDelta := false
	for _, e := range events {
		m := decodeMap(t, e.Data)
		must(t, m["type"] == e.Event, "event %q carries type %v", e.Event, m["type"])
		idx := num(m["index"])
		switch e.Event {
		case "content_block_start":
			must(t, idx == len(blocks), "block %d started out of order", idx)
			cb := m["content_block"].(map[string]any)
			b := &block{typ: str(cb["type"]), id: str(cb["id"]), name: str(cb["name"])}
			if b.typ == "tool_use" {
				must(t, len(cb["input"].(map[string]any)) == 0, "tool_use starts with empty input")
			}
			blocks = append(blocks, b)
		case "content_block_delta":
			b := blocks[idx]
			must(t, !b.stopped, "delta after stop")
			d := m["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				must(t, b.typ == "text", "text_delta in %s", b.typ)
				b.buf.WriteString(str(d["text"]))
			case "thinking_delta":
				must(t, b.typ == "thinking", "thinking_delta in %s", b.typ)
				b.buf.WriteString(str(d["thinking"]))
			case "signature_delta":
				b.sig = str(d["signature"])
			case "input_json_delta":
				must(t, b.typ == "tool_use", "input_json_delta in %s", b.typ)
				b.buf.WriteString(str(d["partial_json"]))
			default:
				t.Fatalf("delta type %v", d["type"])
			}
		case "content_block_stop":
			blocks[idx].stopped = true
		case "message_delta":
			must(t, !sawDelta, "two message_delta events")
			sawDelta = true
			r.stop = anthropicStop(t, str(dig(m, "delta", "stop_reason")))
			r.usageOut = num(dig(m, "usage", "output_tokens"))
		case "message_start", "message_stop", "ping":
		default:
			t.Fatalf("unexpected event %s", e.Event)
		}
	}
	must(t, sawDelta, "no message_delta")
	for _, b := range blocks {
		must(t, b.stopped, "block %s never stopped", b.typ)
		switch b.typ {
		case "thinking":
			must(t, b.sig != "", "thinking block without signature_delta")
			r.thinking += b.buf.String()
		case "text":
			r.text += b.buf.String()
		case "tool_use":
			r.calls = append(r.calls, gotCall{ID: b.id, Name: b.name, Args: compactJSON(t, b.buf.String())})
		}
	}
}

func TestAnthropicSpecifics(t *testing.T) {
	f := newFixture(t, `{"turns":[{"text":"x"}]}`)

	t.Run("count_tokens", func(t *testing.T) {
		resp, data := f.do(t, http.MethodPost, "/v1/messages/count_tokens?beta=true", map[string]any{"model": "m", "messages": []any{}})
		must(t, resp.StatusCode == 200 && num(decodeMap(t, string(data))["input_tokens"]) > 0, "status %d body %s", resp.StatusCode, data)
	})

	t.Run("tool-forced structured output", func(t *testing.T) {
		r := f.call(t, apiAnthropic, true, reqOpts{tools: tools("emit"), extra: map[string]any{
			"tool_choice": map[string]any{"type": "tool", "name": "emit"}}})
		must(t, len(r.calls) == 1 && r.calls[0].Name == "emit" && r.calls[0].Args == `{"x":"ok"}`, "calls %+v", r.calls)
		must(t, f.srv.State().NextTurn == 0, "forced request consumed a turn")
	})

	t.Run("output_format json_schema", func(t *testing.T) {
		r := f.call(t, apiAnthropic, false, reqOpts{extra: map[string]any{"output_format": map[string]any{
			"type": "json_schema", "schema": map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "number", "minimum": 3}}}}}})
		must(t, r.text == `{"n":3}`, "text %q", r.text)
	})
}
