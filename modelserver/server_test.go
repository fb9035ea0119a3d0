package modelserver

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTurnConsumption(t *testing.T) {
	type step struct {
		api      string
		offered  []testTool
		prompt   string
		text     string
		consumed bool
		turn     int
		reason   string
	}
	cases := []struct {
		name   string
		script string
		steps  []step
	}{
		{
			name:   "untooled requests never consume",
			script: `{"turns":[{"text":"one"},{"text":"two"}],"untooled":{"text":"title"},"default":{"text":"def"}}`,
			steps: []step{
				{api: apiChat, text: "title", turn: -1, reason: "untooled"},
				{api: apiChat, offered: tools("a"), text: "one", consumed: true, turn: 0},
				{api: apiGemini, text: "title", turn: -1, reason: "untooled"},
				{api: apiAnthropic, offered: tools("a"), text: "two", consumed: true, turn: 1},
				{api: apiResponses, offered: tools("a"), text: "def", turn: -1, reason: "exhausted"},
				{api: apiResponses, text: "title", turn: -1, reason: "untooled"},
			},
		},
		{
			name:   "untooled falls back to default, then to OK.",
			script: `{"turns":[{"text":"one"}],"default":{"text":"def"}}`,
			steps: []step{
				{api: apiChat, text: "def", turn: -1, reason: "untooled"},
				{api: apiChat, offered: tools("a"), text: "one", consumed: true, turn: 0},
			},
		},
		{
			name:   "built-in fallback",
			script: `{"turns":[]}`,
			steps: []step{
				{api: apiChat, text: "OK.", turn: -1, reason: "untooled"},
				{api: apiChat, offered: tools("a"), text: "OK.", turn: -1, reason: "exhausted"},
			},
		},
		{
			name:   "consume all",
			script: `{"turns":[{"text":"one"},{"text":"two"}],"consume":"all","untooled":{"text":"title"}}`,
			steps: []step{
				{api: apiChat, text: "one", consumed: true, turn: 0},
				{api: apiChat, offered: tools("a"), text: "two", consumed: true, turn: 1},
			},
		},
		{
			name:   "ignore list skips tooled side requests",
			script: `{"turns":[{"text":"one"}],"ignore":["SUGGESTION MODE","say \"hi\"\nnow"],"untooled":{"text":"side"}}`,
			steps: []step{
				{api: apiChat, offered: tools("a"), prompt: "You are in SUGGESTION MODE", text: "side", turn: -1, reason: "ignored"},
				// matched against the decoded string, so quotes and newlines need no JSON escaping
				{api: apiAnthropic, offered: tools("a"), prompt: "please say \"hi\"\nnow", text: "side", turn: -1, reason: "ignored"},
				{api: apiChat, offered: tools("a"), prompt: "real prompt", text: "one", consumed: true, turn: 0},
			},
		},
		{
			name:   "match waits for its request",
			script: `{"turns":[{"text":"first"},{"text":"after result","match":"RESULT-42 in {{CWD}}"}],"untooled":{"text":"waiting"}}`,
			steps: []step{
				{api: apiChat, offered: tools("a"), text: "first", consumed: true, turn: 0},
				{api: apiChat, offered: tools("a"), prompt: "nothing yet", text: "waiting", turn: -1, reason: `turn 1 waits for "RESULT-42 in {{CWD}}"`},
				{api: apiGemini, offered: tools("a"), prompt: "tool said RESULT-42 in /repo", text: "after result", consumed: true, turn: 1},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, c.script)
			for i, s := range c.steps {
				r := f.call(t, s.api, i%2 == 1, reqOpts{tools: s.offered, prompt: s.prompt})
				must(t, r.status == 200 && r.text == s.text, "step %d: %d %q, want %q", i, r.status, r.text, s.text)
				e := f.log.entries(t)[i]
				must(t, e.Consumed == s.consumed && e.Turn == s.turn && e.Reason == s.reason,
					"step %d: log consumed=%v turn=%d reason=%q, want %v %d %q", i, e.Consumed, e.Turn, e.Reason, s.consumed, s.turn, s.reason)
			}
		})
	}
}

