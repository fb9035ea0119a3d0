package a2a

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll drains an SSE reader: the events' data, "!oversize" for each
// event skipped, and the error that ended it.
func readAll(r *sseReader) ([]string, error) {
	var out []string
	for {
		data, err := r.Next()
		var oe *OversizeError
		switch {
		case errors.As(err, &oe):
			out = append(out, "!oversize")
			continue
		case err != nil:
			return out, err
		}
		out = append(out, string(data))
	}
}

func TestSSEReader(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		name string
		in   string
		max  int64
		want []string
		err  error
	}{
		{"a2a-go frames", "id: 1\ndata: {\"a\":1}\n\nid: 2\ndata: {\"b\":2}\n\n", 0, []string{`{"a":1}`, `{"b":2}`}, io.EOF},
		{"event, comments, retry, unknown fields", ": ping\nevent: message\nretry: 10\nfoo: bar\ndata: x\n\n", 0, []string{"x"}, io.EOF},
		{"multi-line data joined", "data: {\"a\":\ndata: 1}\n\n", 0, []string{"{\"a\":\n1}"}, io.EOF},
		{"no space after the colon, and CRLF", "data:x\r\n\r\ndata:  y\r\n\r\n", 0, []string{"x", " y"}, io.EOF},
		{"data with no colon is empty data", "data\n\n", 0, []string{""}, io.EOF},
		{"blank lines without data dispatch nothing", "\n\n: c\n\n\ndata: z\n\n", 0, []string{"z"}, io.EOF},
		{"an event cut off at EOF is dropped", "data: a\n\ndata: b", 0, []string{"a"}, io.EOF},
		{"an event cut off after its data line is dropped", "data: a\n\ndata: b\n", 0, []string{"a"}, io.EOF},
		{"oversize line skipped, the stream goes on", "data: " + long + "\n\ndata: ok\n\n", 32, []string{"!oversize", "ok"}, io.EOF},
		{"oversize comment skipped quietly", ": " + long + "\ndata: ok\n\n", 32, []string{"ok"}, io.EOF},
		{"oversize id skipped quietly", "id: " + long + "\ndata: ok\n\n", 32, []string{"ok"}, io.EOF},
		{"oversize event of short lines", strings.Repeat("data: 0123456789\n", 10) + "\ndata: ok\n\n", 64, []string{"!oversize", "ok"}, io.EOF},
		{"exactly at the limit", "data: " + strings.Repeat("y", 26) + "\n\n", 32, []string{strings.Repeat("y", 26)}, io.EOF},
		{"garbage bytes are data like any other", "data: \x00\xff{not json\n\n", 0, []string{"\x00\xff{not json"}, io.EOF},
		{"no newline at all", strings.Repeat("z", 1000), 64, nil, io.EOF},
		{"empty stream", "", 0, nil, io.EOF},
	}
	for _, tt := range tests {
		for _, split := range []bool{false, true} {
			name := tt.name
			if split {
				name += " (one byte per read)"
			}
			t.Run(name, func(t *testing.T) {
				var r io.Reader = strings.NewReader(tt.in)
				if split {
					r = iotest.OneByteReader(r)
				}
				got, err := readAll(newSSEReader(r, tt.max))
				if !errors.Is(err, tt.err) {
					t.Errorf("err %v, want %v", err, tt.err)
				}
				if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
					t.Errorf("got %q, want %q", got, tt.want)
				}
			})
		}
	}
}

func TestSSEReaderBrokenConnection(t *testing.T) {
	broken := errors.New("connection reset")
	r := newSSEReader(io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(broken)), 0)
	got, err := readAll(r)
	if !errors.Is(err, broken) || len(got) != 1 || got[0] != "a" {
		t.Errorf("got %q, %v", got, err)
	}
}

