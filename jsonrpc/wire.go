package jsonrpc

import (
	"bytes"
	"encoding/json"
	"sync"
)

const (
	defaultMaxLineBytes     = 256 << 20
	defaultMaxInflight      = 256
	defaultMaxInflightBytes = 256 << 20
	readBufSize             = 64 << 10
	// keepAccBytes bounds the pooled encode buffers, so one 100 MiB
	// message does not pin 100 MiB for the life of the connection.
	keepAccBytes = 1 << 20
)

// envelope is the decoding target for every inbound line: one
// json.Unmarshal, no second pass. json.RawMessage fields are fresh copies, so
// they stay valid after the read buffer is reused.
type envelope struct {
	JSONRPC versionTag      `json:"jsonrpc"`
	ID      wireID          `json:"id"`
	Method  methodName      `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`

	kind   msgKind // set by classify
	rpcErr *Error  // decoded Error, for responses
	size   int64   // bytes of the line, for the in-flight bound
}

type msgKind uint8

const (
	kindNotification msgKind = iota + 1
	kindRequest
	kindResponse
)

// versionTag records whether "jsonrpc" was "2.0" without allocating. It is
// not enforced: some agents omit it, and rejecting them gains nothing.
type versionTag bool

func (v *versionTag) UnmarshalJSON(b []byte) error {
	*v = string(b) == `"2.0"`
	return nil
}

// wireID keeps the id text verbatim and never fails decoding, so that a
// malformed id is reported as an invalid message instead of aborting the
// decode. Absent is "", JSON null is "null".
type wireID string

func (w *wireID) UnmarshalJSON(b []byte) error {
	*w = wireID(b)
	return nil
}

func (w wireID) present() bool { return w != "" }
func (w wireID) valid() bool   { return validID([]byte(w)) }

// methodName records presence separately from the value, so that
// {"method": 5, "id": 1} can be answered -32600 rather than mistaken for a
// response.
type methodName struct {
	name    string
	present bool
}

func (m *methodName) UnmarshalJSON(b []byte) error {
	m.present = true
	if len(b) < 2 || b[0] != '"' {
		return nil // not a string: left empty, reported by classify
	}
	if bytes.IndexByte(b, '\\') < 0 {
		raw := b[1 : len(b)-1]
		if known, ok := knownMethods[string(raw)]; ok { // lookup does not allocate
			m.name = known
		} else {
			m.name = string(raw)
		}
		return nil
	}
	if err := json.Unmarshal(b, &m.name); err != nil {
		m.name = ""
	}
	return nil
}

// knownMethods interns the ACP method names seen on the hot path, saving an
// allocation per message. It is fixed, so a peer cannot grow it.
var knownMethods = func() map[string]string {
	m := make(map[string]string)
	for _, name := range []string{
		CancelRequestMethod, "initialize", "authenticate",
		"session/new", "session/load", "session/prompt", "session/cancel",
		"session/set_mode", "session/set_model", "session/update", "session/request_permission",
		"fs/read_text_file", "fs/write_text_file",
		"terminal/create", "terminal/output", "terminal/wait_for_exit", "terminal/kill", "terminal/release",
	} {
		m[name] = name
	}
	return m
}()

// isNull reports whether a raw field is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// Outbound messages. The "jsonrpc" member is always present.
type outRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      *int64 `json:"id,omitempty"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

type outResult struct {
	JSONRPC string `json:"jsonrpc"`
	ID      ID     `json:"id"`
	Result  any    `json:"result"` // nil encodes as "result":null
}

type outError struct {
	JSONRPC string `json:"jsonrpc"`
	ID      ID     `json:"id"`
	Error   *Error `json:"error"`
}

type cancelParams struct {
	RequestID wireID `json:"requestId"`
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// encodeLine encodes v followed by '\n' into a pooled buffer; the caller
// must return it with putBuf.
func encodeLine(v any) (*bytes.Buffer, error) {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false) // keep agent text readable in transcripts
	if err := enc.Encode(v); err != nil {
		putBuf(buf)
		return nil, err
	}
	return buf, nil
}

func putBuf(buf *bytes.Buffer) {
	if buf.Cap() <= keepAccBytes {
		bufPool.Put(buf)
	}
}
