package modelserver

import (
	"net/http"
	"strings"
	"testing"
)

func parseChatMessage(t *testing.T, m map[string]any, r *result) {
	t.Helper()
	must(t, m["object"] == "chat.completion", "object = %v", m["object"])
	msg := dig(m, "choices", 0, "message")
	r.text = str(dig(msg, "content"))
	r.thinking = str(dig(msg, "reasoning_content"))
	tcs, _ := dig(msg, "tool_calls").([]any)
	for _, c := range tcs {
		must(t, dig(c, "type") == "function", "tool call type %v", dig(c, "type"))
		r.calls = append(r.calls, gotCall{ID: str(dig(c, "id")), Name: str(dig(c, "function", "name")),
			Args: compactJSON(t, str(dig(c, "function", "arguments")))})
	}
	r.stop = chatStop(str(dig(m, "choices", 0, "finish_reason")))
	r.usageIn, r.usageOut = num(dig(m, "usage", "prompt_tokens")), num(dig(m, "usage", "completion_tokens"))
}

func chatStop(s string) string {
	if s == "tool_calls" {
		return "tool"
	}
	return s
}

func parseChatStream(t *testing.T, events []sseEvent, r *result) {
	t.Helper()
	must(t, len(events) >= 3, "too few events: %s", eventTypes(events))
	must(t, events[len(events)-1].Data == "[DONE]", "last event %q, want [DONE]", events[len(events)-1].Data)
	finished := false
	args := map[int]*strings.Builder{}
	for i, e := range events[:len(events)-1] {
		must(t, e.Event == "", "chat chunks carry no event name, got %q", e.Event)
		m := decodeMap(t, e.Data)
		must(t, m["object"] == "chat.completion.chunk", "object = %v", m["object"])
		must(t, m["id"] == events0ID(t, events), "chunk ids differ")
		choices := m["choices"].([]any)
		if len(choices) == 0 { // the usage chunk comes after the finish
			must(t, finished, "usage chunk before finish_reason")
			r.usageIn, r.usageOut = num(dig(m, "usage", "prompt_tokens")), num(dig(m, "usage", "completion_tokens"))
			continue
		}
		must(t, !finished, "chunk %d after finish_reason", i)
		if i == 0 {
			must(t, dig(choices, 0, "delta", "role") == "assistant", "first chunk lacks the role")
		}
		d := dig(choices, 0, "delta")
		r.text += str(dig(d, "content"))
		r.thinking += str(dig(d, "reasoning_content"))
		if tcs, ok := dig(d, "tool_calls").([]any); ok {
			for _, tc := range tcs {
				idx := num(dig(tc, "index"))
				if id := str(dig(tc, "id")); id != "" {
					must(t, idx == len(r.calls), "new call index %d, want %d", idx, len(r.calls))
					must(t, dig(tc, "type") == "function", "first delta of a call needs type")
					r.calls = append(r.calls, gotCall{ID: id, Name: str(dig(tc, "function", "name"))})
					args[idx] = &strings.Builder{}
				}
				must(t, args[idx] != nil, "arguments before the call's first delta")
				args[idx].WriteString(str(dig(tc, "function", "arguments")))
			}
		}
		if fr, ok := dig(choices, 0, "finish_reason").(string); ok {
			r.stop, finished = chatStop(fr), true
		}
	}
	must(t, finished, "no finish_reason")
	for i := range r.calls {
		r.calls[i].Args = compactJSON(t, args[i].String())
	}
}

func events0ID(t *testing.T, events []sseEvent) any {
	return decodeMap(t, events[0].Data)["id"]
}

func TestChatSpecifics(t *testing.T) {
	f := newFixture(t, `{"turns":[{"text":"hi"}]}`)

	t.Run("path without /v1 and no usage unless asked", func(t *testing.T) {
		resp, data := f.do(t, http.MethodPost, "/chat/completions",
			map[string]any{"model": "m", "stream": true, "messages": []any{}})
		must(t, resp.StatusCode == 200, "status %d", resp.StatusCode)
		for _, e := range readSSE(t, data) {
			must(t, !strings.Contains(e.Data, `"usage"`), "unrequested usage chunk: %s", e.Data)
		}
	})

	t.Run("response_format json_schema is synthesised", func(t *testing.T) {
		schema := map[string]any{"type": "object", "properties": map[string]any{
			"title": map[string]any{"type": "string"},
			"kind":  map[string]any{"type": "string", "enum": []any{"bug", "feature"}},
			"count": map[string]any{"type": "integer"},
			"ok":    map[string]any{"type": "boolean"},
			"tags":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		}, "required": []any{"title", "kind"}}
		r := f.call(t, apiChat, false, reqOpts{extra: map[string]any{"response_format": map[string]any{
			"type": "json_schema", "json_schema": map[string]any{"name": "x", "schema": schema}}}})
		must(t, r.status == 200, "status %d", r.status)
		// map key order in the request is Go's (sorted), and the answer follows it.
		want := `{"count":0,"kind":"bug","ok":false,"tags":["ok"],"title":"ok"}`
		must(t, r.text == want, "text %s, want %s", r.text, want)
	})

	t.Run("json_object without schema", func(t *testing.T) {
		r := f.call(t, apiChat, true, reqOpts{extra: map[string]any{"response_format": map[string]any{"type": "json_object"}}})
		must(t, r.text == "{}", "text %q", r.text)
	})

	t.Run("forced tool_choice synthesises arguments without consuming", func(t *testing.T) {
		r := f.call(t, apiChat, false, reqOpts{tools: tools("classify"), extra: map[string]any{
			"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "classify"}}}})
		must(t, len(r.calls) == 1 && r.calls[0].Name == "classify" && r.calls[0].Args == `{"x":"ok"}`, "calls %+v", r.calls)
		must(t, f.srv.State().NextTurn == 0, "forced tool request consumed a turn")
	})

	t.Run("invalid body is a 400 in OpenAI shape", func(t *testing.T) {
		resp, data := f.do(t, http.MethodPost, "/v1/chat/completions", "{nope")
		must(t, resp.StatusCode == 400, "status %d", resp.StatusCode)
		m := decodeMap(t, string(data))
		must(t, dig(m, "error", "type") == "invalid_request_error", "body %s", data)
	})
}
