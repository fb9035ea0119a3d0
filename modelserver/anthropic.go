package modelserver

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Anthropic Messages: Claude Code (claude-agent-acp), and Copilot CLI with
// COPILOT_PROVIDER_TYPE=anthropic.

type anthropicBody struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Tools  []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	ToolChoice *struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tool_choice"`
	OutputFormat *anthropicFormat `json:"output_format"` // structured-outputs beta
	OutputConfig *struct {
		Format *anthropicFormat `json:"format"`
	} `json:"output_config"`
}

type anthropicFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema"`
}

var anthropicProvider = provider{parse: parseAnthropic, write: writeAnthropic, fail: anthropicError, limitHeaders: anthropicLimitHeaders}

func parseAnthropic(_ *http.Request, body []byte) (*apiRequest, error) {
	var b anthropicBody
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, err
	}
	req := &apiRequest{model: b.Model, stream: b.Stream}
	for _, t := range b.Tools {
		req.tools = append(req.tools, offeredTool{name: t.Name, schema: parseSchema(t.InputSchema)})
	}
	// Forcing one tool is how Claude clients ask for structured output.
	if tc := b.ToolChoice; tc != nil && tc.Type == "tool" && req.tool(tc.Name) != nil {
		req.forced = tc.Name
	}
	f := b.OutputFormat
	if b.OutputConfig != nil && b.OutputConfig.Format != nil {
		f = b.OutputConfig.Format
	}
	if f != nil && f.Type == "json_schema" {
		req.wantJSON, req.schema = true, parseSchema(f.Schema)
	}
	return req, nil
}

func anthropicUsage(u usage) *object {
	return obj("input_tokens", u.input, "cache_creation_input_tokens", 0, "cache_read_input_tokens", 0,
		"output_tokens", u.output)
}

// thinkingSignature is deterministic; clients echo it back but never verify it.
func thinkingSignature(thinking string) string {
	sum := sha256.Sum256([]byte("tai-modelserver:" + thinking))
	return base64.StdEncoding.EncodeToString(sum[:])
}

func writeAnthropic(w http.ResponseWriter, _ *http.Request, out *sseWriter, req *apiRequest, rp *reply) error {
	stop := "end_turn"
	if len(rp.calls) > 0 {
		stop = "tool_use"
	}
	var blocks []*object
	if rp.thinking != "" {
		blocks = append(blocks, obj("type", "thinking", "thinking", rp.thinking, "signature", thinkingSignature(rp.thinking)))
	}
	if rp.text != "" || len(rp.calls) == 0 {
		blocks = append(blocks, obj("type", "text", "text", rp.text))
	}
	for _, c := range rp.calls {
		blocks = append(blocks, obj("type", "tool_use", "id", c.id, "name", c.name, "input", callInput(c)))
	}
	msg := func(content []*object, stopReason any, u *object) *object {
		if content == nil {
			content = []*object{}
		}
		return obj("id", fmt.Sprintf("msg_%d", rp.id), "type", "message", "role", "assistant",
			"model", modelName(req.model), "content", content, "stop_reason", stopReason,
			"stop_sequence", nil, "usage", u)
	}
	w.Header().Set("request-id", fmt.Sprintf("req_%d", rp.id))
	if out == nil {
		writeJSON(w, http.StatusOK, msg(blocks, stop, anthropicUsage(rp.usage)))
		return nil
	}

	send := func(typ string, kv ...any) error {
		e := obj("type", typ)
		for i := 0; i+1 < len(kv); i += 2 {
			e.set(kv[i].(string), kv[i+1])
		}
		return out.send(typ, e)
	}
	startUsage := anthropicUsage(usage{input: rp.usage.input, output: 1})
	if err := send("message_start", "message", msg(nil, nil, startUsage)); err != nil {
		return err
	}
	if err := send("ping"); err != nil {
		return err
	}
	for i, b := range blocks {
		delta := func(d *object) error { return send("content_block_delta", "index", i, "delta", d) }
		var start *object
		var deltas []*object
		switch b.str("type") {
		case "thinking":
			start = obj("type", "thinking", "thinking", "", "signature", "")
			for _, p := range chunks(b.str("thinking")) {
				deltas = append(deltas, obj("type", "thinking_delta", "thinking", p))
			}
			deltas = append(deltas, obj("type", "signature_delta", "signature", b.str("signature")))
		case "text":
			start = obj("type", "text", "text", "")
			for _, p := range chunks(b.str("text")) {
				deltas = append(deltas, obj("type", "text_delta", "text", p))
			}
		case "tool_use":
			start = obj("type", "tool_use", "id", b.str("id"), "name", b.str("name"), "input", newObject())
			for _, p := range chunks(string(mustMarshal(b.vals["input"]))) {
				deltas = append(deltas, obj("type", "input_json_delta", "partial_json", p))
			}
		}
		if err := send("content_block_start", "index", i, "content_block", start); err != nil {
			return err
		}
		for _, d := range deltas {
			if err := delta(d); err != nil {
				return err
			}
		}
		if err := send("content_block_stop", "index", i); err != nil {
			return err
		}
	}
	if err := send("message_delta", "delta", obj("stop_reason", stop, "stop_sequence", nil),
		"usage", anthropicUsage(rp.usage)); err != nil {
		return err
	}
	return send("message_stop")
}

