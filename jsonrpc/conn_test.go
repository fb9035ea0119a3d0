package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tai-dev/tai/internal/lines"
	"github.com/tai-dev/tai/internal/testutil"
)

func TestIDRoundTrip(t *testing.T) {
	tests := []struct {
		in      string
		wantErr bool
		zero    bool
	}{
		{in: `0`},
		{in: `-7`},
		{in: `12345678901234567890`}, // beyond int64: kept verbatim anyway
		{in: `1.5`},
		{in: `"abc"`},
		{in: `""`},
		{in: `"6f1c1f2e-6c3a-4d8e-9d7b-1b2f3a4c5d6e"`},
		{in: `"\u00e9"`},
		{in: `null`},
		{in: `{}`, wantErr: true},
		{in: `[1]`, wantErr: true},
		{in: `true`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var id ID
			err := json.Unmarshal([]byte(tt.in), &id)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Unmarshal(%s) err = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if id.IsZero() {
				t.Errorf("IsZero() = true for %s", tt.in)
			}
			out, err := json.Marshal(id)
			if err != nil || string(out) != tt.in {
				t.Errorf("Marshal = %s, %v; want %s", out, err, tt.in)
			}
			if id.String() != tt.in {
				t.Errorf("String() = %s, want %s", id.String(), tt.in)
			}
		})
	}
	var zero ID
	if out, _ := json.Marshal(zero); !zero.IsZero() || string(out) != "null" {
		t.Errorf("zero ID: IsZero=%v Marshal=%s", zero.IsZero(), out)
	}
	if got := Int64ID(0).String(); got != "0" {
		t.Errorf("Int64ID(0) = %s", got)
	}
	if got := StringID(`a"b`).String(); got != `"a\"b"` {
		t.Errorf("StringID = %s", got)
	}
}

// A request is handled only after the notifications preceding it.
func TestOrderingNotificationsBeforeRequest(t *testing.T) {
	var applied atomic.Int64
	server := &funcHandler{
		notify: func(context.Context, string, json.RawMessage) { applied.Add(1) },
		request: func(context.Context, string, json.RawMessage) (any, error) {
			return applied.Load(), nil
		},
	}
	client, _ := connPair(t, nil, server, Options{}, Options{})
	ctx := t.Context()
	for round := 1; round <= 3; round++ {
		for range 100 {
			if err := client.Notify(ctx, "session/update", map[string]string{"sessionUpdate": "tool_call"}); err != nil {
				t.Fatal(err)
			}
		}
		var seen int64
		if err := client.Call(ctx, "session/request_permission", nil, &seen); err != nil {
			t.Fatal(err)
		}
		if want := int64(100 * round); seen != want {
			t.Fatalf("round %d: request saw %d notifications, want %d", round, seen, want)
		}
	}
}

// A Call returns only after the notifications preceding its response.
func TestOrderingNotificationsBeforeResponse(t *testing.T) {
	rec := newRecorder()
	c, peer := newRawPeer(t, &funcHandler{notify: rec.notify}, Options{})
	errc := make(chan error, 1)
	go func() { errc <- c.Call(t.Context(), "session/prompt", nil, nil) }()
	req := peer.recv()
	for i := range 50 {
		peer.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"n":%d}}`, i))
	}
	peer.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}`, req["id"]))
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if n := rec.count(); n != 50 {
		t.Fatalf("Call returned after %d notifications, want 50", n)
	}
	for i := range 50 {
		if got, want := rec.seen[i], fmt.Sprintf(`session/update {"n":%d}`, i); got != want {
			t.Fatalf("notification %d = %s, want %s", i, got, want)
		}
	}
}

