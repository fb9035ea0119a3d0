// Package jsonrpc implements JSON-RPC 2.0 over newline-delimited JSON
// (one message per line), as spoken by the Agent Client Protocol (ACP) over
// stdio.
//
// A [Conn] is symmetric: either side can Call, Notify and serve the peer's
// requests through a [Handler]. It is built to survive misbehaving agents:
// the peer's request ids live in their own id space (so an agent reusing id 0
// cannot confuse our pending calls), non-JSON log lines and oversize lines are
// skipped and reported instead of killing the connection, and a peer that dies
// mid-request fails every pending Call at once with a [*ClosedError].
//
// Messages are classified by the presence of "method" (a request if it also
// carries an id, a notification otherwise); anything else with "result" or
// "error" is a response. Inbound messages are handled strictly in wire order:
// a request or a response is only acted on after every notification that
// preceded it has been handled.
package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// CancelRequestMethod is the notification either side sends to cancel one of
// its in-flight requests; params are {"requestId": <id>}.
const CancelRequestMethod = "$/cancel_request"

// Error codes used by JSON-RPC 2.0 and ACP.
const (
	CodeParseError       = -32700
	CodeInvalidRequest   = -32600
	CodeMethodNotFound   = -32601
	CodeInvalidParams    = -32602
	CodeInternalError    = -32603
	CodeRequestCancelled = -32800
	CodeAuthRequired     = -32000
	CodeResourceNotFound = -32002
)

// ErrClosed is matched (via errors.Is) by every error caused by the
// connection having ended, whatever the cause.
var ErrClosed = errors.New("jsonrpc: connection closed")

// ErrPeerClosed is the cause recorded when the peer closed its output (EOF).
var ErrPeerClosed = errors.New("jsonrpc: peer closed the connection")

// ClosedError is returned by operations on a connection that has ended.
// errors.Is matches both [ErrClosed] and Cause.
type ClosedError struct {
	Cause error
}

func (e *ClosedError) Error() string {
	if e.Cause == nil {
		return ErrClosed.Error()
	}
	return ErrClosed.Error() + ": " + e.Cause.Error()
}

// Unwrap returns ErrClosed and the cause, so that errors.Is and errors.As see
// both.
func (e *ClosedError) Unwrap() []error {
	if e.Cause == nil {
		return []error{ErrClosed}
	}
	return []error{ErrClosed, e.Cause}
}

// Error is a JSON-RPC error object. A Call answered with an error returns it
// as *Error; a Handler returning an *Error has it sent verbatim.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("jsonrpc: error %d: %s", e.Code, e.Message)
}

// ErrMethodNotFound returns the standard -32601 error for method.
func ErrMethodNotFound(method string) *Error {
	return &Error{Code: CodeMethodNotFound, Message: "method not found: " + method}
}

// ID is a request id, holding its JSON text verbatim (a number or a string),
// so that the peer's ids are echoed exactly as received: string stays string,
// 0 stays 0. The zero ID means "no id" and encodes as null.
type ID struct {
	raw string
}

// Int64ID returns a numeric ID.
func Int64ID(n int64) ID { return ID{raw: strconv.FormatInt(n, 10)} }

// StringID returns a string ID.
func StringID(s string) ID {
	b, _ := json.Marshal(s) // marshalling a string cannot fail
	return ID{raw: string(b)}
}

// String returns the id's JSON text, e.g. `7` or `"abc"`; "" for the zero ID.
func (id ID) String() string { return id.raw }

// IsZero reports whether id is absent (an explicit JSON null is not zero).
func (id ID) IsZero() bool { return id.raw == "" }

// MarshalJSON returns the id verbatim, or null for the zero ID.
func (id ID) MarshalJSON() ([]byte, error) {
	if id.raw == "" {
		return []byte("null"), nil
	}
	return []byte(id.raw), nil
}

// UnmarshalJSON stores a JSON number, string or null verbatim.
func (id *ID) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if !validID(b) {
		return fmt.Errorf("jsonrpc: invalid id %.40q: must be a number or a string", b)
	}
	id.raw = string(b)
	return nil
}

// validID reports whether raw JSON text is acceptable as an id. The decoder
// has already checked the text is valid JSON, so the first byte decides.
func validID(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	switch c := b[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return true
	}
	return string(b) == "null"
}

// int64Value returns the id as one of our own call numbers. A peer that
// echoes our number as a string is tolerated.
func (id ID) int64Value() (int64, bool) {
	s := id.raw
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

type requestIDKey struct{}

// RequestID returns the peer's id of the request being served by ctx, as
// passed to [Handler.HandleRequest].
func RequestID(ctx context.Context) (ID, bool) {
	id, ok := ctx.Value(requestIDKey{}).(ID)
	return id, ok
}
