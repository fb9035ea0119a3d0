package modelserver

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
)

// OpenAI Chat Completions: qwen-code, opencode (@ai-sdk/openai-compatible)
// and Copilot CLI in BYOK mode.

type chatBody struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Tools []struct {
		Type     string `json:"type"`
		Function *struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
		Custom *struct {
			Name string `json:"name"`
		} `json:"custom"`
	} `json:"tools"`
	Functions []struct { // the deprecated pre-tools form
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"functions"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

var chatProvider = provider{parse: parseChat, write: writeChat, fail: openAIError, limitHeaders: openAILimitHeaders, planFail: chatGPTPlanError}

func parseChat(_ *http.Request, body []byte) (*apiRequest, error) {
	var b chatBody
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, err
	}
	req := &apiRequest{model: b.Model, stream: b.Stream}
	req.includeUsage = b.StreamOptions != nil && b.StreamOptions.IncludeUsage
	for _, t := range b.Tools {
		switch {
		case t.Function != nil:
			req.tools = append(req.tools, offeredTool{name: t.Function.Name, schema: parseSchema(t.Function.Parameters)})
		case t.Custom != nil:
			req.tools = append(req.tools, offeredTool{name: t.Custom.Name, custom: true})
		}
	}
	for _, f := range b.Functions {
		req.tools = append(req.tools, offeredTool{name: f.Name, schema: parseSchema(f.Parameters)})
	}
	if rf := b.ResponseFormat; rf != nil && (rf.Type == "json_schema" || rf.Type == "json_object") {
		req.wantJSON = true
		if rf.JSONSchema != nil {
			req.schema = parseSchema(rf.JSONSchema.Schema)
		}
	}
	var choice struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(b.ToolChoice, &choice) == nil && choice.Type == "function" && req.tool(choice.Function.Name) != nil {
		req.forced = choice.Function.Name
	}
	return req, nil
}

func modelName(m string) string {
	if m == "" {
		return "fake-model"
	}
	return m
}

func chatUsage(u usage) *object {
	return obj(
		"prompt_tokens", u.input,
		"completion_tokens", u.output,
		"total_tokens", u.total(),
		"prompt_tokens_details", obj("cached_tokens", 0),
		"completion_tokens_details", obj("reasoning_tokens", u.reasoning),
	)
}

