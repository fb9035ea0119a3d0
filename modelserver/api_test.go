package modelserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

const longText = "Hello from the scripted model, with a sentence long enough to be split into several chunks. Ünïcödé too."

// TestAPIs runs every scenario through every API, streaming and not, and
// compares the reassembled answer with the script.
func TestAPIs(t *testing.T) {
	scenarios := []struct {
		name     string
		script   string
		offered  []testTool
		text     string
		thinking string
		calls    []gotCall
	}{
		{
			name:    "text",
			script:  `{"turns":[{"text":` + string(mustMarshal(longText)) + `}]}`,
			offered: tools("read_file"),
			text:    longText,
		},
		{
			name:     "thinking",
			script:   `{"turns":[{"thinking":"Let me think about this step by step, carefully.","text":"42"}]}`,
			offered:  tools("read_file"),
			text:     "42",
			thinking: "Let me think about this step by step, carefully.",
		},
		{
			name:    "single tool call with preamble",
			script:  `{"turns":[{"text":"Writing it.","tool":"write_file","args":{"file_path":"{{CWD}}/a.txt","content":"x\n"}}]}`,
			offered: tools("read_file", "write_file"),
			text:    "Writing it.",
			calls:   []gotCall{{ID: "call_1", Name: "write_file", Args: `{"file_path":"/repo/a.txt","content":"x\n"}`}},
		},
		{
			name:    "parallel tool calls",
			script:  `{"turns":[{"tools":[{"tool":"read_file","args":{"file_path":"{{CWD}}/notes.txt"}},{"tool":"glob","args":{"pattern":"**/*.go"}}]}]}`,
			offered: tools("glob", "read_file"),
			calls: []gotCall{
				{ID: "call_1", Name: "read_file", Args: `{"file_path":"/repo/notes.txt"}`},
				{ID: "call_2", Name: "glob", Args: `{"pattern":"**/*.go"}`},
			},
		},
		{
			name:    "family selection follows script order, not request order",
			script:  `{"turns":[{"tool":{"write_file":{"file_path":"a"},"write":{"filePath":"a"},"Write":{"file_path":"A"},"create":{"path":"a"}}}]}`,
			offered: tools("Write", "write", "bash"),
			calls:   []gotCall{{ID: "call_1", Name: "write", Args: `{"filePath":"a"}`}},
		},
		{
			name:    "unoffered tool map falls back to the first key",
			script:  `{"turns":[{"tool":{"view":{"path":"x"},"Read":{"file_path":"x"}}}]}`,
			offered: tools("other"),
			calls:   []gotCall{{ID: "call_1", Name: "view", Args: `{"path":"x"}`}},
		},
		{
			name:    "tool without args",
			script:  `{"turns":[{"tool":"list"}]}`,
			offered: tools("list"),
			calls:   []gotCall{{ID: "call_1", Name: "list", Args: `{}`}},
		},
		{
			name:    "json turn keeps key order",
			script:  `{"turns":[{"json":{"zeta":1,"alpha":[true,null],"path":"{{CWD}}"}}]}`,
			offered: tools("read_file"),
			text:    `{"zeta":1,"alpha":[true,null],"path":"/repo"}`,
		},
	}
	for _, sc := range scenarios {
		for _, api := range allAPIs {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/stream=%v", sc.name, api, stream), func(t *testing.T) {
					f := newFixture(t, sc.script)
					r := f.call(t, api, stream, reqOpts{tools: sc.offered})
					must(t, r.status == 200, "status %d: %s", r.status, r.body)
					must(t, r.text == sc.text, "text %q, want %q", r.text, sc.text)
					must(t, r.thinking == sc.thinking, "thinking %q, want %q", r.thinking, sc.thinking)
					if len(r.calls) != 0 || len(sc.calls) != 0 {
						// Anthropic and Gemini args are decoded by the test client, so compare canonically.
						must(t, reflect.DeepEqual(canonCalls(t, r.calls), canonCalls(t, sc.calls)), "calls %+v\nwant  %+v", r.calls, sc.calls)
					}
					wantStop := "stop"
					if len(sc.calls) > 0 {
						wantStop = "tool"
					}
					must(t, r.stop == wantStop, "stop %q, want %q", r.stop, wantStop)
					must(t, r.usageIn > 0 && r.usageOut > 0, "usage in=%d out=%d", r.usageIn, r.usageOut)
					st := f.srv.State()
					must(t, st.NextTurn == 1 && st.Exhausted, "state %+v", st)
				})
			}
		}
	}
}

