package jsonrpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
)

const benchUpdates = 10_000

// acpUpdateStream returns n realistic ACP session/update notification lines:
// 8 in 10 agent_message_chunk (~80 bytes of text), then a tool_call with
// locations and a tool_call_update.
func acpUpdateStream(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		switch i % 10 {
		case 8:
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_7f3a9c2e","update":{"sessionUpdate":"tool_call","toolCallId":"call_%06d","title":"Reading src/orchestrator/dispatch.go","kind":"read","status":"pending","locations":[{"path":"/home/dev/tai/src/orchestrator/dispatch.go","line":%d},{"path":"/home/dev/tai/src/orchestrator/queue.go"}],"rawInput":{"path":"/home/dev/tai/src/orchestrator/dispatch.go","limit":400}}}}`+"\n", i, i%500)
		case 9:
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_7f3a9c2e","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_%06d","status":"completed","content":[{"type":"content","content":{"type":"text","text":"Read 412 lines from dispatch.go"}}]}}}`+"\n", i-1)
		default:
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_7f3a9c2e","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"chunk %06d: the dispatcher pops messages in order and hands requests to goroutines."}}}}`+"\n", i)
		}
	}
	return b.Bytes()
}

type countingHandler struct{ n int }

func (h *countingHandler) HandleNotification(context.Context, string, json.RawMessage) { h.n++ }
func (h *countingHandler) HandleRequest(context.Context, string, json.RawMessage) (any, error) {
	return nil, nil
}

// BenchmarkDispatch measures a Conn reading, decoding, queueing and
// dispatching a prebuilt stream of session/update notifications. One op is
// the whole stream.
func BenchmarkDispatch(b *testing.B) {
	stream := acpUpdateStream(benchUpdates)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		h := &countingHandler{}
		c := NewConn(bytes.NewReader(stream), io.Discard, h, Options{})
		<-c.Done()
		if h.n != benchUpdates {
			b.Fatalf("handled %d updates, want %d", h.n, benchUpdates)
		}
	}
	b.ReportMetric(float64(b.N)*benchUpdates/b.Elapsed().Seconds(), "updates/s")
}

// BenchmarkBareDecode is the baseline: the same stream through a bufio.Reader
// line loop and json.Unmarshal into the same envelope, nothing else.
func BenchmarkBareDecode(b *testing.B) {
	stream := acpUpdateStream(benchUpdates)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		br := bufio.NewReaderSize(bytes.NewReader(stream), readBufSize)
		n := 0
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				break
			}
			var env envelope
			if err := json.Unmarshal(line, &env); err != nil {
				b.Fatal(err)
			}
			if env.Method.present {
				n++
			}
		}
		if n != benchUpdates {
			b.Fatalf("decoded %d updates, want %d", n, benchUpdates)
		}
	}
	b.ReportMetric(float64(b.N)*benchUpdates/b.Elapsed().Seconds(), "updates/s")
}