func chatFinish(rp *reply) string {
	if len(rp.calls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func writeChat(w http.ResponseWriter, _ *http.Request, out *sseWriter, req *apiRequest, rp *reply) error {
	id := fmt.Sprintf("chatcmpl-%d", rp.id)
	model := modelName(req.model)
	created := rp.created.Unix()
	if out == nil {
		var content any = rp.text
		if rp.text == "" && len(rp.calls) > 0 {
			content = nil
		}
		msg := obj("role", "assistant", "content", content)
		if rp.thinking != "" {
			msg.set("reasoning_content", rp.thinking)
		}
		if len(rp.calls) > 0 {
			var calls []any
			for _, c := range rp.calls {
				calls = append(calls, chatToolCall(c, -1, true))
			}
			msg.set("tool_calls", calls)
		}
		writeJSON(w, http.StatusOK, obj(
			"id", id, "object", "chat.completion", "created", created, "model", model,
			"choices", []any{obj("index", 0, "message", msg, "logprobs", nil, "finish_reason", chatFinish(rp))},
			"usage", chatUsage(rp.usage),
		))
		return nil
	}

	chunk := func(delta *object, finish any) *object {
		return obj("id", id, "object", "chat.completion.chunk", "created", created, "model", model,
			"choices", []any{obj("index", 0, "delta", delta, "logprobs", nil, "finish_reason", finish)})
	}
	events := []*object{chunk(obj("role", "assistant", "content", ""), nil)}
	for _, p := range chunks(rp.thinking) {
		events = append(events, chunk(obj("reasoning_content", p), nil))
	}
	for _, p := range chunks(rp.text) {
		events = append(events, chunk(obj("content", p), nil))
	}
	for i, c := range rp.calls {
		events = append(events, chunk(obj("tool_calls", []any{chatToolCall(c, i, c.custom)}), nil))
		if c.custom {
			continue
		}
		for _, p := range chunks(string(c.args)) {
			events = append(events, chunk(obj("tool_calls", []any{
				obj("index", i, "function", obj("arguments", p)),
			}), nil))
		}
	}
	events = append(events, chunk(newObject(), chatFinish(rp)))
	if req.includeUsage {
		events = append(events, obj("id", id, "object", "chat.completion.chunk", "created", created, "model", model,
			"choices", []any{}, "usage", chatUsage(rp.usage)))
	}
	for _, e := range events {
		if err := out.send("", e); err != nil {
			return err
		}
	}
	return out.sendRaw("", []byte("[DONE]"))
}

// chatToolCall renders a call. index < 0 omits the index (non-streaming);
// full=false leaves the arguments to later deltas.
func chatToolCall(c callOut, index int, full bool) *object {
	o := newObject()
	if index >= 0 {
		o.set("index", index)
	}
	o.set("id", c.id)
	if c.custom {
		o.set("type", "custom")
		o.set("custom", obj("name", c.name, "input", c.input))
		return o
	}
	args := ""
	if full {
		args = string(c.args)
	}
	o.set("type", "function")
	o.set("function", obj("name", c.name, "arguments", args))
	return o
}

// openAIError writes an OpenAI-shaped error; the Responses API shares it.
func openAIError(w http.ResponseWriter, status int, msg string, retryAfter time.Duration) {
	typ, code := "invalid_request_error", any(nil)
	switch {
	case status == http.StatusUnauthorized:
		typ, code = "authentication_error", "invalid_api_key"
	case status == http.StatusNotFound:
		code = "not_found"
	case status == http.StatusTooManyRequests:
		typ, code = "rate_limit_error", "rate_limit_exceeded"
	case status >= 500:
		typ, code = "server_error", "server_error"
	}
	setRetryAfter(w, status, retryAfter)
	writeJSON(w, status, obj("error", obj("message", msg, "type", typ, "param", nil, "code", code)))
}

// chatGPTPlanError is the 429 of a ChatGPT plan's usage window, as the
// ChatGPT backend answers codex signed in with ChatGPT: an error of type
// usage_limit_reached with the plan and when the window resets (Unix
// seconds), from which codex says "You've hit your usage limit ... try
// again at ...".
func chatGPTPlanError(w http.ResponseWriter, now time.Time, retryAfter time.Duration, window, msg string) {
	if msg == "" {
		msg = "The usage limit has been reached"
	}
	setRetryAfter(w, http.StatusTooManyRequests, retryAfter)
	at := now.Add(retryAfter)
	writeJSON(w, http.StatusTooManyRequests, obj("error", obj("type", "usage_limit_reached", "message", msg, "plan_type", "plus",
		"resets_at", at.Unix(), "resets_in_seconds", int64(math.Ceil(retryAfter.Seconds())), "window", window)))
}

// setRetryAfter tells SDKs how long to back off on throttling statuses. The
// OpenAI and Anthropic SDKs prefer retry-after-ms.
func setRetryAfter(w http.ResponseWriter, status int, d time.Duration) {
	if d <= 0 || (status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable && status != 529) {
		return
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(d.Seconds()))))
	w.Header().Set("Retry-After-Ms", strconv.FormatInt(d.Milliseconds(), 10))
}

// openAILimitHeaders are OpenAI's rate-limit headers on a 429: requests
// and tokens used up, resetting in retryAfter (its "1m30s" form).
func openAILimitHeaders(h http.Header, _ time.Time, retryAfter time.Duration, _ string) {
	reset := retryAfter.Round(time.Millisecond).String()
	for _, l := range []string{"requests", "tokens"} {
		h.Set("x-ratelimit-limit-"+l, "60")
		h.Set("x-ratelimit-remaining-"+l, "0")
		h.Set("x-ratelimit-reset-"+l, reset)
	}
}
