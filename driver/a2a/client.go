package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/quota"
)

// A2A error codes tai branches on (spec §2.5).
const (
	codeMethodNotFound       = -32601
	codeTaskNotFound         = -32001
	codeTaskNotCancelable    = -32002
	codeUnsupportedOperation = -32004
	codeVersionNotSupported  = -32009
)

// defaultMaxFrame bounds a response body or an SSE event.
const defaultMaxFrame = 16 << 20

// HTTPError is an HTTP answer that is not a JSON-RPC response.
type HTTPError struct {
	Method string
	URL    string
	Status int
	Body   string // its start
}

func (e *HTTPError) Error() string {
	s := fmt.Sprintf("a2a: %s at %s: HTTP %d", e.Method, e.URL, e.Status)
	if b := strings.TrimSpace(e.Body); b != "" {
		s += ": " + b
	}
	return s
}

// limited: err is the agent's usage or rate limit (an HTTP 429, a
// JSON-RPC error that names one).
func limited(err error, now time.Time) bool {
	_, ok := quota.FromError(err, now)
	return ok
}

// remoteCode is the JSON-RPC error code of err, or 0.
func remoteCode(err error) int {
	var re *driver.RemoteError
	if errors.As(err, &re) {
		return re.Code
	}
	return 0
}

// notSpoken: the endpoint does not speak this dialect, so negotiation
// tries the next one.
func notSpoken(err error) bool {
	switch remoteCode(err) {
	case codeMethodNotFound, codeVersionNotSupported:
		return true
	}
	var he *HTTPError
	return errors.As(err, &he) && (he.Status == http.StatusNotFound || he.Status == http.StatusMethodNotAllowed)
}

// client is a JSON-RPC 2.0 client over HTTP POST, answering with a JSON
// body or an SSE stream of responses.
type client struct {
	hc    *http.Client
	trace func(dir string, b []byte)
	max   int64
	now   func() time.Time // the session's clock, for relative reset times
	next  atomic.Int64
}

type rpcResponse struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// result is the response's result, or its error as a *driver.RemoteError.
func (r *rpcResponse) result(method string) (json.RawMessage, error) {
	if r.Error != nil {
		return nil, &driver.RemoteError{Method: method, Code: r.Error.Code, Message: r.Error.Message, Data: r.Error.Data}
	}
	if len(r.Result) == 0 {
		return nil, fmt.Errorf("%w: %s: a JSON-RPC response with neither result nor error", driver.ErrProtocol, method)
	}
	return r.Result, nil
}

func (c *client) post(ctx context.Context, ep endpoint, method string, params any, accept string) (*http.Response, error) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.next.Add(1), "method": method, "params": params})
	if err != nil {
		return nil, fmt.Errorf("a2a: encoding %s: %w", method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("a2a: %s: %w", method, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	if ep.d.version != "" {
		req.Header.Set("A2A-Version", ep.d.version)
	}
	if c.trace != nil {
		c.trace("out", body)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("a2a: %s: %w", method, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		c.traceIn(b)
		// Some servers put the JSON-RPC error in a 4xx/5xx body.
		var herr error = &HTTPError{Method: method, URL: ep.url, Status: resp.StatusCode, Body: string(b[:min(len(b), 512)])}
		var r rpcResponse
		if json.Unmarshal(b, &r) == nil && r.Error != nil {
			_, herr = r.result(method)
		}
		// A 429 (or a 503 with Retry-After) is the agent's limit, whatever
		// the call: it parks the run instead of failing it.
		if l, ok := quota.FromHTTP(resp.StatusCode, resp.Header, herr, c.clock()); ok {
			return nil, &quota.Error{Limit: l, Err: herr}
		}
		return nil, herr
	}
	return resp, nil
}

func (c *client) clock() time.Time {
	if c.now == nil {
		return time.Now()
	}
	return c.now()
}

func (c *client) traceIn(b []byte) {
	if c.trace != nil && len(b) > 0 {
		c.trace("in", bytes.TrimSpace(b))
	}
}

// readBody reads a body of at most c.max bytes.
func (c *client) readBody(method string, r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, c.max+1))
	if err != nil {
		return nil, fmt.Errorf("a2a: reading the %s answer: %w", method, err)
	}
	if int64(len(b)) > c.max {
		return nil, fmt.Errorf("%w: %s: the answer is over %d bytes", driver.ErrProtocol, method, c.max)
	}
	c.traceIn(b)
	return b, nil
}

// call makes one request and returns its result.
func (c *client) call(ctx context.Context, ep endpoint, method string, params any) (json.RawMessage, error) {
	resp, err := c.post(ctx, ep, method, params, "application/json")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := c.readBody(method, resp.Body)
	if err != nil {
		return nil, err
	}
	var r rpcResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%w: %s: the answer is not JSON-RPC: %w", driver.ErrProtocol, method, err)
	}
	return r.result(method)
}

// stream makes a streaming request. A server may answer it with SSE or,
// before the stream starts (an error, a server without streaming), with a
// plain JSON-RPC response: that becomes a one-item stream.
func (c *client) stream(ctx context.Context, ep endpoint, method string, params any) (*rpcStream, error) {
	resp, err := c.post(ctx, ep, method, params, "text/event-stream")
	if err != nil {
		return nil, err
	}
	st := &rpcStream{c: c, method: method, body: resp.Body}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		st.sse = newSSEReader(resp.Body, c.max)
		return st, nil
	}
	defer resp.Body.Close()
	b, err := c.readBody(method, resp.Body)
	if err != nil {
		return nil, err
	}
	var r rpcResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%w: %s: the answer is neither SSE nor JSON-RPC: %w", driver.ErrProtocol, method, err)
	}
	res, err := r.result(method)
	if err != nil {
		return nil, err
	}
	st.single = res
	return st, nil
}

// FrameError is a stream item tai could not read (not JSON, not a JSON-RPC
// response). The stream stays usable.
type FrameError struct {
	Frame []byte // its start
	Err   error
}

func (e *FrameError) Error() string {
	return fmt.Sprintf("a2a: unreadable stream frame %q: %v", e.Frame, e.Err)
}

func (e *FrameError) Unwrap() error { return e.Err }

// rpcStream yields the results of a streamed JSON-RPC call.
type rpcStream struct {
	c      *client
	method string
	body   io.ReadCloser
	sse    *sseReader
	single json.RawMessage
}

// Next returns the next result. Errors: a *driver.RemoteError for an error
// frame (the stream is over), a *FrameError or *OversizeError for an item
// skipped (call Next again), io.EOF when the server closed the stream, or
// the transport's error when the connection broke.
func (s *rpcStream) Next() (json.RawMessage, error) {
	if s.sse == nil {
		if s.single == nil {
			return nil, io.EOF
		}
		r := s.single
		s.single = nil
		return r, nil
	}
	data, err := s.sse.Next()
	if err != nil {
		return nil, err
	}
	s.c.traceIn(data)
	var r rpcResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, &FrameError{Frame: data[:min(len(data), 200)], Err: err}
	}
	res, err := r.result(s.method)
	if errors.Is(err, driver.ErrProtocol) {
		return nil, &FrameError{Frame: data[:min(len(data), 200)], Err: err}
	}
	return res, err
}

// Close ends the stream, dropping the connection if it is still open.
func (s *rpcStream) Close() error { return s.body.Close() }