func TestCwdSubstitution(t *testing.T) {
	script := `{"turns":[{"thinking":"in {{CWD}}","text":"at {{CWD}}","tool":"w","args":{"p":"{{CWD}}/a \"q\"","n":{"deep":["{{CWD}}"]}}}]}`
	f := newFixture(t, script)
	r := f.call(t, apiChat, true, reqOpts{tools: tools("w")})
	must(t, r.thinking == "in /repo" && r.text == "at /repo", "text %q thinking %q", r.text, r.thinking)
	must(t, r.calls[0].Args == `{"p":"/repo/a \"q\"","n":{"deep":["/repo"]}}`, "args %s (script key order must survive)", r.calls[0].Args)

	// The script's cwd wins over Options.Cwd, and is escaped for JSON.
	f2 := newFixture(t, `{"cwd":"/odd \"dir\"","turns":[{"tool":"w","args":{"p":"{{CWD}}/x"}}]}`)
	r = f2.call(t, apiResponses, false, reqOpts{tools: tools("w")})
	must(t, r.calls[0].Args == `{"p":"/odd \"dir\"/x"}`, "args %s", r.calls[0].Args)
}

func TestDelays(t *testing.T) {
	f := newFixture(t, `{"turns":[{"text":"slow answer with several chunks in it","delay":2.5,"chunk_delay":10}]}`)
	path, body := requestFor(apiAnthropic, true, reqOpts{tools: tools("a")})
	resp, data := f.do(t, http.MethodPost, path, body)
	must(t, resp.StatusCode == 200, "status %d", resp.StatusCode)
	events := readSSE(t, data)
	sleeps := *f.sleeps
	must(t, len(sleeps) == len(events), "%d sleeps for %d events", len(sleeps), len(events))
	must(t, sleeps[0] == 2500*time.Millisecond, "first sleep %v", sleeps[0])
	for _, d := range sleeps[1:] {
		must(t, d == 10*time.Millisecond, "chunk sleep %v", d)
	}
}

