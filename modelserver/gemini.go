package modelserver

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
)

// Gemini generateContent / streamGenerateContent: gemini-cli. The model is
// part of the path, and streaming is chosen by the method, not the body.

type geminiBody struct {
	Tools []struct {
		FunctionDeclarations []struct {
			Name                 string          `json:"name"`
			Parameters           json.RawMessage `json:"parameters"`
			ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig *struct {
		ResponseMimeType   string          `json:"responseMimeType"`
		ResponseSchema     json.RawMessage `json:"responseSchema"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
	} `json:"generationConfig"`
}

func geminiProvider(model string, stream bool) provider {
	return provider{
		parse: func(_ *http.Request, body []byte) (*apiRequest, error) { return parseGemini(model, stream, body) },
		write: writeGemini,
		fail:  geminiError,
	}
}

func parseGemini(model string, stream bool, body []byte) (*apiRequest, error) {
	var b geminiBody
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, err
	}
	req := &apiRequest{model: model, stream: stream}
	for _, t := range b.Tools {
		for _, f := range t.FunctionDeclarations {
			schema := f.ParametersJSONSchema
			if len(schema) == 0 {
				schema = f.Parameters
			}
			req.tools = append(req.tools, offeredTool{name: f.Name, schema: parseSchema(schema)})
		}
	}
	if gc := b.GenerationConfig; gc != nil && gc.ResponseMimeType == "application/json" {
		req.wantJSON = true
		schema := gc.ResponseJSONSchema
		if len(schema) == 0 {
			schema = gc.ResponseSchema
		}
		req.schema = parseSchema(schema)
	}
	return req, nil
}

func writeGemini(w http.ResponseWriter, _ *http.Request, out *sseWriter, req *apiRequest, rp *reply) error {
	var callParts []any
	for _, c := range rp.calls {
		callParts = append(callParts, obj("functionCall", obj("id", c.id, "name", c.name, "args", callInput(c))))
	}
	thoughts := min(rp.usage.reasoning, rp.usage.output-1)
	meta := obj("promptTokenCount", rp.usage.input, "candidatesTokenCount", rp.usage.output-thoughts,
		"totalTokenCount", rp.usage.total())
	if thoughts > 0 {
		meta.set("thoughtsTokenCount", thoughts)
	}
	response := func(parts []any, last bool) *object {
		cand := obj("content", obj("role", "model", "parts", parts))
		if last {
			cand.set("finishReason", "STOP")
		}
		cand.set("index", 0)
		r := obj("candidates", []any{cand})
		if last {
			r.set("usageMetadata", meta)
		}
		r.set("modelVersion", modelName(req.model))
		r.set("responseId", fmt.Sprintf("resp_%d", rp.id))
		return r
	}
	if out == nil {
		var parts []any
		if rp.thinking != "" {
			parts = append(parts, obj("text", rp.thinking, "thought", true))
		}
		if rp.text != "" || len(rp.calls) == 0 {
			parts = append(parts, obj("text", rp.text))
		}
		writeJSON(w, http.StatusOK, response(append(parts, callParts...), true))
		return nil
	}

	// One event per thought or text chunk, then one with every call; the
	// last event carries finishReason, which gemini-cli requires.
	var events [][]any
	for _, p := range chunks(rp.thinking) {
		events = append(events, []any{obj("text", p, "thought", true)})
	}
	for _, p := range chunks(rp.text) {
		events = append(events, []any{obj("text", p)})
	}
	if len(callParts) > 0 {
		events = append(events, callParts)
	}
	if len(events) == 0 {
		events = append(events, []any{obj("text", "")})
	}
	for i, parts := range events {
		if err := out.send("", response(parts, i == len(events)-1)); err != nil {
			return err
		}
	}
	return nil
}

func geminiError(w http.ResponseWriter, status int, msg string, retryAfter time.Duration) {
	code := "UNKNOWN"
	switch status {
	case http.StatusBadRequest:
		code = "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		code = "UNAUTHENTICATED"
	case http.StatusForbidden:
		code = "PERMISSION_DENIED"
	case http.StatusNotFound:
		code = "NOT_FOUND"
	case http.StatusMethodNotAllowed:
		code = "UNIMPLEMENTED"
	case http.StatusTooManyRequests:
		code = "RESOURCE_EXHAUSTED"
	case http.StatusInternalServerError:
		code = "INTERNAL"
	case http.StatusServiceUnavailable, 529:
		code = "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		code = "DEADLINE_EXCEEDED"
	}
	setRetryAfter(w, status, retryAfter)
	if status == http.StatusTooManyRequests && retryAfter > 0 {
		// As the Gemini API says when to retry: a google.rpc.RetryInfo.
		retry := obj("@type", "type.googleapis.com/google.rpc.RetryInfo", "retryDelay", strconv.Itoa(int(math.Ceil(retryAfter.Seconds())))+"s")
		writeJSON(w, status, obj("error", obj("code", status, "message", msg, "status", code, "details", []any{retry})))
		return
	}
	writeJSON(w, status, obj("error", obj("code", status, "message", msg, "status", code)))
}