// The peer's ids are a separate space from ours and are echoed verbatim.
func TestIDCollisionWithRawPeer(t *testing.T) {
	h := &funcHandler{request: func(_ context.Context, method string, params json.RawMessage) (any, error) {
		return map[string]any{"method": method, "params": params}, nil
	}}
	c, peer := newRawPeer(t, h, Options{})
	type callResult struct {
		Who string `json:"who"`
	}
	var got callResult
	errc := make(chan error, 1)
	go func() { errc <- c.Call(t.Context(), "session/new", nil, &got) }()
	req := peer.recv()
	if string(req["id"]) != "0" {
		t.Fatalf("first call id = %s, want 0", req["id"])
	}
	// While our id 0 is pending, the peer uses 0, "abc" and "0" itself.
	peer.send(`{"jsonrpc":"2.0","id":0,"method":"fs/read_text_file","params":{"path":"a"}}`)
	peer.send(`{"jsonrpc":"2.0","id":"abc","method":"fs/read_text_file","params":{"path":"b"}}`)
	peer.send(`{"jsonrpc":"2.0","id":"0","method":"fs/read_text_file","params":{"path":"c"}}`)
	byID := map[string]string{}
	for range 3 {
		resp := peer.recv()
		var r struct {
			Params struct{ Path string } `json:"params"`
		}
		if err := json.Unmarshal(resp["result"], &r); err != nil {
			t.Fatalf("response %v: %v", resp, err)
		}
		byID[string(resp["id"])] = r.Params.Path
	}
	want := map[string]string{`0`: "a", `"abc"`: "b", `"0"`: "c"}
	for id, path := range want {
		if byID[id] != path {
			t.Errorf("response id %s answered path %q, want %q (all: %v)", id, byID[id], path, byID)
		}
	}
	peer.send(`{"jsonrpc":"2.0","id":0,"result":{"who":"peer"}}`)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if got.Who != "peer" {
		t.Fatalf("Call result = %+v", got)
	}
}

