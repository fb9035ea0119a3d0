package modelserver

import (
	"strings"
	"testing"
)

func parseResponsesObject(t *testing.T, m map[string]any, r *result) {
	t.Helper()
	must(t, m["object"] == "response" && m["status"] == "completed", "object %v status %v", m["object"], m["status"])
	must(t, strings.HasPrefix(str(m["id"]), "resp_"), "id %v", m["id"])
	checkResponsesUsage(t, m["usage"], r)
	r.stop = "stop"
	for _, it := range m["output"].([]any) {
		switch dig(it, "type") {
		case "reasoning":
			r.thinking += str(dig(it, "summary", 0, "text"))
		case "message":
			must(t, dig(it, "role") == "assistant", "role %v", dig(it, "role"))
			must(t, dig(it, "content", 0, "type") == "output_text", "content %v", dig(it, "content"))
			r.text += str(dig(it, "content", 0, "text"))
		case "function_call":
			r.stop = "tool"
			r.calls = append(r.calls, gotCall{ID: str(dig(it, "call_id")), Name: str(dig(it, "name")),
				Args: compactJSON(t, str(dig(it, "arguments")))})
		case "custom_tool_call":
			r.stop = "tool"
			r.calls = append(r.calls, gotCall{ID: str(dig(it, "call_id")), Name: str(dig(it, "name")),
				Input: str(dig(it, "input")), Custom: true})
		default:
			t.Fatalf("unexpected output item %v", it)
		}
	}
}

// checkResponsesUsage enforces the usage fields codex reads.
func checkResponsesUsage(t *testing.T, u any, r *result) {
	t.Helper()
	for _, k := range []string{"input_tokens", "output_tokens", "total_tokens"} {
		must(t, num(dig(u, k)) > 0, "usage.%s missing or zero in %v", k, u)
	}
	_, cached := dig(u, "input_tokens_details").(map[string]any)["cached_tokens"]
	_, reasoning := dig(u, "output_tokens_details").(map[string]any)["reasoning_tokens"]
	must(t, cached && reasoning, "usage details missing: %v", u)
	must(t, num(dig(u, "total_tokens")) == num(dig(u, "input_tokens"))+num(dig(u, "output_tokens")), "total != in+out")
	r.usageIn, r.usageOut = num(dig(u, "input_tokens")), num(dig(u, "output_tokens"))
}

func parseResponsesStream(t *testing.T, events []sseEvent, r *result) {
	t.Helper()
	must(t, events[0].Event == "response.created", "first event %s", events[0].Event)
	last := events[len(events)-1]
	must(t, last.Event == "response.completed", "last event %s", last.Event)
	deltas := map[string]*strings.Builder{}
	open := map[string]string{} // item id -> type, between added and done
	var done []any
	for i, e := range events {
		m := decodeMap(t, e.Data)
		must(t, m["type"] == e.Event, "event %q carries type %v", e.Event, m["type"])
		must(t, num(m["sequence_number"]) == i, "sequence_number %v at %d", m["sequence_number"], i)
		id := str(m["item_id"])
		switch e.Event {
		case "response.output_item.added":
			item := m["item"].(map[string]any)
			open[str(item["id"])] = str(item["type"])
			deltas[str(item["id"])] = &strings.Builder{}
		case "response.output_text.delta", "response.function_call_arguments.delta",
			"response.custom_tool_call_input.delta", "response.reasoning_summary_text.delta":
			must(t, open[id] != "", "%s for an item that is not open", e.Event)
			deltas[id].WriteString(str(m["delta"]))
		case "response.output_text.done", "response.reasoning_summary_text.done":
			must(t, str(m["text"]) == deltas[id].String(), "%s text %q != deltas %q", e.Event, m["text"], deltas[id].String())
		case "response.function_call_arguments.done":
			must(t, str(m["arguments"]) == deltas[id].String(), "arguments %q != deltas %q", m["arguments"], deltas[id].String())
		case "response.custom_tool_call_input.done":
			must(t, str(m["input"]) == deltas[id].String(), "input %q != deltas %q", m["input"], deltas[id].String())
		case "response.content_part.added", "response.content_part.done",
			"response.reasoning_summary_part.added", "response.reasoning_summary_part.done":
			must(t, open[id] != "", "%s outside its item", e.Event)
		case "response.output_item.done":
			item := m["item"].(map[string]any)
			must(t, open[str(item["id"])] == str(item["type"]), "done for an item that was not added: %v", item)
			delete(open, str(item["id"]))
			done = append(done, item)
		case "response.created", "response.in_progress":
			must(t, dig(m, "response", "status") == "in_progress", "status %v", dig(m, "response", "status"))
		case "response.completed":
		default:
			t.Fatalf("unexpected event %s", e.Event)
		}
	}
	must(t, len(open) == 0, "items never done: %v", open)
	resp := decodeMap(t, last.Data)["response"].(map[string]any)
	must(t, len(resp["output"].([]any)) == len(done), "completed output has %d items, stream had %d", len(resp["output"].([]any)), len(done))
	parseResponsesObject(t, resp, r)
}

func TestResponsesCustomToolCall(t *testing.T) {
	const patch = "*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch\n"
	script := `{"turns":[
	  {"text":"patching","tool":{"write_file":{"file_path":"{{CWD}}/a.txt","content":"x"},"apply_patch":` + string(mustMarshal(patch)) + `}},
	  {"tool":"apply_patch","args":{"input":"*** Begin Patch\n*** End Patch\n"}},
	  {"tool":"apply_patch","args":"raw patch for {{CWD}}"}
	]}`
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "sse"}[stream], func(t *testing.T) {
			f := newFixture(t, script)
			offered := reqOpts{tools: []testTool{{name: "exec_command"}, {name: "apply_patch", custom: true}}}
			r := f.call(t, apiResponses, stream, offered)
			must(t, r.text == "patching", "text %q", r.text)
			must(t, len(r.calls) == 1, "calls %+v", r.calls)
			c := r.calls[0]
			must(t, c.Custom && c.Name == "apply_patch" && c.Input == patch && c.ID == "call_1", "call %+v", c)
			must(t, r.stop == "tool", "stop %q", r.stop)

			// An {"input": ...} object unwraps to the freeform input.
			r = f.call(t, apiResponses, stream, offered)
			must(t, r.calls[0].Input == "*** Begin Patch\n*** End Patch\n", "call %+v", r.calls[0])

			// A function-style apply_patch gets the string as its sole parameter.
			r = f.call(t, apiResponses, stream, reqOpts{tools: tools("apply_patch")})
			must(t, !r.calls[0].Custom && r.calls[0].Args == `{"x":"raw patch for /repo"}`, "call %+v", r.calls[0])
		})
	}
}

func TestResponsesStructuredOutput(t *testing.T) {
	f := newFixture(t, `{"turns":[{"text":"x"}]}`)
	r := f.call(t, apiResponses, true, reqOpts{extra: map[string]any{"text": map[string]any{"format": map[string]any{
		"type": "json_schema", "name": "out", "schema": map[string]any{"type": "object",
			"properties": map[string]any{"answer": map[string]any{"type": "string"}}}}}}})
	must(t, r.text == `{"answer":"ok"}`, "text %q", r.text)
}
