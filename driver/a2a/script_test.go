package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tai-dev/tai/driver"
)

// A scripted server plays what the reference peer cannot: the draft
// dialect, dropped streams, errors inside a stream, garbage.

type call struct {
	Method  string
	Params  map[string]any
	Version string // the A2A-Version header
}

type rpcWriter struct {
	w  http.ResponseWriter
	id json.RawMessage
}

func (r *rpcWriter) result(v any) {
	r.w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(r.w).Encode(map[string]any{"jsonrpc": "2.0", "id": r.id, "result": v})
}

func (r *rpcWriter) error(code int, msg string) {
	r.w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(r.w).Encode(map[string]any{"jsonrpc": "2.0", "id": r.id, "error": map[string]any{"code": code, "message": msg}})
}

// stream writes SSE: each item a JSON result, or a string written as is.
func (r *rpcWriter) stream(items ...any) {
	r.w.Header().Set("Content-Type", "text/event-stream")
	r.w.WriteHeader(http.StatusOK)
	for _, it := range items {
		if s, ok := it.(string); ok {
			fmt.Fprint(r.w, s)
		} else {
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": r.id, "result": it})
			fmt.Fprintf(r.w, "id: x\ndata: %s\n\n", b)
		}
		r.w.(http.Flusher).Flush()
	}
}

type scripted struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []call
}