func TestAPIErrors(t *testing.T) {
	cases := []struct {
		status int
		msg    string
		want   map[string][2]string // api -> (error type/status, message)
	}{
		{429, "", map[string][2]string{
			apiChat: {"rate_limit_error", "Rate limit exceeded (scripted)."}, apiResponses: {"rate_limit_error", "Rate limit exceeded (scripted)."},
			apiAnthropic: {"rate_limit_error", "Rate limit exceeded (scripted)."}, apiGemini: {"RESOURCE_EXHAUSTED", "Rate limit exceeded (scripted)."}}},
		{500, "boom", map[string][2]string{
			apiChat: {"server_error", "boom"}, apiResponses: {"server_error", "boom"},
			apiAnthropic: {"api_error", "boom"}, apiGemini: {"INTERNAL", "boom"}}},
		{529, "", map[string][2]string{
			apiChat: {"server_error", "Overloaded (scripted)."}, apiResponses: {"server_error", "Overloaded (scripted)."},
			apiAnthropic: {"overloaded_error", "Overloaded (scripted)."}, apiGemini: {"UNAVAILABLE", "Overloaded (scripted)."}}},
		{400, "bad", map[string][2]string{
			apiChat: {"invalid_request_error", "bad"}, apiResponses: {"invalid_request_error", "bad"},
			apiAnthropic: {"invalid_request_error", "bad"}, apiGemini: {"INVALID_ARGUMENT", "bad"}}},
	}
	for _, c := range cases {
		for _, api := range allAPIs {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%d/%s/stream=%v", c.status, api, stream), func(t *testing.T) {
					turn := fmt.Sprintf(`{"error":%d`, c.status)
					if c.msg != "" {
						turn += fmt.Sprintf(`,"message":%q`, c.msg)
					}
					f := newFixture(t, `{"turns":[`+turn+`},{"text":"recovered"}]}`)
					r := f.call(t, api, stream, reqOpts{tools: tools("t")})
					must(t, r.status == c.status, "status %d, want %d", r.status, c.status)
					must(t, r.header.Get("Content-Type") == "application/json", "Content-Type %q", r.header.Get("Content-Type"))
					m := decodeMap(t, string(r.body))
					want := c.want[api]
					var typ, msg any
					switch api {
					case apiChat, apiResponses:
						typ, msg = dig(m, "error", "type"), dig(m, "error", "message")
					case apiAnthropic:
						must(t, m["type"] == "error", "anthropic error body %s", r.body)
						typ, msg = dig(m, "error", "type"), dig(m, "error", "message")
					case apiGemini:
						must(t, num(dig(m, "error", "code")) == c.status, "gemini code %v", dig(m, "error", "code"))
						typ, msg = dig(m, "error", "status"), dig(m, "error", "message")
					}
					must(t, typ == want[0] && msg == want[1], "error (%v, %v), want %v; body %s", typ, msg, want, r.body)
					retry := r.header.Get("Retry-After")
					if c.status == 429 || c.status == 529 {
						must(t, retry == "1" && r.header.Get("Retry-After-Ms") == "1000", "retry-after %q", retry)
					} else {
						must(t, retry == "", "unexpected retry-after %q", retry)
					}
					if c.status == 429 {
						checkLimitHeaders(t, api, r.header, string(r.body), time.Second)
					}
					// The error consumed its turn: the retry gets the next one.
					r = f.call(t, api, stream, reqOpts{tools: tools("t")})
					must(t, r.status == 200 && r.text == "recovered", "retry: %d %q", r.status, r.text)
				})
			}
		}
	}
}

func canonCalls(t *testing.T, calls []gotCall) []gotCall {
	t.Helper()
	out := append([]gotCall(nil), calls...)
	for i := range out {
		var v any
		if err := json.Unmarshal([]byte(out[i].Args), &v); err != nil {
			t.Fatalf("args %q: %v", out[i].Args, err)
		}
		out[i].Args = string(mustMarshal(v))
	}
	return out
}

// checkLimitHeaders: a 429 carries each provider's own word for when the
// limit resets, as real agents read it (the OpenAI and Anthropic SDKs'
// headers, Gemini's google.rpc.RetryInfo).
func checkLimitHeaders(t *testing.T, api string, h http.Header, body string, reset time.Duration) {
	t.Helper()
	switch api {
	case apiChat, apiResponses:
		must(t, h.Get("x-ratelimit-remaining-requests") == "0" && h.Get("x-ratelimit-reset-requests") == reset.String() &&
			h.Get("x-ratelimit-limit-tokens") != "", "openai rate-limit headers %v", h)
	case apiAnthropic:
		_, err := time.Parse(time.RFC3339, h.Get("anthropic-ratelimit-requests-reset"))
		must(t, err == nil && h.Get("anthropic-ratelimit-requests-remaining") == "0", "anthropic rate-limit headers %v", h)
	case apiGemini:
		must(t, strings.Contains(body, `"@type":"type.googleapis.com/google.rpc.RetryInfo"`) && strings.Contains(body, fmt.Sprintf(`"retryDelay":"%ds"`, int(reset.Seconds()))), "gemini body %s", body)
	}
}

