package redact

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/internal/bareacp"
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

// agentText is about 27 MB of what agents write: prose, code and shell
// output, with words that start like secrets (task-list, ghost_, AKIAN,
// Bearer of news, eyJ...) and, rarely, a real token.
func agentText(size int) []byte {
	para := "Refactor the handler so that errors are wrapped with context; the task-list and risk-free ask-me paths stay as they are.\n" +
		"```go\nfunc (s *Server) ghost_handler(w http.ResponseWriter, r *http.Request) {\n\tif err := s.desk-top(r); err != nil {\n\t\treturn fmt.Errorf(\"serve: %w\", err)\n\t}\n}\n```\n" +
		"The Bearer of bad news: AKIANOTAKEY is short, xoxo hugs, eyJust kidding, -----BEGIN notes----- and github_stars.\n" +
		"$ go test ./...\nok  \tgithub.com/example/project/pkg\t0.412s\n\n"
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		b.WriteString(para)
		if i%5000 == 0 {
			b.WriteString("use sk-ant-api03-abcdefghijklmnopqrstuvwxyzABCD please\n")
		}
	}
	return []byte(b.String())
}

// BenchmarkAgentText is the redactor's throughput on 27 MB of agent text
// against a plain copy of the same bytes in the same run. cpu-MB/s is the
// throughput per CPU second (user+sys of this process while it ran): on a
// busy machine the wall-time MB/s says more about the load than the code.
//
//	go test ./redact -run x -bench AgentText
func BenchmarkAgentText(b *testing.B) {
	text := agentText(27 << 20)
	b.Run("redact", func(b *testing.B) {
		r := Default()
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		cpu0 := bareacp.SelfCPU()
		for b.Loop() {
			out := r.Bytes(text)
			if bytes.Contains(out, []byte("sk-ant-api03")) {
				b.Fatal("secret left in the text")
			}
		}
		reportCPU(b, cpu0, len(text))
	})
	b.Run("copy", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		dst := make([]byte, len(text))
		cpu0 := bareacp.SelfCPU()
		for b.Loop() {
			copy(dst, text)
		}
		reportCPU(b, cpu0, len(text))
	})
}

// reportCPU reports the bytes processed per CPU second since cpu0.
func reportCPU(b *testing.B, cpu0 time.Duration, size int) {
	if cpu := bareacp.SelfCPU() - cpu0; cpu > 0 {
		b.ReportMetric(float64(size)*float64(b.N)/1e6/cpu.Seconds(), "cpu-MB/s")
	}
}

// BenchmarkAgentTextLiterals is the redactor of a run with secrets in its
// environment (each also scrubbed in its encoded forms) on 4 MB of agent
// text.
func BenchmarkAgentTextLiterals(b *testing.B) {
	text := agentText(4 << 20)
	r, err := New(Options{Literals: []string{"hub-token-0123456789abcdef0123456789", "s3cr3t-Pa55/w0rd+with&odd=chars", "AKIAIOSFODNN7EXAMPLEKEYVALUE"}})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		r.Bytes(text)
	}
}