// Two Conns both start counting at id 0 and call each other concurrently.
func TestIDCollisionBothSides(t *testing.T) {
	answer := func(name string) *funcHandler {
		return &funcHandler{request: func(context.Context, string, json.RawMessage) (any, error) { return name, nil }}
	}
	a, b := connPair(t, answer("a"), answer("b"), Options{}, Options{})
	var wg sync.WaitGroup
	for _, tc := range []struct {
		c    *Conn
		want string
	}{{a, "b"}, {b, "a"}} {
		wg.Go(func() {
			for range 20 {
				var got string
				if err := tc.c.Call(t.Context(), "who", nil, &got); err != nil {
					t.Error(err)
					return
				}
				if got != tc.want {
					t.Errorf("got answer from %q, want %q", got, tc.want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// padded returns a notification line of exactly n bytes.
func padded(t *testing.T, method string, n int) string {
	t.Helper()
	head := `{"jsonrpc":"2.0","method":"` + method + `","params":{"p":"`
	tail := `"}}`
	if n < len(head)+len(tail) {
		t.Fatalf("padded line too short: %d", n)
	}
	return head + strings.Repeat("A", n-len(head)-len(tail)) + tail
}

func TestLineSize(t *testing.T) {
	tests := []struct {
		name      string
		max       int64
		size      int
		delivered bool
	}{
		{"small at max", 1024, 1024, true},
		{"small under max", 1024, 1023, true},
		{"small over max", 1024, 1025, false},
		{"far over max", 1024, 10 * readBufSize, false},
		{"multi-buffer at max", 3 * readBufSize, 3 * readBufSize, true},
		{"multi-buffer over max", 3 * readBufSize, 3*readBufSize + 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := newRecorder()
			var ps problems
			c, peer := newRawPeer(t, &funcHandler{notify: rec.notify}, Options{MaxLineBytes: tt.max, OnProblem: ps.add})
			peer.send(padded(t, "big", tt.size))
			peer.send(`{"jsonrpc":"2.0","method":"next"}`)
			if tt.delivered {
				if m := <-rec.ch; m != "big" {
					t.Fatalf("got %q, want the big line", m)
				}
			}
			if m := <-rec.ch; m != "next" {
				t.Fatalf("got %q, want next", m)
			}
			got := ps.get()
			if tt.delivered {
				if len(got) != 0 {
					t.Fatalf("problems = %+v", got)
				}
				return
			}
			if len(got) != 1 || got[0].Kind != ProblemOversize || got[0].Bytes != int64(tt.size) {
				t.Fatalf("problems = %+v, want one oversize of %d bytes", got, tt.size)
			}
			if !strings.HasPrefix(got[0].Sample, `{"jsonrpc":"2.0","method":"big"`) || len(got[0].Sample) > lines.SampleBytes {
				t.Errorf("sample = %q", got[0].Sample)
			}
			if s := c.Stats(); s.Oversize != 1 || s.LinesIn != 1 {
				t.Errorf("stats = %+v", s)
			}
		})
	}
}

// repeatReader yields n copies of b, copying a prebuilt chunk so the test
// stays fast under -race.
type repeatReader struct {
	b     byte
	n     int64
	chunk []byte
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	if r.chunk == nil {
		r.chunk = bytes.Repeat([]byte{r.b}, 64<<10)
	}
	k := copy(p[:min(int64(len(p)), r.n)], r.chunk)
	r.n -= int64(k)
	return k, nil
}

// A ~100 MiB line (a base64 image, say) is decoded with the default max.
func TestHugeLineDefaultMax(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a few hundred MiB")
	}
	size := 100 << 20
	if testutil.Race {
		size = 16 << 20 // still far beyond the 64 KiB read buffer
	}
	in := io.MultiReader(
		strings.NewReader(`{"jsonrpc":"2.0","method":"session/update","params":{"data":"`),
		&repeatReader{b: 'Q', n: int64(size)},
		strings.NewReader(`"}}`+"\n"+`{"jsonrpc":"2.0","method":"after"}`),
	)
	var got []string
	var dataLen int
	h := &funcHandler{notify: func(_ context.Context, method string, params json.RawMessage) {
		got = append(got, method)
		if method == "session/update" {
			dataLen = len(params)
		}
	}}
	var ps problems
	c := NewConn(in, io.Discard, h, Options{OnProblem: ps.add})
	<-c.Done()
	if len(got) != 2 || got[0] != "session/update" || got[1] != "after" {
		t.Fatalf("notifications = %v", got)
	}
	if want := size + len(`{"data":""}`); dataLen != want {
		t.Fatalf("params length = %d, want %d", dataLen, want)
	}
	if p := ps.get(); len(p) != 0 {
		t.Fatalf("problems: %+v", p)
	}
	if !errors.Is(c.Err(), ErrPeerClosed) {
		t.Fatalf("Err() = %v", c.Err())
	}
}

// Non-JSON and non-JSON-RPC lines are skipped, counted and reported; the
// connection goes on.
func TestGarbageLines(t *testing.T) {
	tests := []struct {
		line  string
		kind  ProblemKind // 0: ignored silently
		reply string      // expected error response id, if any
	}{
		{line: ``},
		{line: "   \t"},
		{line: `npm WARN deprecated inflight@1.0.6`, kind: ProblemGarbage},
		{line: `Starting agent... {`, kind: ProblemGarbage},
		{line: `{not json}`, kind: ProblemGarbage},
		{line: `{"jsonrpc":"2.0","method":"x"`, kind: ProblemGarbage}, // truncated
		{line: `42`, kind: ProblemInvalid},
		{line: `"hello"`, kind: ProblemInvalid},
		{line: `[{"jsonrpc":"2.0","method":"x"}]`, kind: ProblemInvalid}, // batch
		{line: `{}`, kind: ProblemInvalid},
		{line: `{"foo":1}`, kind: ProblemInvalid},
		{line: `{"jsonrpc":"2.0","id":1}`, kind: ProblemInvalid},
		{line: `{"jsonrpc":"2.0","id":{"x":1},"method":"m"}`, kind: ProblemInvalid},
		{line: `{"jsonrpc":"2.0","result":1}`, kind: ProblemInvalid},
		{line: `{"jsonrpc":"2.0","id":7,"method":5}`, kind: ProblemInvalid, reply: `7`},
		{line: `{"jsonrpc":"2.0","id":"q","method":null}`, kind: ProblemInvalid, reply: `"q"`},
		{line: `{"jsonrpc":"2.0","id":999,"result":1}`, kind: ProblemUnknownResponse},
		{line: `{"jsonrpc":"2.0","id":"zz","error":{"code":1,"message":"m"}}`, kind: ProblemUnknownResponse},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			rec := newRecorder()
			var ps problems
			c, peer := newRawPeer(t, &funcHandler{notify: rec.notify}, Options{OnProblem: ps.add})
			peer.send(tt.line)
			peer.send(`{"jsonrpc":"2.0","method":"next"}`)
			if m := <-rec.ch; m != "next" {
				t.Fatalf("got %q, want next", m)
			}
			got := ps.get()
			if tt.kind == 0 {
				if len(got) != 0 {
					t.Fatalf("problems = %+v, want none", got)
				}
			} else if len(got) != 1 || got[0].Kind != tt.kind || got[0].Err == nil {
				t.Fatalf("problems = %+v, want one %v", got, tt.kind)
			}
			s := c.Stats()
			var want Stats
			switch tt.kind {
			case ProblemGarbage:
				want.Garbage = 1
			case ProblemInvalid:
				want.Invalid = 1
			case ProblemUnknownResponse:
				want.UnknownResponses = 1
			}
			if s.Garbage != want.Garbage || s.Invalid != want.Invalid || s.UnknownResponses != want.UnknownResponses {
				t.Errorf("stats = %+v", s)
			}
			if tt.reply != "" {
				resp := peer.recv()
				var e Error
				if err := json.Unmarshal(resp["error"], &e); err != nil || e.Code != CodeInvalidRequest || string(resp["id"]) != tt.reply {
					t.Fatalf("reply = %v, want -32600 for id %s", resp, tt.reply)
				}
			}
		})
	}
}

// A final line without newline is delivered at EOF, and '\r' is stripped.
func TestLineEndings(t *testing.T) {
	in := strings.NewReader("{\"jsonrpc\":\"2.0\",\"method\":\"crlf\",\"params\":[1]}\r\n" +
		"{\"jsonrpc\":\"2.0\",\"method\":\"last\",\"params\":[2]}")
	var got []string
	var traced []string
	h := &funcHandler{notify: func(_ context.Context, m string, p json.RawMessage) { got = append(got, m+string(p)) }}
	c := NewConn(in, io.Discard, h, Options{Trace: func(d Direction, line []byte) {
		traced = append(traced, d.String()+" "+string(line))
	}})
	<-c.Done()
	if len(got) != 2 || got[0] != "crlf[1]" || got[1] != "last[2]" {
		t.Fatalf("got %q", got)
	}
	if len(traced) != 2 || traced[0] != `in {"jsonrpc":"2.0","method":"crlf","params":[1]}` {
		t.Fatalf("trace = %q", traced)
	}
	if s := c.Stats(); s.LinesIn != 2 {
		t.Fatalf("stats = %+v", s)
	}
}

// Outbound: a cancelled Call sends $/cancel_request with its id.
func TestCancelOutbound(t *testing.T) {
	var ps problems
	c, peer := newRawPeer(t, nil, Options{OnProblem: ps.add})
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- c.Call(ctx, "session/prompt", map[string]string{"sessionId": "s"}, nil) }()
	req := peer.recv()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Call err = %v, want context.Canceled", err)
	}
	msg := peer.recv()
	if string(msg["method"]) != `"$/cancel_request"` || string(msg["params"]) != `{"requestId":`+string(req["id"])+`}` {
		t.Fatalf("cancel message = %v", msg)
	}
	if _, ok := msg["id"]; ok {
		t.Fatalf("cancel is not a notification: %v", msg)
	}
	// A late answer to the forgotten call is reported, not fatal.
	peer.send(`{"jsonrpc":"2.0","id":` + string(req["id"]) + `,"error":{"code":-32800,"message":"cancelled"}}`)
	var got string
	h := make(chan struct{})
	go func() {
		defer close(h)
		peer.send(`{"jsonrpc":"2.0","id":"p1","method":"ping"}`)
		resp := peer.recv()
		got = string(resp["id"])
	}()
	<-h
	if got != `"p1"` {
		t.Fatalf("conn stopped answering after a late response: %s", got)
	}
	if p := ps.get(); len(p) != 1 || p[0].Kind != ProblemUnknownResponse {
		t.Fatalf("problems = %+v", p)
	}
}

// Inbound: $/cancel_request cancels the matching handler ctx (string id),
// is not passed to HandleNotification, and the handler's ctx error becomes
// -32800.
func TestCancelInbound(t *testing.T) {
	rec := newRecorder()
	started := make(chan string, 2)
	h := &funcHandler{
		notify: rec.notify,
		request: func(ctx context.Context, method string, _ json.RawMessage) (any, error) {
			id, _ := RequestID(ctx)
			started <- id.String()
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}
	_, peer := newRawPeer(t, h, Options{})
	peer.send(`{"jsonrpc":"2.0","id":"req-1","method":"session/request_permission"}`)
	peer.send(`{"jsonrpc":"2.0","id":1,"method":"session/request_permission"}`)
	if a, b := <-started, <-started; a+b != `"req-1"1` && a+b != `1"req-1"` {
		t.Fatalf("started ids = %s, %s", a, b)
	}
	peer.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"req-1"}}`)
	resp := peer.recv()
	var e Error
	if err := json.Unmarshal(resp["error"], &e); err != nil || e.Code != CodeRequestCancelled || string(resp["id"]) != `"req-1"` {
		t.Fatalf("response = %v", resp)
	}
	peer.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}`)
	if resp := peer.recv(); string(resp["id"]) != "1" {
		t.Fatalf("response = %v", resp)
	}
	peer.send(`{"jsonrpc":"2.0","method":"next"}`)
	if m := <-rec.ch; m != "next" {
		t.Fatalf("handler saw %q, want next ($/cancel_request must be consumed)", m)
	}
}

