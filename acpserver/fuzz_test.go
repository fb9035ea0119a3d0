package acpserver

import (
	"bytes"
	"context"
	"io"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests (the fuzz seeds among them) if a
// goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// seedSession is an editor's whole conversation, one line per message.
const seedSession = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true}}}}
{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}
{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"fake-1","prompt":[{"type":"text","text":"hi"}]}}
{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"allow_once"}}}
{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"fake-1"}}
{"jsonrpc":"2.0","id":4,"method":"session/set_mode","params":{"sessionId":"fake-1","modeId":"plan"}}
{"jsonrpc":"2.0","id":5,"method":"session/list","params":{}}
{"jsonrpc":"2.0","id":6,"method":"_x/ext","params":{"sessionId":"fake-1"}}
{"jsonrpc":"2.0","id":7,"method":"session/close","params":{"sessionId":"fake-1"}}
`

// FuzzServe feeds the server side of the JSON-RPC connection whatever the
// editor may send: it must answer or skip, never panic or hang, and every
// session's run has ended when it returns.
func FuzzServe(f *testing.F) {
	f.Add([]byte(seedSession))
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"relative"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":[]}` + "\n" + `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"fake-1","prompt":[{"type":"image","data":"","mimeType":"x"}]}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n" + `{"jsonrpc":"2.0","id":9,"method":"session/load","params":{"sessionId":"missing","cwd":"/w","mcpServers":[]}}`))
	f.Add([]byte("not json\n{}\n[]\n{\"id\":null}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := io.MultiReader(bytes.NewReader([]byte(seedSession[:len(seedSession)/3])), bytes.NewReader(data))
		_ = Serve(context.Background(), in, io.Discard, Options{Run: fakeRun, Cwd: "/w", Agent: "fake", Version: "test"})
	})
}