func TestSSEReaderHugeLineIsNotBuffered(t *testing.T) {
	// 8 MiB in one line against a 1 KiB limit: skipped while streaming.
	in := io.MultiReader(strings.NewReader("data: "), bytes.NewReader(bytes.Repeat([]byte("a"), 8<<20)), strings.NewReader("\n\ndata: ok\n\n"))
	r := newSSEReader(in, 1<<10)
	got, err := readAll(r)
	if !errors.Is(err, io.EOF) || strings.Join(got, "|") != "!oversize|ok" {
		t.Errorf("got %q, %v", got, err)
	}
	if r.data.Cap() > 4<<10 {
		t.Errorf("buffered %d bytes", r.data.Cap())
	}
}

func TestRPCStreamFrames(t *testing.T) {
	c := &client{max: 1 << 10}
	in := ": keepalive\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"kind\":\"task\",\"id\":\"t\",\"status\":{\"state\":\"working\"}}}\n\n" +
		"data: not json\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":1}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32603,\"message\":\"internal\",\"data\":[{\"reason\":\"X\"}]}}\n\n"
	st := &rpcStream{c: c, method: "message/stream", body: io.NopCloser(nil), sse: newSSEReader(strings.NewReader(in), c.max)}
	res, err := st.Next()
	if err != nil || !strings.Contains(string(res), `"kind":"task"`) {
		t.Fatalf("first: %s, %v", res, err)
	}
	var fe *FrameError
	if _, err := st.Next(); !errors.As(err, &fe) {
		t.Errorf("garbage: %v", err)
	}
	if _, err := st.Next(); !errors.As(err, &fe) {
		t.Errorf("neither result nor error: %v", err)
	}
	_, err = st.Next()
	if code := remoteCode(err); code != -32603 {
		t.Errorf("error frame: %v", err)
	}
	if _, err := st.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("end: %v", err)
	}
}

// FuzzSSE: whatever the bytes, the reader neither panics nor loops, and
// never returns more than its limit.
func FuzzSSE(f *testing.F) {
	f.Add([]byte("id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"task\":{\"id\":\"t\"}}}\n\n"), uint8(0))
	f.Add([]byte("data: a\r\ndata: b\r\n\r\n: c\n\n"), uint8(8))
	f.Add([]byte("data: "+strings.Repeat("x", 300)+"\n\n"), uint8(4))
	f.Add([]byte("\r\r\n\n\x00data"), uint8(1))
	f.Fuzz(func(t *testing.T, in []byte, max uint8) {
		limit := int64(max) * 8
		if limit == 0 {
			limit = 1 << 10
		}
		c := &client{max: limit}
		st := &rpcStream{c: c, method: "m", body: io.NopCloser(nil), sse: newSSEReader(bytes.NewReader(in), limit)}
		for i := 0; ; i++ {
			if i > len(in)+1 {
				t.Fatalf("more items than bytes: %d", i)
			}
			res, err := st.Next()
			if int64(len(res)) > limit {
				t.Fatalf("%d bytes over the %d limit", len(res), limit)
			}
			if errors.Is(err, io.EOF) {
				return
			}
			if err == nil {
				if _, derr := DecodeEvent(res); derr != nil {
					t.Fatalf("a result that is not an object got through: %q", res)
				}
			}
		}
	})
}

// FuzzDecodeEvent: any JSON decodes to a known kind or fails cleanly.
func FuzzDecodeEvent(f *testing.F) {
	for _, s := range []string{
		`{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}`,
		`{"kind":"artifact-update","taskId":"t","artifact":{"artifactId":"a","parts":[{"kind":"text","text":"x"}]},"append":true}`,
		`{"id":"t","artifact":{"index":3,"parts":[{"type":"file","file":{}}]}}`,
		`{"kind":"status-update","status":{"message":{"parts":[null,1,"x",{"text":7}]}}}`,
		`{"message":{"parts":{"text":"x"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		ev, err := DecodeEvent(in)
		if err != nil {
			return
		}
		switch ev.Kind {
		case KindTask:
			if ev.Task == nil {
				t.Fatal("task kind without a task")
			}
		case KindMessage:
			if ev.Message == nil {
				t.Fatal("message kind without a message")
			}
		case KindStatus, KindArtifact, KindUnknown:
		default:
			t.Fatalf("kind %q", ev.Kind)
		}
	})
}