// Cancellation end to end between two Conns.
func TestCancelBetweenConns(t *testing.T) {
	started := make(chan struct{})
	stopped := make(chan error, 1)
	server := &funcHandler{request: func(ctx context.Context, _ string, _ json.RawMessage) (any, error) {
		close(started)
		<-ctx.Done()
		stopped <- ctx.Err()
		return nil, ctx.Err()
	}}
	unknown := make(chan Problem, 1)
	client, _ := connPair(t, nil, server, Options{OnProblem: func(p Problem) { unknown <- p }}, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- client.Call(ctx, "slow", nil, nil) }()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Call err = %v", err)
	}
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Fatalf("handler ctx err = %v", err)
	}
	if p := <-unknown; p.Kind != ProblemUnknownResponse {
		t.Fatalf("problem = %+v", p)
	}
}

// Peer EOF fails every pending Call at once.
func TestPeerEOFFailsPendingCalls(t *testing.T) {
	c, peer := newRawPeer(t, nil, Options{})
	const n = 3
	errc := make(chan error, n)
	for range n {
		go func() { errc <- c.Call(t.Context(), "session/prompt", nil, nil) }()
	}
	for range n {
		peer.recv()
	}
	peer.send(`{"jsonrpc":"2.0","method":"last words"}`)
	peer.w.Close()
	for range n {
		err := <-errc
		var ce *ClosedError
		if !errors.Is(err, ErrClosed) || !errors.Is(err, ErrPeerClosed) || !errors.As(err, &ce) {
			t.Fatalf("Call err = %v, want ClosedError(ErrPeerClosed)", err)
		}
	}
	<-c.Done()
	if err := c.Err(); err != ErrPeerClosed {
		t.Fatalf("Err() = %v", err)
	}
	if err := c.Call(t.Context(), "x", nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Call after close = %v", err)
	}
	if err := c.Notify(t.Context(), "x", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Notify after close = %v", err)
	}
}