func TestRequestLog(t *testing.T) {
	f := newFixture(t, `{"turns":[{"text":"a"}]}`)
	f.call(t, apiGemini, true, reqOpts{tools: tools("read_file", "write_file")})
	f.do(t, http.MethodGet, "/v1/models", nil)
	f.do(t, http.MethodPost, "/nope", "not json")
	entries := f.log.entries(t)
	must(t, len(entries) == 3, "%d log entries", len(entries))

	e := entries[0]
	must(t, e.N == 1 && e.Method == "POST" && e.Path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", "entry %+v", e)
	must(t, e.API == apiGemini && e.Model == "gemini-2.5-flash" && e.Stream && e.Status == 200, "entry %+v", e)
	must(t, strings.Join(e.OfferedTools, ",") == "read_file,write_file" && e.Consumed && e.Turn == 0, "entry %+v", e)
	must(t, e.TS == "2023-11-14T22:13:20Z", "ts %q", e.TS)
	var body map[string]any
	must(t, json.Unmarshal(e.Body, &body) == nil && body["contents"] != nil, "body %s", e.Body)

	must(t, entries[1].N == 2 && entries[1].API == apiModels && entries[1].Turn == -1 && len(entries[1].OfferedTools) == 0, "entry %+v", entries[1])
	must(t, entries[2].API == "unknown" && entries[2].Status == 404 && string(entries[2].Body) == `null`, "entry %+v", entries[2])

	// The raw line has every documented field, offered_tools as a list.
	f.log.mu.Lock()
	first := strings.SplitN(f.log.b.String(), "\n", 2)[0]
	f.log.mu.Unlock()
	raw := decodeMap(t, first)
	for _, k := range []string{"ts", "n", "method", "path", "api", "model", "stream", "offered_tools", "consumed", "turn", "status", "body"} {
		_, ok := raw[k]
		must(t, ok, "log line lacks %q: %s", k, first)
	}
}

func TestControlEndpoints(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.json")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"turns":[{"text":"from file"},{"text":"second"}]}`)
	log := &syncBuffer{}
	srv, err := New(Options{ScriptPath: file, Log: log, Sleep: func(context.Context, time.Duration) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	f := serve(t, srv, log)

	state := func() State {
		resp, data := f.do(t, http.MethodGet, "/_state", nil)
		must(t, resp.StatusCode == 200, "state status %d", resp.StatusCode)
		var s State
		must(t, json.Unmarshal(data, &s) == nil, "state %s", data)
		return s
	}
	r := f.call(t, apiChat, false, reqOpts{tools: tools("a")})
	must(t, r.text == "from file", "text %q", r.text)
	st := state()
	must(t, st.NextTurn == 1 && st.Turns == 2 && !st.Exhausted && st.Requests == 2 && st.ScriptPath == file, "state %+v", st)

	// /_reset reloads the file and rewinds.
	write(`{"turns":[{"text":"edited"}]}`)
	resp, data := f.do(t, http.MethodPost, "/_reset", nil)
	must(t, resp.StatusCode == 200, "reset %d %s", resp.StatusCode, data)
	r = f.call(t, apiChat, false, reqOpts{tools: tools("a")})
	must(t, r.text == "edited", "after reset %q", r.text)

	// A broken file leaves the current script in place.
	write(`{"turns":[{"bogus":1}]}`)
	resp, data = f.do(t, http.MethodPost, "/_reset", nil)
	must(t, resp.StatusCode == 500 && strings.Contains(string(data), "turns[0]"), "reset of broken file: %d %s", resp.StatusCode, data)
	must(t, state().Turns == 1, "broken reset replaced the script")

	// /_script takes JSON or YAML and rewinds.
	resp, data = f.do(t, http.MethodPost, "/_script", "turns:\n  - text: yaml turn\n")
	must(t, resp.StatusCode == 200, "script %d %s", resp.StatusCode, data)
	st = state()
	must(t, st.NextTurn == 0 && st.Turns == 1, "state %+v", st)
	r = f.call(t, apiAnthropic, true, reqOpts{tools: tools("a")})
	must(t, r.text == "yaml turn", "text %q", r.text)

	resp, data = f.do(t, http.MethodPost, "/_script", `{"turns":[{"text":"ok"},{"error":99}]}`)
	must(t, resp.StatusCode == 400 && strings.Contains(string(data), "turns[1]"), "bad script: %d %s", resp.StatusCode, data)

	resp, _ = f.do(t, http.MethodGet, "/_reset", nil)
	must(t, resp.StatusCode == 405, "GET /_reset: %d", resp.StatusCode)
	for _, e := range log.entries(t) {
		if strings.HasPrefix(e.Path, "/_") {
			must(t, e.API == apiControl, "control entry %+v", e)
		}
	}
}

func TestModelList(t *testing.T) {
	f := newFixture(t, `{"models":["a-model","b-model"]}`)
	resp, data := f.do(t, http.MethodGet, "/v1/models", nil)
	must(t, resp.StatusCode == 200, "status %d", resp.StatusCode)
	m := decodeMap(t, string(data))
	must(t, m["object"] == "list" && m["has_more"] == false && m["first_id"] == "a-model" && m["last_id"] == "b-model", "list %s", data)
	d := dig(m, "data", 0)
	for k, want := range map[string]any{"id": "a-model", "object": "model", "type": "model", "display_name": "a-model", "created_at": "2025-01-01T00:00:00Z"} {
		must(t, dig(d, k) == want, "model field %s = %v", k, dig(d, k))
	}
	_, data = f.do(t, http.MethodGet, "/v1/models/claude-x", nil)
	must(t, decodeMap(t, string(data))["id"] == "claude-x", "single model %s", data)
	_, data = f.do(t, http.MethodGet, "/v1beta/models/gemini-x", nil)
	must(t, decodeMap(t, string(data))["name"] == "models/gemini-x", "single gemini model %s", data)
}

func TestStartAndClose(t *testing.T) {
	srv, err := New(Options{Script: &Script{Turns: []Turn{{Text: "live"}, {Text: "never", Delay: time.Hour}}}})
	if err != nil {
		t.Fatal(err)
	}
	url, err := srv.Start(context.Background(), "127.0.0.1:0")
	must(t, err == nil && strings.HasPrefix(url, "http://127.0.0.1:"), "Start: %q %v", url, err)
	_, err = srv.Start(context.Background(), "127.0.0.1:0")
	must(t, err != nil, "second Start succeeded")

	f := &fixture{srv: srv, url: url}
	r := f.call(t, apiChat, true, reqOpts{tools: tools("a")})
	must(t, r.text == "live", "text %q", r.text)

	// A request stuck in a scripted delay ends when the server closes.
	done := make(chan error, 1)
	go func() {
		path, body := requestFor(apiChat, false, reqOpts{tools: tools("a")})
		resp, err := http.Post(url+path, "application/json", strings.NewReader(string(mustMarshal(body))))
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	for srv.State().NextTurn < 2 {
		time.Sleep(time.Millisecond)
	}
	must(t, srv.Close() == nil, "Close failed")
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("delayed request survived Close")
	}
	must(t, srv.Close() == nil, "second Close failed")
	_, err = srv.Start(context.Background(), "")
	must(t, err != nil, "Start after Close succeeded")
	http.DefaultClient.CloseIdleConnections()
}

func TestStartStopsWithContext(t *testing.T) {
	srv, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	url, err := srv.Start(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get(url + "/_state")
		if err != nil {
			break
		}
		resp.Body.Close()
		must(t, time.Now().Before(deadline), "server still up after ctx cancel")
		time.Sleep(5 * time.Millisecond)
	}
	must(t, srv.Close() == nil, "Close after ctx stop")
	http.DefaultClient.CloseIdleConnections()
}