// A script's limit answers the first requests, then refuses every one
// with the dialect's 429 (Retry-After the time to its until, no turn
// consumed) until the clock passes until; the script then goes on.
func TestScriptLimitAfterRequestsUntilATime(t *testing.T) {
	for _, api := range allAPIs {
		t.Run(api, func(t *testing.T) {
			until := time.Unix(1700000000, 0).Add(90 * time.Second).UTC().Format(time.RFC3339)
			f := newFixture(t, `{"limit":{"after":1,"until":"`+until+`"},"turns":[{"text":"one"},{"text":"two"}]}`)
			r := f.call(t, api, false, reqOpts{tools: tools("t")})
			must(t, r.status == 200 && r.text == "one", "first: %d %q", r.status, r.text)
			for range 2 {
				r = f.call(t, api, false, reqOpts{tools: tools("t")})
				must(t, r.status == 429 && r.header.Get("Retry-After") == "90", "limited: %d retry-after %q %s", r.status, r.header.Get("Retry-After"), r.body)
				checkLimitHeaders(t, api, r.header, string(r.body), 90*time.Second)
			}
			f.srv.mu.Lock()
			f.srv.now = func() time.Time { return time.Unix(1700000000, 0).Add(2 * time.Minute) }
			f.srv.mu.Unlock()
			r = f.call(t, api, false, reqOpts{tools: tools("t")})
			must(t, r.status == 200 && r.text == "two", "after the reset: %d %q", r.status, r.text)
			// retry_after overrides what the 429s say.
			f = newFixture(t, `{"limit":{"retry_after":2},"turns":[{"text":"one"}]}`)
			r = f.call(t, api, false, reqOpts{tools: tools("t")})
			must(t, r.status == 429 && r.header.Get("Retry-After") == "2", "retry_after: %d %q", r.status, r.header.Get("Retry-After"))
			// times clears the limit after that many refusals, though its
			// until is far off.
			f = newFixture(t, `{"limit":{"until":"2099-01-01T00:00:00Z","times":2},"turns":[{"text":"one"}]}`)
			for range 2 {
				r = f.call(t, api, false, reqOpts{tools: tools("t")})
				must(t, r.status == 429, "times: refusal %d %s", r.status, r.body)
			}
			r = f.call(t, api, false, reqOpts{tools: tools("t")})
			must(t, r.status == 200 && r.text == "one", "after its refusals: %d %q", r.status, r.text)
			// tooled: a side request (no tools: a session title) passes and
			// spends no refusal; the turn's request is refused.
			f = newFixture(t, `{"limit":{"times":1,"tooled":true},"turns":[{"text":"one"}]}`)
			r = f.call(t, api, false, reqOpts{})
			must(t, r.status == 200, "tooled: a side request got %d %s", r.status, r.body)
			r = f.call(t, api, false, reqOpts{tools: tools("t")})
			must(t, r.status == 429, "tooled: the turn's request got %d", r.status)
			r = f.call(t, api, false, reqOpts{tools: tools("t")})
			must(t, r.status == 200 && r.text == "one", "tooled, after its refusal: %d %q", r.status, r.text)
			// A plan's window: Anthropic's 429 is the unified limiter's too;
			// a plain limit's is not.
			must(t, r.header.Get("anthropic-ratelimit-unified-status") == "", "unified headers without a window: %v", r.header)
			f = newFixture(t, `{"limit":{"until":"2099-01-01T00:00:00Z","window":"five_hour"},"turns":[{"text":"one"}]}`)
			r = f.call(t, api, false, reqOpts{tools: tools("t")})
			want := [][2]string{{"status", ""}, {"reset", ""}, {"representative-claim", ""}, {"5h-status", ""}}
			if api == apiAnthropic {
				want = [][2]string{{"status", "rejected"}, {"reset", "4070908800"}, {"representative-claim", "five_hour"}, {"5h-status", "rejected"}}
			}
			for _, w := range want {
				must(t, r.status == 429 && r.header.Get("anthropic-ratelimit-unified-"+w[0]) == w[1], "window: %s = %q, want %q", w[0], r.header.Get("anthropic-ratelimit-unified-"+w[0]), w[1])
			}
			// The OpenAI dialects answer as the ChatGPT backend does.
			if plan := strings.Contains(string(r.body), `"type":"usage_limit_reached"`) && strings.Contains(string(r.body), `"resets_at":4070908800`); plan != (api == apiChat || api == apiResponses) {
				t.Errorf("window: the %s body %s", api, r.body)
			}
		})
	}
}

func TestScriptLimitErrors(t *testing.T) {
	for _, bad := range []string{
		`{"limit":{"after":-1}}`, `{"limit":{"after":1.5}}`, `{"limit":{"until":"3pm"}}`, `{"limit":{"sometimes":1}}`, `{"limit":3}`, `{"limit":{"times":0}}`, `{"limit":{"times":1.5}}`, `{"limit":{"tooled":1}}`,
	} {
		if _, err := ParseScript([]byte(bad), ""); err == nil || !strings.Contains(err.Error(), "limit") {
			t.Errorf("ParseScript(%s) = %v, want a limit error", bad, err)
		}
	}
}