type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("agent exited with code %d", e.code) }

// Close(cause) fails pending Calls with cause, cancels handler contexts, and
// wins over the EOF that follows.
func TestCloseCause(t *testing.T) {
	handlerDone := make(chan error, 1)
	started := make(chan struct{})
	h := &funcHandler{request: func(ctx context.Context, _ string, _ json.RawMessage) (any, error) {
		close(started)
		<-ctx.Done()
		handlerDone <- context.Cause(ctx)
		return "too late", nil // dropped silently
	}}
	c, peer := newRawPeer(t, h, Options{})
	errc := make(chan error, 1)
	go func() { errc <- c.Call(t.Context(), "session/prompt", nil, nil) }()
	peer.recv()
	peer.send(`{"jsonrpc":"2.0","id":0,"method":"fs/read_text_file"}`)
	<-started

	cause := &exitError{code: 137}
	if err := c.Close(cause); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(errors.New("second")); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	err := <-errc
	var ee *exitError
	if !errors.Is(err, ErrClosed) || !errors.Is(err, cause) || !errors.As(err, &ee) || ee.code != 137 {
		t.Fatalf("Call err = %v", err)
	}
	if err := <-handlerDone; !errors.Is(err, cause) {
		t.Fatalf("handler ctx cause = %v", err)
	}
	<-c.Done()
	peer.w.Close() // EOF after Close must not replace the cause
	if err := c.Err(); err != cause {
		t.Fatalf("Err() = %v, want %v", err, cause)
	}
}

type errWriter struct{ err error }

func (w errWriter) Write([]byte) (int, error) { return 0, w.err }

// A write error ends the connection with that cause.
func TestWriteErrorCloses(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	werr := errors.New("broken pipe")
	c := NewConn(r, errWriter{werr}, nil, Options{})
	err := c.Call(t.Context(), "initialize", nil, nil)
	if !errors.Is(err, ErrClosed) || !errors.Is(err, werr) {
		t.Fatalf("Call err = %v", err)
	}
	<-c.Done()
	if !errors.Is(c.Err(), werr) {
		t.Fatalf("Err() = %v", c.Err())
	}
}