// callInput is a call's arguments as an object; Anthropic and Gemini have
// no freeform tools, so a custom input is wrapped.
func callInput(c callOut) any {
	if c.custom {
		return obj("input", c.input)
	}
	return json.RawMessage(c.args)
}

func anthropicError(w http.ResponseWriter, status int, msg string, retryAfter time.Duration) {
	typ := "api_error"
	switch status {
	case http.StatusBadRequest, http.StatusMethodNotAllowed:
		typ = "invalid_request_error"
	case http.StatusUnauthorized:
		typ = "authentication_error"
	case http.StatusForbidden:
		typ = "permission_error"
	case http.StatusNotFound:
		typ = "not_found_error"
	case http.StatusRequestEntityTooLarge:
		typ = "request_too_large"
	case http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case 529, http.StatusServiceUnavailable:
		typ = "overloaded_error"
	}
	setRetryAfter(w, status, retryAfter)
	writeJSON(w, status, obj("type", "error", "error", obj("type", typ, "message", msg), "request_id", nil))
}

// anthropicLimitHeaders are the Messages API's rate-limit headers on a
// 429: each limit used up, resetting (RFC 3339) when retry-after says.
// A subscription's usage window (window: five_hour, seven_day, ...) adds
// the unified limiter's headers a Claude plan's 429 carries, from which
// the claude CLI makes its rejected rate_limit_event (resetsAt) and its
// "You've hit your limit · resets ..." message.
func anthropicLimitHeaders(h http.Header, now time.Time, retryAfter time.Duration, window string) {
	at := now.Add(retryAfter)
	reset := at.UTC().Format(time.RFC3339)
	for _, l := range []string{"requests", "tokens", "input-tokens", "output-tokens"} {
		h.Set("anthropic-ratelimit-"+l+"-limit", "50")
		h.Set("anthropic-ratelimit-"+l+"-remaining", "0")
		h.Set("anthropic-ratelimit-"+l+"-reset", reset)
	}
	if window == "" {
		return
	}
	unix := strconv.FormatInt(at.Unix(), 10)
	h.Set("anthropic-ratelimit-unified-status", "rejected")
	h.Set("anthropic-ratelimit-unified-reset", unix)
	h.Set("anthropic-ratelimit-unified-representative-claim", window)
	if w, ok := unifiedWindows[window]; ok {
		h.Set("anthropic-ratelimit-unified-"+w+"-status", "rejected")
		h.Set("anthropic-ratelimit-unified-"+w+"-reset", unix)
		h.Set("anthropic-ratelimit-unified-"+w+"-utilization", "1.0")
	}
}

// unifiedWindows names each plan window's header infix.
var unifiedWindows = map[string]string{"five_hour": "5h", "seven_day": "7d"}
