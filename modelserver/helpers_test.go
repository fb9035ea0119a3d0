package modelserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuffer is a log sink the race detector is happy with.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) entries(t *testing.T) []LogEntry {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []LogEntry
	for _, line := range strings.Split(strings.TrimSpace(b.b.String()), "\n") {
		if line == "" {
			continue
		}
		var e LogEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}

type fixture struct {
	srv    *Server
	url    string
	client *http.Client
	log    *syncBuffer
	sleeps *[]time.Duration
}

// serve puts srv behind an httptest server closed with the test.
func serve(t *testing.T, srv *Server, log *syncBuffer) *fixture {
	t.Helper()
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.Close()
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &fixture{srv: srv, url: ts.URL, client: ts.Client(), log: log, sleeps: &[]time.Duration{}}
}

const testCwd = "/repo"

// newFixture serves script (JSON or YAML text) with a recorded, instant sleep.
func newFixture(t *testing.T, script string) *fixture {
	t.Helper()
	var sc *Script
	if script != "" {
		var err error
		if sc, err = ParseScript([]byte(script), ""); err != nil {
			t.Fatalf("ParseScript: %v", err)
		}
	}
	log := &syncBuffer{}
	var mu sync.Mutex
	sleeps := &[]time.Duration{}
	srv, err := New(Options{
		Script: sc,
		Cwd:    testCwd,
		Log:    log,
		Now:    func() time.Time { return time.Unix(1700000000, 0) },
		Sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			*sleeps = append(*sleeps, d)
			mu.Unlock()
			return ctx.Err()
		},
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	f := serve(t, srv, log)
	f.sleeps = sleeps
	return f
}

func (f *fixture) do(t *testing.T, method, path string, body any) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		rd = bytes.NewReader(mustMarshal(b))
	}
	req, err := http.NewRequest(method, f.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	client := f.client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return resp, data
}

type sseEvent struct {
	Event string
	Data  string
}

// readSSE parses a server-sent-event stream, insisting every event is
// terminated by a blank line.
func readSSE(t *testing.T, data []byte) []sseEvent {
	t.Helper()
	var events []sseEvent
	var cur sseEvent
	open := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if open {
				events = append(events, cur)
			}
			cur, open = sseEvent{}, false
		case strings.HasPrefix(line, "event: "):
			cur.Event, open = strings.TrimPrefix(line, "event: "), true
		case strings.HasPrefix(line, "data: "):
			if cur.Data != "" {
				cur.Data += "\n"
			}
			cur.Data, open = cur.Data+strings.TrimPrefix(line, "data: "), true
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if open {
		t.Fatalf("SSE stream ends inside an event: %+v", cur)
	}
	return events
}

func decodeMap(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
	return m
}

// ---- a provider-neutral client for table tests ----

type testTool struct {
	name   string
	custom bool
}

func tools(names ...string) []testTool {
	var out []testTool
	for _, n := range names {
		out = append(out, testTool{name: n})
	}
	return out
}

type gotCall struct {
	ID, Name, Args, Input string
	Custom                bool
}

// result is a response reassembled from any API, stream or not.
type result struct {
	status   int
	header   http.Header
	body     []byte
	text     string
	thinking string
	calls    []gotCall
	stop     string // "stop" or "tool"
	usageIn  int
	usageOut int
}

var allAPIs = []string{apiChat, apiResponses, apiAnthropic, apiGemini}

type reqOpts struct {
	prompt string
	tools  []testTool
	extra  map[string]any // merged into the body
}

func requestFor(api string, stream bool, o reqOpts) (string, map[string]any) {
	if o.prompt == "" {
		o.prompt = "hello"
	}
	params := map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string"}}}
	var path string
	body := map[string]any{}
	switch api {
	case apiChat:
		path = "/v1/chat/completions"
		body = map[string]any{"model": "fake-model", "stream": stream, "stream_options": map[string]any{"include_usage": true},
			"messages": []any{map[string]any{"role": "user", "content": o.prompt}}}
		var ts []any
		for _, t := range o.tools {
			ts = append(ts, map[string]any{"type": "function", "function": map[string]any{"name": t.name, "parameters": params}})
		}
		if ts != nil {
			body["tools"] = ts
		}
	case apiResponses:
		path = "/v1/responses"
		body = map[string]any{"model": "gpt-5.3-codex", "stream": stream,
			"input": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_text", "text": o.prompt}}}}}
		var ts []any
		for _, t := range o.tools {
			if t.custom {
				ts = append(ts, map[string]any{"type": "custom", "name": t.name, "format": map[string]any{"type": "grammar"}})
			} else {
				ts = append(ts, map[string]any{"type": "function", "name": t.name, "parameters": params})
			}
		}
		if ts != nil {
			body["tools"] = ts
		}
	case apiAnthropic:
		path = "/v1/messages?beta=true"
		body = map[string]any{"model": "claude-sonnet-4-5", "stream": stream, "max_tokens": 1000,
			"messages": []any{map[string]any{"role": "user", "content": o.prompt}}}
		var ts []any
		for _, t := range o.tools {
			ts = append(ts, map[string]any{"name": t.name, "input_schema": params})
		}
		if ts != nil {
			body["tools"] = ts
		}
	case apiGemini:
		path = "/v1beta/models/gemini-2.5-flash:generateContent"
		if stream {
			path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
		}
		body = map[string]any{"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": o.prompt}}}}}
		var fs []any
		for _, t := range o.tools {
			fs = append(fs, map[string]any{"name": t.name, "parameters": params})
		}
		if fs != nil {
			body["tools"] = []any{map[string]any{"functionDeclarations": fs}}
		}
	}
	for k, v := range o.extra {
		body[k] = v
	}
	return path, body
}

func (f *fixture) call(t *testing.T, api string, stream bool, o reqOpts) result {
	t.Helper()
	path, body := requestFor(api, stream, o)
	resp, data := f.do(t, http.MethodPost, path, body)
	r := result{status: resp.StatusCode, header: resp.Header, body: data}
	if resp.StatusCode != http.StatusOK {
		return r
	}
	if stream {
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("%s stream: Content-Type %q", api, ct)
		}
		events := readSSE(t, data)
		switch api {
		case apiChat:
			parseChatStream(t, events, &r)
		case apiResponses:
			parseResponsesStream(t, events, &r)
		case apiAnthropic:
			parseAnthropicStream(t, events, &r)
		case apiGemini:
			parseGeminiStream(t, events, &r)
		}
		return r
	}
	m := decodeMap(t, string(data))
	switch api {
	case apiChat:
		parseChatMessage(t, m, &r)
	case apiResponses:
		parseResponsesObject(t, m, &r)
	case apiAnthropic:
		parseAnthropicMessage(t, m, &r)
	case apiGemini:
		parseGeminiResponse(t, m, &r)
	}
	return r
}

func compactJSON(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("arguments %q are not JSON: %v", s, err)
	}
	return b.String()
}

func num(v any) int {
	f, _ := v.(float64)
	return int(f)
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func dig(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func must(t *testing.T, cond bool, format string, args ...any) {
	t.Helper()
	if !cond {
		t.Fatalf(format, args...)
	}
}

func eventTypes(events []sseEvent) string {
	var b strings.Builder
	for i, e := range events {
		if i > 0 {
			b.WriteString(",")
		}
		name := e.Event
		if name == "" {
			name = "data"
		}
		fmt.Fprint(&b, name)
	}
	return b.String()
}