// A null result decodes fine into a struct pointer; nil results encode as
// "result":null; peer errors come back as *Error.
func TestResults(t *testing.T) {
	h := &funcHandler{request: func(_ context.Context, method string, _ json.RawMessage) (any, error) {
		switch method {
		case "nil":
			return nil, nil
		case "plain-error":
			return nil, errors.New("disk on fire")
		case "rpc-error":
			return nil, fmt.Errorf("wrapped: %w", &Error{Code: CodeAuthRequired, Message: "auth", Data: json.RawMessage(`{"methods":["x"]}`)})
		case "unencodable":
			return make(chan int), nil
		}
		return nil, ErrMethodNotFound(method)
	}}
	c, peer := newRawPeer(t, h, Options{})

	t.Run("null result into struct", func(t *testing.T) {
		errc := make(chan error, 1)
		got := struct{ A int }{A: 0}
		go func() { errc <- c.Call(t.Context(), "session/cancel", nil, &got) }()
		req := peer.recv()
		peer.send(`{"jsonrpc":"2.0","id":` + string(req["id"]) + `,"result":null}`)
		if err := <-errc; err != nil || got.A != 0 {
			t.Fatalf("err = %v, got = %+v", err, got)
		}
	})
	t.Run("nil result target", func(t *testing.T) {
		errc := make(chan error, 1)
		go func() { errc <- c.Call(t.Context(), "x", nil, nil) }()
		req := peer.recv()
		peer.send(`{"jsonrpc":"2.0","id":` + string(req["id"]) + `,"result":{"a":1}}`)
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	})
	t.Run("peer error", func(t *testing.T) {
		errc := make(chan error, 1)
		go func() { errc <- c.Call(t.Context(), "x", nil, nil) }()
		req := peer.recv()
		peer.send(`{"jsonrpc":"2.0","id":` + string(req["id"]) + `,"error":{"code":-32002,"message":"no such file","data":{"path":"/x"}}}`)
		var e *Error
		if err := <-errc; !errors.As(err, &e) || e.Code != CodeResourceNotFound || string(e.Data) != `{"path":"/x"}` {
			t.Fatalf("err = %v", err)
		}
	})

	tests := []struct {
		method string
		want   string // "result" or error code
		code   int
		msg    string
	}{
		{method: "nil", want: "result"},
		{method: "plain-error", code: CodeInternalError, msg: "disk on fire"},
		{method: "rpc-error", code: CodeAuthRequired, msg: "auth"},
		{method: "unknown", code: CodeMethodNotFound, msg: "method not found: unknown"},
		{method: "unencodable", code: CodeInternalError},
	}
	for _, tt := range tests {
		t.Run("serve "+tt.method, func(t *testing.T) {
			peer.send(`{"jsonrpc":"2.0","id":5,"method":"` + tt.method + `"}`)
			resp := peer.recv()
			if string(resp["id"]) != "5" {
				t.Fatalf("id = %s", resp["id"])
			}
			if tt.want == "result" {
				if r, ok := resp["result"]; !ok || string(r) != "null" {
					t.Fatalf("response = %v, want result null", resp)
				}
				return
			}
			var e Error
			if err := json.Unmarshal(resp["error"], &e); err != nil || e.Code != tt.code || (tt.msg != "" && e.Message != tt.msg) {
				t.Fatalf("response = %v", resp)
			}
			if _, ok := resp["result"]; ok {
				t.Fatalf("error response carries result: %v", resp)
			}
		})
	}
}

// A slow handler blocks neither other requests nor notifications.
func TestSlowHandlerDoesNotStall(t *testing.T) {
	release := make(chan struct{})
	slowStarted := make(chan struct{})
	rec := newRecorder()
	server := &funcHandler{
		notify: rec.notify,
		request: func(ctx context.Context, method string, _ json.RawMessage) (any, error) {
			if method == "slow" {
				close(slowStarted)
				<-release
				return "slow done", nil
			}
			return rec.count(), nil
		},
	}
	client, _ := connPair(t, nil, server, Options{}, Options{})
	slowErr := make(chan error, 1)
	var slowResult string
	go func() { slowErr <- client.Call(t.Context(), "slow", nil, &slowResult) }()
	<-slowStarted
	for range 10 {
		if err := client.Notify(t.Context(), "session/update", nil); err != nil {
			t.Fatal(err)
		}
	}
	var seen int
	if err := client.Call(t.Context(), "fast", nil, &seen); err != nil {
		t.Fatal(err)
	}
	if seen != 10 {
		t.Fatalf("fast saw %d notifications, want 10", seen)
	}
	close(release)
	if err := <-slowErr; err != nil || slowResult != "slow done" {
		t.Fatalf("slow: %v %q", err, slowResult)
	}
}

func TestConcurrentCalls(t *testing.T) {
	server := &funcHandler{request: func(_ context.Context, _ string, params json.RawMessage) (any, error) {
		return params, nil
	}}
	var traced atomic.Int64
	client, _ := connPair(t, nil, server, Options{Trace: func(Direction, []byte) { traced.Add(1) }}, Options{})
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 50 {
				in := map[string]int{"g": g, "i": i}
				var out map[string]int
				if err := client.Call(t.Context(), "echo", in, &out); err != nil {
					t.Error(err)
					return
				}
				if out["g"] != g || out["i"] != i {
					t.Errorf("echo(%v) = %v", in, out)
					return
				}
			}
		})
	}
	wg.Wait()
	s := client.Stats()
	if s.LinesOut != 16*50 || s.LinesIn != 16*50 || traced.Load() != 2*16*50 {
		t.Fatalf("stats = %+v, traced %d", s, traced.Load())
	}
}