// newScripted serves card (nil: none) at cardPath and answers JSON-RPC
// at /rpc with handle; n counts the calls of that method so far.
func newScripted(t *testing.T, cardPath string, card map[string]any, handle func(w *rpcWriter, c call, n int)) *scripted {
	t.Helper()
	s := &scripted{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == cardPath && card != nil {
			if u, ok := card["url"].(string); ok && u == "" {
				card["url"] = s.srv.URL + "/rpc"
			}
			_ = json.NewEncoder(w).Encode(card)
			return
		}
		if r.URL.Path != "/rpc" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params map[string]any  `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("request not JSON: %v", err)
			return
		}
		c := call{Method: req.Method, Params: req.Params, Version: r.Header.Get("A2A-Version")}
		s.mu.Lock()
		n := 0
		for _, p := range s.calls {
			if p.Method == c.Method {
				n++
			}
		}
		s.calls = append(s.calls, c)
		s.mu.Unlock()
		handle(&rpcWriter{w: w, id: req.ID}, c, n)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *scripted) methods() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, c := range s.calls {
		out = append(out, c.Method)
	}
	return out
}

func (s *scripted) call(i int) call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[i]
}

func v1Card(streaming bool) map[string]any {
	return map[string]any{"name": "scripted", "version": "0", "url": "",
		"supportedInterfaces": []any{map[string]any{"url": "", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}},
		"capabilities":        map[string]any{"streaming": streaming}}
}

// fixURL fills the card's interface URL once the server runs.
func fixURL(s *scripted, card map[string]any) {
	for _, in := range card["supportedInterfaces"].([]any) {
		in.(map[string]any)["url"] = s.srv.URL + "/rpc"
	}
}

func status(task, state string, final bool) map[string]any {
	return map[string]any{"kind": "status-update", "taskId": task, "contextId": "ctx", "final": final, "status": map[string]any{"state": state}}
}

func TestDraftDialect(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		t.Run(map[bool]string{true: "tasks/sendSubscribe", false: "tasks/send"}[streaming], func(t *testing.T) {
			card := map[string]any{"name": "draft agent", "url": "", "capabilities": map[string]any{"streaming": streaming}}
			s := newScripted(t, LegacyCardPath, card, func(w *rpcWriter, c call, n int) {
				id, _ := c.Params["id"].(string)
				sess, _ := c.Params["sessionId"].(string)
				parts := c.Params["message"].(map[string]any)["parts"].([]any)
				text := parts[0].(map[string]any)["text"]
				switch c.Method {
				case "tasks/sendSubscribe":
					w.stream(
						map[string]any{"id": id, "sessionId": sess, "status": map[string]any{"state": "working"}, "final": false},
						map[string]any{"id": id, "artifact": map[string]any{"parts": []any{map[string]any{"type": "text", "text": fmt.Sprint("re: ", text)}}, "index": 0}},
						map[string]any{"id": id, "status": map[string]any{"state": "completed"}, "final": true})
				case "tasks/send":
					w.result(map[string]any{"id": id, "sessionId": sess, "status": map[string]any{"state": "completed",
						"message": map[string]any{"role": "agent", "parts": []any{map[string]any{"type": "text", "text": fmt.Sprint("re: ", text)}}}}})
				default:
					w.error(codeMethodNotFound, "method not found")
				}
			})
			sess, sk := launch(t, s.srv.URL, nil, Options{})
			for _, p := range []string{"one", "two"} {
				res, err := prompt(t, sess, p)
				if err != nil || res.StopReason != driver.StopEndTurn {
					t.Fatalf("%s: %+v, %v", p, res, err)
				}
			}
			if sess.Dialect() != DialectDraft {
				t.Errorf("dialect %s", sess.Dialect())
			}
			if got := sk.text(); !slices.Equal(got, []string{"re: one", "re: two"}) {
				t.Errorf("messages %q", got)
			}
			// The client owns the ids: one session id, a task id per turn.
			a, b := s.call(0), s.call(1)
			if a.Params["sessionId"] != b.Params["sessionId"] || a.Params["sessionId"] != sess.ID() || a.Params["id"] == b.Params["id"] {
				t.Errorf("ids: %v / %v (session %s)", a.Params, b.Params, sess.ID())
			}
			if a.Version != "" {
				t.Errorf("A2A-Version %q sent to a draft agent", a.Version)
			}
		})
	}
}

func TestNegotiateByHTTPStatus(t *testing.T) {
	// A 0.3 server behind a card claiming 1.0 that refuses 1.0 requests
	// with 405 rather than -32601.
	card := v1Card(true)
	s := newScripted(t, CardPath, card, func(w *rpcWriter, c call, n int) {
		switch {
		case c.Version != "":
			http.Error(w.w, "no", http.StatusMethodNotAllowed)
		case c.Method == "message/stream":
			w.stream(map[string]any{"kind": "task", "id": "t", "contextId": "ctx", "status": map[string]any{"state": "submitted"}},
				map[string]any{"kind": "artifact-update", "taskId": "t", "contextId": "ctx", "artifact": map[string]any{"artifactId": "a", "parts": []any{map[string]any{"kind": "text", "text": "ok"}}}},
				status("t", "completed", true))
		default:
			w.error(codeMethodNotFound, "method not found")
		}
	})
	fixURL(s, card)
	sess, sk := launch(t, s.srv.URL, nil, Options{})
	res, err := prompt(t, sess, "hi")
	if err != nil || res.StopReason != driver.StopEndTurn {
		t.Fatalf("%+v, %v", res, err)
	}
	if got := s.methods(); !slices.Equal(got, []string{"SendStreamingMessage", "message/stream"}) {
		t.Errorf("calls %q", got)
	}
	if sess.Dialect() != Dialect03 || !slices.Equal(sk.text(), []string{"ok"}) {
		t.Errorf("dialect %s, text %q", sess.Dialect(), sk.text())
	}
}

func TestDroppedStream(t *testing.T) {
	task := map[string]any{"task": map[string]any{"id": "t", "contextId": "ctx", "status": map[string]any{"state": "TASK_STATE_WORKING"}}}
	chunk := func(text string, appendTo bool) map[string]any {
		return map[string]any{"artifactUpdate": map[string]any{"taskId": "t", "contextId": "ctx", "append": appendTo,
			"artifact": map[string]any{"artifactId": "a", "parts": []any{map[string]any{"text": text}}}}}
	}
	done := map[string]any{"statusUpdate": map[string]any{"taskId": "t", "contextId": "ctx", "status": map[string]any{"state": "TASK_STATE_COMPLETED"}}}
	fullTask := func(state string) map[string]any {
		return map[string]any{"id": "t", "contextId": "ctx", "status": map[string]any{"state": state},
			"artifacts": []any{map[string]any{"artifactId": "a", "parts": []any{map[string]any{"text": "partial answer"}}}}}
	}
	tests := []struct {
		name    string
		handle  func(w *rpcWriter, c call, n int)
		methods []string
		replace bool // the artifact was replaced by the task's snapshot
	}{
		{"resubscribe picks the stream up", func(w *rpcWriter, c call, n int) {
			switch c.Method {
			case "SendStreamingMessage":
				w.stream(task, chunk("partial ", false)) // then the connection ends
			case "SubscribeToTask":
				w.stream(chunk("answer", true), done)
			}
		}, []string{"SendStreamingMessage", "SubscribeToTask"}, false},
		{"resubscribe cut off mid-event, then again", func(w *rpcWriter, c call, n int) {
			switch {
			case c.Method == "SendStreamingMessage":
				w.stream(task, chunk("partial ", false))
			case c.Method == "SubscribeToTask" && n == 0:
				w.stream("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"statusUp")
			case c.Method == "SubscribeToTask":
				w.stream(chunk("answer", true), done)
			}
		}, []string{"SendStreamingMessage", "SubscribeToTask", "SubscribeToTask"}, false},
		{"-32004 on resubscribe: GetTask", func(w *rpcWriter, c call, n int) {
			switch c.Method {
			case "SendStreamingMessage":
				w.stream(task, chunk("partial ", false))
			case "SubscribeToTask":
				w.error(codeUnsupportedOperation, "task is in terminal state")
			case "GetTask":
				w.result(fullTask("TASK_STATE_COMPLETED"))
			}
		}, []string{"SendStreamingMessage", "SubscribeToTask", "GetTask"}, true},
		{"GetTask polled while the task works", func(w *rpcWriter, c call, n int) {
			switch c.Method {
			case "SendStreamingMessage":
				w.stream(task, chunk("partial ", false))
			case "SubscribeToTask":
				w.error(codeMethodNotFound, "no")
			case "GetTask":
				if n < 2 {
					w.result(map[string]any{"id": "t", "contextId": "ctx", "status": map[string]any{"state": "TASK_STATE_WORKING"}})
					return
				}
				w.result(fullTask("TASK_STATE_COMPLETED"))
			}
		}, []string{"SendStreamingMessage", "SubscribeToTask", "GetTask", "GetTask", "GetTask"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			card := v1Card(true)
			s := newScripted(t, CardPath, card, tt.handle)
			fixURL(s, card)
			sess, sk := launch(t, s.srv.URL, nil, Options{})
			res, err := prompt(t, sess, "hi")
			if err != nil || res.StopReason != driver.StopEndTurn {
				t.Fatalf("%+v, %v", res, err)
			}
			if got := s.methods(); !slices.Equal(got, tt.methods) {
				t.Errorf("calls %q, want %q", got, tt.methods)
			}
			if got := sk.text(); !slices.Equal(got, []string{"partial answer"}) {
				t.Errorf("text %q", got)
			}
			replaced := slices.ContainsFunc(sk.ofType(driver.EventMessage), func(ev driver.Event) bool { return ev.Message.Replace })
			if replaced != tt.replace {
				t.Errorf("replace chunk: %v, want %v", replaced, tt.replace)
			}
			for i := 1; i < len(tt.methods); i++ {
				if id := s.call(i).Params["id"]; id != "t" {
					t.Errorf("%s for task %v", tt.methods[i], id)
				}
			}
		})
	}
}

func TestStreamTrouble(t *testing.T) {
	working := status("t", "working", false)
	task := map[string]any{"kind": "task", "id": "t", "contextId": "ctx", "status": map[string]any{"state": "submitted"}}
	art := map[string]any{"kind": "artifact-update", "taskId": "t", "contextId": "ctx", "artifact": map[string]any{"artifactId": "a", "parts": []any{map[string]any{"kind": "text", "text": "fine"}}}}
	tests := []struct {
		name   string
		max    int64
		handle func(w *rpcWriter, c call, n int)
		check  func(t *testing.T, res driver.TurnResult, err error, sk *sink)
	}{
		{"garbage, oversize and unknown items are reported and skipped", 512, func(w *rpcWriter, c call, n int) {
			w.stream(task, ": comment\n\n", "data: not json at all\n\n", "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"kind\":\"push-notification\",\"x\":1}}\n\n",
				"data: "+strings.Repeat("z", 2000)+"\n\n", "event: message\nretry: 5\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":[1,2]}\n\n", working, art, status("t", "completed", true))
		}, func(t *testing.T, res driver.TurnResult, err error, sk *sink) {
			if err != nil || res.StopReason != driver.StopEndTurn {
				t.Fatalf("%+v, %v", res, err)
			}
			var codes []string
			for _, ev := range sk.ofType(driver.EventError) {
				codes = append(codes, ev.Error.Code)
			}
			if !slices.Equal(codes, []string{"bad_frame", "oversize_frame", "bad_result"}) {
				t.Errorf("errors %q", codes)
			}
			raws := sk.ofType(driver.EventRaw)
			if len(raws) != 1 || raws[0].Raw.Kind != RawKind || !strings.Contains(string(raws[0].Raw.Data), "push-notification") {
				t.Errorf("raw events %+v", raws)
			}
			if !slices.Equal(sk.text(), []string{"fine"}) {
				t.Errorf("text %q", sk.text())
			}
		}},
		{"an error inside the 200 stream", 0, func(w *rpcWriter, c call, n int) {
			w.stream(task, working, `data: {"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"model overloaded","data":[{"reason":"INTERNAL"}]}}`+"\n\n")
		}, func(t *testing.T, res driver.TurnResult, err error, sk *sink) {
			var re *driver.RemoteError
			if !errors.As(err, &re) || re.Code != -32603 || re.Message != "model overloaded" {
				t.Errorf("err %v", err)
			}
		}},
		{"an HTTP error before the stream", 0, func(w *rpcWriter, c call, n int) {
			http.Error(w.w, "upstream down", http.StatusBadGateway)
		}, func(t *testing.T, res driver.TurnResult, err error, sk *sink) {
			var he *HTTPError
			if !errors.As(err, &he) || he.Status != http.StatusBadGateway || !strings.Contains(he.Body, "upstream down") {
				t.Errorf("err %v", err)
			}
		}},
		{"a JSON-RPC error instead of a stream", 0, func(w *rpcWriter, c call, n int) {
			w.error(-32602, "invalid params")
		}, func(t *testing.T, res driver.TurnResult, err error, sk *sink) {
			if remoteCode(err) != -32602 {
				t.Errorf("err %v", err)
			}
		}},
		{"a plain result instead of a stream", 0, func(w *rpcWriter, c call, n int) {
			w.result(map[string]any{"kind": "message", "messageId": "m", "role": "agent", "contextId": "ctx", "parts": []any{map[string]any{"kind": "text", "text": "short"}}})
		}, func(t *testing.T, res driver.TurnResult, err error, sk *sink) {
			if err != nil || res.StopReason != driver.StopEndTurn || !slices.Equal(sk.text(), []string{"short"}) {
				t.Errorf("%+v, %v, %q", res, err, sk.text())
			}
		}},
		{"the stream ends before naming a task", 0, func(w *rpcWriter, c call, n int) {
			w.stream(": nothing\n\n")
		}, func(t *testing.T, res driver.TurnResult, err error, sk *sink) {
			if !errors.Is(err, driver.ErrProtocol) {
				t.Errorf("err %v", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			card := map[string]any{"name": "s", "protocolVersion": "0.3.0", "url": "", "capabilities": map[string]any{"streaming": true}}
			s := newScripted(t, CardPath, card, tt.handle)
			sk := &sink{}
			sess, err := Start(t.Context(), driver.Launch{Argv: []string{s.srv.URL}, Host: driver.Host{Sink: sk}, MaxLineBytes: tt.max}, Options{PollInterval: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close(t.Context())
			res, err := prompt(t, sess, "go")
			tt.check(t, res, err, sk)
		})
	}
}

func TestBlockingAnsweredEarly(t *testing.T) {
	// A 0.3 server that ignores blocking:true and answers with a working
	// task: tai follows it with GetTask.
	card := map[string]any{"name": "s", "protocolVersion": "0.3.0", "url": ""}
	s := newScripted(t, CardPath, card, func(w *rpcWriter, c call, n int) {
		switch c.Method {
		case "message/send":
			if cfg, _ := c.Params["configuration"].(map[string]any); cfg["blocking"] != true {
				t.Errorf("params %v", c.Params)
			}
			w.result(map[string]any{"kind": "task", "id": "t", "contextId": "ctx", "status": map[string]any{"state": "working"}})
		case "tasks/get":
			w.result(map[string]any{"kind": "task", "id": "t", "contextId": "ctx", "status": map[string]any{"state": "completed",
				"message": map[string]any{"kind": "message", "messageId": "m", "role": "agent", "parts": []any{map[string]any{"kind": "text", "text": "all done"}}}}})
		}
	})
	sess, sk := launch(t, s.srv.URL, nil, Options{})
	res, err := prompt(t, sess, "go")
	if err != nil || res.StopReason != driver.StopEndTurn {
		t.Fatalf("%+v, %v", res, err)
	}
	if !slices.Equal(s.methods(), []string{"message/send", "tasks/get"}) || !slices.Equal(sk.text(), []string{"all done"}) {
		t.Errorf("calls %q, text %q", s.methods(), sk.text())
	}
}

func TestLaunchRefuses(t *testing.T) {
	grpcOnly := newScripted(t, CardPath, map[string]any{"name": "g", "supportedInterfaces": []any{
		map[string]any{"url": "grpc://x", "protocolBinding": "GRPC", "protocolVersion": "1.0"}}}, nil)
	tests := []struct {
		name string
		argv []string
		o    Options
		want error
	}{
		{"no argv", nil, Options{}, driver.ErrBadValue},
		{"not a URL", []string{"claude"}, Options{}, driver.ErrBadValue},
		{"extra args", []string{"http://127.0.0.1:1", "--x"}, Options{}, driver.ErrBadValue},
		{"no JSON-RPC interface", []string{grpcOnly.srv.URL}, Options{}, driver.ErrUnsupported},
		{"no card at a card URL", []string{grpcOnly.srv.URL + "/nope.json"}, Options{}, driver.ErrBadValue},
		{"unknown dialect", []string{grpcOnly.srv.URL + "/rpc"}, Options{Dialect: "2.0"}, driver.ErrBadValue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Start(t.Context(), driver.Launch{Argv: tt.argv, Host: driver.Host{Sink: &sink{}}}, tt.o)
			if !errors.Is(err, tt.want) {
				t.Errorf("err %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := Launch(t.Context(), driver.Launch{Argv: []string{"http://127.0.0.1:1"}, Host: driver.Host{Sink: &sink{}}}); err == nil {
		t.Error("launched against a closed port")
	}
}

func TestPinnedDialectAndResume(t *testing.T) {
	s := newScripted(t, "", nil, func(w *rpcWriter, c call, n int) {
		msg := c.Params["message"].(map[string]any)
		if c.Method != "message/send" || msg["contextId"] != "ctx-old" {
			t.Errorf("call %+v", c)
		}
		w.result(map[string]any{"kind": "message", "messageId": "m", "role": "agent", "contextId": "ctx-old", "parts": []any{map[string]any{"kind": "text", "text": "welcome back"}}})
	})
	sk := &sink{}
	var tmu sync.Mutex
	var traced []string
	trace := func(dir string, b []byte) {
		tmu.Lock()
		traced = append(traced, dir+" "+string(b))
		tmu.Unlock()
	}
	sess, err := Start(t.Context(), driver.Launch{Argv: []string{s.srv.URL + "/rpc"}, ResumeID: "ctx-old", Host: driver.Host{Sink: sk}, Trace: trace},
		Options{Dialect: Dialect03})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(t.Context())
	started := sk.ofType(driver.EventSessionStarted)
	if len(started) != 1 || !started[0].Started.Resumed || started[0].Session != "ctx-old" || started[0].Started.Protocol != "a2a/0.3" {
		t.Errorf("session.started %+v", started)
	}
	if res, err := prompt(t, sess, "hi"); err != nil || res.StopReason != driver.StopEndTurn {
		t.Fatalf("%+v, %v", res, err)
	}
	tmu.Lock()
	if len(traced) != 2 || !strings.HasPrefix(traced[0], `out {"id":1,"jsonrpc":"2.0","method":"message/send"`) || !strings.HasPrefix(traced[1], "in {") {
		t.Errorf("trace %q", traced)
	}
	tmu.Unlock()
	for _, f := range []func() error{
		func() error { return sess.SetMode(t.Context(), "x") },
		func() error { return sess.SetModel(t.Context(), "x") },
		func() error { return sess.SetConfigOption(t.Context(), "x", "y") },
	} {
		if err := f(); !errors.Is(err, driver.ErrUnsupported) {
			t.Errorf("err %v", err)
		}
	}
	if _, err := sess.Prompt(t.Context(), []driver.Content{{Type: "image"}}); !errors.Is(err, driver.ErrUnsupported) {
		t.Errorf("image prompt: %v", err)
	}
}
