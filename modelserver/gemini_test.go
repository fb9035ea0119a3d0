package modelserver

import (
	"net/http"
	"testing"
)

func parseGeminiResponse(t *testing.T, m map[string]any, r *result) {
	t.Helper()
	addGeminiParts(t, m, r)
	must(t, dig(m, "candidates", 0, "finishReason") == "STOP", "finishReason %v", dig(m, "candidates", 0, "finishReason"))
	geminiUsage(t, m, r)
}

func addGeminiParts(t *testing.T, m map[string]any, r *result) {
	t.Helper()
	must(t, dig(m, "candidates", 0, "content", "role") == "model", "role %v", dig(m, "candidates", 0, "content", "role"))
	for _, p := range dig(m, "candidates", 0, "content", "parts").([]any) {
		switch {
		case dig(p, "functionCall") != nil:
			r.stop = "tool"
			fc := dig(p, "functionCall")
			r.calls = append(r.calls, gotCall{ID: str(dig(fc, "id")), Name: str(dig(fc, "name")),
				Args: string(mustMarshal(dig(fc, "args")))})
		case dig(p, "thought") == true:
			r.thinking += str(dig(p, "text"))
		default:
			r.text += str(dig(p, "text"))
		}
	}
	if r.stop == "" {
		r.stop = "stop"
	}
}

func geminiUsage(t *testing.T, m map[string]any, r *result) {
	t.Helper()
	u := m["usageMetadata"]
	r.usageIn, r.usageOut = num(dig(u, "promptTokenCount")), num(dig(u, "candidatesTokenCount"))+num(dig(u, "thoughtsTokenCount"))
	must(t, num(dig(u, "totalTokenCount")) == r.usageIn+r.usageOut, "usage %v", u)
}

func parseGeminiStream(t *testing.T, events []sseEvent, r *result) {
	t.Helper()
	for i, e := range events {
		must(t, e.Event == "", "gemini chunks carry no event name")
		m := decodeMap(t, e.Data)
		addGeminiParts(t, m, r)
		lastChunk := i == len(events)-1
		must(t, (dig(m, "candidates", 0, "finishReason") == "STOP") == lastChunk, "finishReason on chunk %d of %d", i, len(events))
		if lastChunk {
			geminiUsage(t, m, r)
		}
	}
}

func TestGeminiSpecifics(t *testing.T) {
	f := newFixture(t, `{"turns":[{"text":"x"}]}`)

	t.Run("responseSchema with upper-case types and propertyOrdering", func(t *testing.T) {
		schema := map[string]any{"type": "OBJECT", "properties": map[string]any{
			"reasoning":    map[string]any{"type": "STRING"},
			"next_speaker": map[string]any{"type": "STRING", "enum": []any{"user", "model"}},
		}, "required": []any{"reasoning", "next_speaker"}, "propertyOrdering": []any{"reasoning", "next_speaker"}}
		for _, key := range []string{"responseSchema", "responseJsonSchema"} {
			r := f.call(t, apiGemini, true, reqOpts{extra: map[string]any{"generationConfig": map[string]any{
				"responseMimeType": "application/json", key: schema}}})
			must(t, r.text == `{"reasoning":"ok","next_speaker":"user"}`, "%s: text %q", key, r.text)
		}
		must(t, f.srv.State().NextTurn == 0, "JSON side requests consumed a turn")
	})

	t.Run("countTokens", func(t *testing.T) {
		resp, data := f.do(t, http.MethodPost, "/v1beta/models/gemini-2.5-flash:countTokens", map[string]any{"contents": []any{}})
		must(t, resp.StatusCode == 200 && num(decodeMap(t, string(data))["totalTokens"]) > 0, "status %d body %s", resp.StatusCode, data)
	})

	t.Run("model list", func(t *testing.T) {
		resp, data := f.do(t, http.MethodGet, "/v1beta/models", nil)
		m := decodeMap(t, string(data))
		must(t, resp.StatusCode == 200 && dig(m, "models", 0, "name") == "models/fake-model", "body %s", data)
	})
}