// Notifications stay in wire order while the reader switches between
// dispatching them itself (the dispatcher idle) and queueing them behind
// requests the dispatcher holds.
func TestOrderingAcrossInlineAndQueued(t *testing.T) {
	rec := newRecorder()
	var requests atomic.Int64
	h := &funcHandler{
		notify: rec.notify,
		request: func(context.Context, string, json.RawMessage) (any, error) {
			requests.Add(1)
			return nil, nil
		},
	}
	c, peer := newRawPeer(t, h, Options{})
	const n = 600
	go func() {
		for i := range n {
			if i%7 == 0 {
				peer.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"x"}`, i))
			}
			peer.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"n":%d}}`, i))
		}
	}()
	for range n {
		<-rec.ch
	}
	rec.mu.Lock()
	for i, got := range rec.seen {
		if want := fmt.Sprintf(`session/update {"n":%d}`, i); got != want {
			t.Fatalf("notification %d = %s, want %s", i, got, want)
		}
	}
	rec.mu.Unlock()
	for range (n + 6) / 7 {
		peer.recv() // every request answered
	}
	if got := requests.Load(); got != (n+6)/7 {
		t.Fatalf("%d requests handled", got)
	}
	_ = c
}

// goroutineID is the running goroutine's number, from its stack header.
func goroutineID() string {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf[:n]), "goroutine "), " ")
	return id
}

// Requests answered one after the other run on one goroutine, so that a
// flood of permission requests does not grow a new stack for each; a
// burst of blocked requests each gets its own, and what stays waiting for
// the next request afterwards is bounded and ends with the connection.
func TestServerGoroutinesReused(t *testing.T) {
	var mu sync.Mutex
	ids := map[string]int{}
	release := make(chan struct{})
	var started sync.WaitGroup
	server := &funcHandler{request: func(_ context.Context, method string, _ json.RawMessage) (any, error) {
		if method == "block" {
			started.Done()
			<-release
		}
		mu.Lock()
		ids[goroutineID()]++
		mu.Unlock()
		return nil, nil
	}}
	client, srv := connPair(t, nil, server, Options{}, Options{})
	for range 100 {
		if err := client.Call(t.Context(), "seq", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	// A request that comes before the last one's server waits again (its
	// reply is written first) gets a new server; once maxIdleServers wait,
	// one of them is always free for the next.
	if len(ids) > maxIdleServers+1 {
		t.Fatalf("100 sequential requests ran on %d goroutines, want at most %d", len(ids), maxIdleServers+1)
	}

	const burst = 3 * maxIdleServers
	started.Add(burst)
	errs := make(chan error, burst)
	for range burst {
		go func() { errs <- client.Call(t.Context(), "block", nil, nil) }()
	}
	started.Wait() // every one is running at once: none waits for another
	close(release)
	for range burst {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	srv.Wait()
	// Each server counts itself idle just after its request; wait for all
	// of them (no clock: the burst has ended, so this can only settle).
	for srv.idleServers.Load() < maxIdleServers {
		runtime.Gosched()
	}
	if n := srv.idleServers.Load(); n != maxIdleServers {
		t.Fatalf("%d server goroutines wait for work, want %d", n, maxIdleServers)
	}
	// The rest end with the connection: TestMain's goleak checks that.
}

// written is a result that writes itself, or declines to (after writing
// something, which must not reach the wire).
type written struct {
	text    string
	decline bool
}

func (w written) WriteResult(buf *bytes.Buffer) bool {
	if w.decline {
		buf.WriteString(`{"half":`)
		return false
	}
	buf.WriteString(`{"text":`)
	json.NewEncoder(buf).Encode(w.text) // test only: the newline is valid JSON whitespace
	buf.Truncate(buf.Len() - 1)
	buf.WriteString(`}`)
	return true
}

// MarshalJSON is what encoding/json writes when WriteResult declines.
func (w written) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]string{"encoded": w.text})
}

