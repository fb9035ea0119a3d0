package redact

import (
	"strings"
	"testing"
)

func BenchmarkBytes(b *testing.B) {
	clean := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"8f2c","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"` +
		strings.Repeat("Refactor the handler so that errors are wrapped with context. ", 12) + `"}}}}`)
	secret := []byte(`{"jsonrpc":"2.0","method":"session/prompt","params":{"prompt":[{"type":"text","text":"use ` + skAnt + ` please"}]}}`)
	mcp := []byte(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[{"name":"gh","command":"mcp-gh","env":[{"name":"GITHUB_TOKEN","value":"plainsecretvalue1"}]}]}}`)
	r, err := New(Options{Literals: []string{"literal-secret-1", "literal-secret-2"}})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		in   []byte
	}{{"clean-1KB", clean}, {"pattern", secret}, {"mcp-env", mcp}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.in)))
			for b.Loop() {
				r.Bytes(bc.in)
			}
		})
	}
}
