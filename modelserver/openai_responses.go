package modelserver

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// OpenAI Responses: codex. Codex is strict: response.completed must carry
// response.id and a full usage object, and apply_patch is a "custom"
// (freeform) tool whose call is a custom_tool_call with a string input.

type responsesBody struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Tools  []struct {
		Type       string          `json:"type"`
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"tools"`
	Text *struct {
		Format *struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	} `json:"text"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

var responsesProvider = provider{parse: parseResponses, write: writeResponses, fail: openAIError, limitHeaders: openAILimitHeaders, planFail: chatGPTPlanError}

func parseResponses(_ *http.Request, body []byte) (*apiRequest, error) {
	var b responsesBody
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, err
	}
	req := &apiRequest{model: b.Model, stream: b.Stream}
	for _, t := range b.Tools {
		switch t.Type {
		case "function":
			req.tools = append(req.tools, offeredTool{name: t.Name, schema: parseSchema(t.Parameters)})
		case "custom":
			req.tools = append(req.tools, offeredTool{name: t.Name, custom: true})
		default: // built-ins such as web_search or local_shell: offered, called as functions
			name := t.Name
			if name == "" {
				name = t.Type
			}
			req.tools = append(req.tools, offeredTool{name: name})
		}
	}
	if t := b.Text; t != nil && t.Format != nil && (t.Format.Type == "json_schema" || t.Format.Type == "json_object") {
		req.wantJSON = true
		req.schema = parseSchema(t.Format.Schema)
	}
	var choice struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(b.ToolChoice, &choice) == nil && choice.Type == "function" && req.tool(choice.Name) != nil {
		req.forced = choice.Name
	}
	return req, nil
}

func responsesUsage(u usage) *object {
	return obj(
		"input_tokens", u.input,
		"input_tokens_details", obj("cached_tokens", 0),
		"output_tokens", u.output,
		"output_tokens_details", obj("reasoning_tokens", u.reasoning),
		"total_tokens", u.total(),
	)
}

// responseItems builds the completed output items of a reply.
func responseItems(rp *reply) []*object {
	var items []*object
	if rp.thinking != "" {
		items = append(items, obj("id", fmt.Sprintf("rs_%d", rp.id), "type", "reasoning",
			"summary", []any{obj("type", "summary_text", "text", rp.thinking)}))
	}
	if rp.text != "" || len(rp.calls) == 0 {
		items = append(items, obj("id", fmt.Sprintf("msg_%d", rp.id), "type", "message", "status", "completed",
			"role", "assistant", "content", []any{outputText(rp.text)}))
	}
	for i, c := range rp.calls {
		if c.custom {
			items = append(items, obj("id", fmt.Sprintf("ctc_%d_%d", rp.id, i), "type", "custom_tool_call",
				"status", "completed", "call_id", c.id, "name", c.name, "input", c.input))
			continue
		}
		items = append(items, obj("id", fmt.Sprintf("fc_%d_%d", rp.id, i), "type", "function_call",
			"status", "completed", "arguments", string(c.args), "call_id", c.id, "name", c.name))
	}
	return items
}

func outputText(text string) *object {
	return obj("type", "output_text", "text", text, "annotations", []any{})
}