// A ResultWriter's reply is the line encoding/json writes for the same
// envelope; one that declines is encoded, nothing of what it wrote kept.
func TestResultWriter(t *testing.T) {
	server := &funcHandler{request: func(_ context.Context, method string, _ json.RawMessage) (any, error) {
		return written{text: `a "b" <c>`, decline: method == "decline"}, nil
	}}
	_, peer := newRawPeer(t, server, Options{})
	for _, tc := range []struct{ id, method, want string }{
		{`7`, "write", `{"jsonrpc":"2.0","id":7,"result":{"text":"a \"b\" \u003cc\u003e"}}`},
		{`"s-1"`, "write", `{"jsonrpc":"2.0","id":"s-1","result":{"text":"a \"b\" \u003cc\u003e"}}`},
		{`8`, "decline", `{"jsonrpc":"2.0","id":8,"result":{"encoded":"a \"b\" \u003cc\u003e"}}`},
	} {
		peer.send(`{"jsonrpc":"2.0","id":` + tc.id + `,"method":"` + tc.method + `"}`)
		if got := string(<-peer.lines); got != tc.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.method, got, tc.want)
		}
	}
}

// A server waiting for the next request does not keep the last one's
// params: a large request's bytes can go once it is answered.
func TestIdleServerKeepsNoParams(t *testing.T) {
	freed := make(chan struct{})
	server := &funcHandler{request: func(_ context.Context, _ string, params json.RawMessage) (any, error) {
		runtime.AddCleanup(&params[0], func(ch chan struct{}) { close(ch) }, freed)
		return nil, nil
	}}
	client, _ := connPair(t, nil, server, Options{}, Options{})
	if err := client.Call(t.Context(), "big", map[string]string{"pad": strings.Repeat("x", 1<<20)}, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		runtime.GC()
		select {
		case <-freed:
			return
		default:
		}
		if i == 1000 {
			t.Fatal("the answered request's params are still reachable")
		}
		runtime.Gosched()
	}
}

// arrivingHandler is a funcHandler told of requests as they come.
type arrivingHandler struct {
	funcHandler
	arrived func(method string, id ID)
}

func (h *arrivingHandler) Arrived(method string, id ID) { h.arrived(method, id) }

// An Arriver is told of every request in wire order, each before its
// handler runs, even while earlier requests are still being served.
func TestArrivedInWireOrder(t *testing.T) {
	var mu sync.Mutex
	var wire, arrived []string
	seen := map[string]bool{}
	release := make(chan struct{})
	h := &arrivingHandler{arrived: func(method string, id ID) {
		mu.Lock()
		arrived = append(arrived, id.String())
		seen[id.String()] = true
		mu.Unlock()
	}}
	h.request = func(ctx context.Context, _ string, _ json.RawMessage) (any, error) {
		id, _ := RequestID(ctx)
		mu.Lock()
		ok := seen[id.String()]
		mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("request %s ran before it arrived", id)
		}
		<-release // every request is still being served as the next comes
		return nil, nil
	}
	trace := func(dir Direction, line []byte) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if dir == In && json.Unmarshal(line, &m) == nil && m.Method != "" {
			mu.Lock()
			wire = append(wire, string(m.ID))
			mu.Unlock()
		}
	}
	client, _ := connPair(t, nil, h, Options{}, Options{Trace: trace})
	const n = 40
	errs := make(chan error, n)
	for range n {
		go func() { errs <- client.Call(t.Context(), "m", nil, nil) }()
	}
	for {
		mu.Lock()
		k := len(arrived)
		mu.Unlock()
		if k == n {
			break
		}
		runtime.Gosched()
	}
	close(release)
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(wire, arrived) {
		t.Fatalf("arrived in the order %v, the wire's was %v", arrived, wire)
	}
}

// WriteParams is written's ParamsWriter, the same as its WriteResult.
type writtenParams struct{ written }

func (w writtenParams) WriteParams(buf *bytes.Buffer) bool { return w.WriteResult(buf) }

// A ParamsWriter's notification is the line encoding/json writes for the
// same params; one that declines is encoded, nothing it wrote kept.
func TestParamsWriter(t *testing.T) {
	c, peer := newRawPeer(t, nil, Options{})
	for _, tc := range []struct {
		method string
		params any
		want   string
	}{
		{"note/x", writtenParams{written{text: `a "b" <c>`}}, `{"jsonrpc":"2.0","method":"note/x","params":{"text":"a \"b\" \u003cc\u003e"}}`},
		{"a \"q\"", writtenParams{written{text: "t"}}, `{"jsonrpc":"2.0","method":"a \"q\"","params":{"text":"t"}}`},
		{"note/y", writtenParams{written{text: "t", decline: true}}, `{"jsonrpc":"2.0","method":"note/y","params":{"encoded":"t"}}`},
	} {
		if err := c.Notify(t.Context(), tc.method, tc.params); err != nil {
			t.Fatal(err)
		}
		if got := string(<-peer.lines); got != tc.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.method, got, tc.want)
		}
	}
}