func writeResponses(w http.ResponseWriter, _ *http.Request, out *sseWriter, req *apiRequest, rp *reply) error {
	items := responseItems(rp)
	response := func(status string, output []*object, withUsage bool) *object {
		var u any
		if withUsage {
			u = responsesUsage(rp.usage)
		}
		if output == nil {
			output = []*object{}
		}
		return obj("id", fmt.Sprintf("resp_%d", rp.id), "object", "response", "created_at", rp.created.Unix(),
			"status", status, "error", nil, "incomplete_details", nil, "model", modelName(req.model),
			"output", output, "parallel_tool_calls", true, "tool_choice", "auto", "tools", []any{}, "usage", u)
	}
	if out == nil {
		writeJSON(w, http.StatusOK, response("completed", items, true))
		return nil
	}

	seq := 0
	emit := func(typ string, kv ...any) error {
		e := obj("type", typ, "sequence_number", seq)
		seq++
		for i := 0; i+1 < len(kv); i += 2 {
			e.set(kv[i].(string), kv[i+1])
		}
		return out.send(typ, e)
	}
	if err := emit("response.created", "response", response("in_progress", nil, false)); err != nil {
		return err
	}
	if err := emit("response.in_progress", "response", response("in_progress", nil, false)); err != nil {
		return err
	}
	for idx, item := range items {
		if err := streamItem(emit, idx, item); err != nil {
			return err
		}
	}
	return emit("response.completed", "response", response("completed", items, true))
}

// streamItem emits the added/delta/done events of one output item.
func streamItem(emit func(string, ...any) error, idx int, item *object) error {
	id := item.str("id")
	at := []any{"item_id", id, "output_index", idx}
	with := func(kv ...any) []any { return append(append([]any{}, at...), kv...) }

	var start *object
	var body func() error
	switch item.str("type") {
	case "reasoning":
		text := item.vals["summary"].([]any)[0].(*object).str("text")
		start = obj("id", id, "type", "reasoning", "summary", []any{})
		body = func() error {
			part := func(t string) *object { return obj("type", "summary_text", "text", t) }
			if err := emit("response.reasoning_summary_part.added", with("summary_index", 0, "part", part(""))...); err != nil {
				return err
			}
			for _, p := range chunks(text) {
				if err := emit("response.reasoning_summary_text.delta", with("summary_index", 0, "delta", p)...); err != nil {
					return err
				}
			}
			if err := emit("response.reasoning_summary_text.done", with("summary_index", 0, "text", text)...); err != nil {
				return err
			}
			return emit("response.reasoning_summary_part.done", with("summary_index", 0, "part", part(text))...)
		}
	case "message":
		text := item.vals["content"].([]any)[0].(*object).str("text")
		start = obj("id", id, "type", "message", "status", "in_progress", "role", "assistant", "content", []any{})
		body = func() error {
			if err := emit("response.content_part.added", with("content_index", 0, "part", outputText(""))...); err != nil {
				return err
			}
			for _, p := range chunks(text) {
				if err := emit("response.output_text.delta", with("content_index", 0, "delta", p, "logprobs", []any{})...); err != nil {
					return err
				}
			}
			if err := emit("response.output_text.done", with("content_index", 0, "text", text, "logprobs", []any{})...); err != nil {
				return err
			}
			return emit("response.content_part.done", with("content_index", 0, "part", outputText(text))...)
		}
	case "function_call":
		args := item.str("arguments")
		start = obj("id", id, "type", "function_call", "status", "in_progress", "arguments", "",
			"call_id", item.str("call_id"), "name", item.str("name"))
		body = func() error {
			for _, p := range chunks(args) {
				if err := emit("response.function_call_arguments.delta", with("delta", p)...); err != nil {
					return err
				}
			}
			return emit("response.function_call_arguments.done", with("name", item.str("name"), "arguments", args)...)
		}
	case "custom_tool_call":
		input := item.str("input")
		start = obj("id", id, "type", "custom_tool_call", "status", "in_progress",
			"call_id", item.str("call_id"), "name", item.str("name"), "input", "")
		body = func() error {
			for _, p := range chunks(input) {
				if err := emit("response.custom_tool_call_input.delta", with("delta", p)...); err != nil {
					return err
				}
			}
			return emit("response.custom_tool_call_input.done", with("input", input)...)
		}
	}
	if err := emit("response.output_item.added", "output_index", idx, "item", start); err != nil {
		return err
	}
	if err := body(); err != nil {
		return err
	}
	return emit("response.output_item.done", "output_index", idx, "item", item)
}
