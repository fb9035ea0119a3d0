package app

import (
	"strings"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/redact"
)

// newRedactor is tai's one redactor set-up, for the audit logs, the trace
// and the session records: the secret values of env (the environment the
// agent runs with), the secrets of its MCP servers, and --redact's
// patterns. A bad pattern is the error.
func newRedactor(env []string, mcp []driver.MCPServer, patterns []string) (*redact.Redactor, error) {
	return redact.New(redact.Options{Literals: append(redact.SecretEnvLiterals(env), mcpLiterals(mcp)...), Patterns: patterns})
}

// mcpLiterals are the secrets of MCP servers as literals to redact: every
// env and header value whatever its name (DB_URL carries a password as
// surely as DB_PASSWORD), and the value of every argument that follows,
// or is joined to, a flag whose name looks secret (--api-key K,
// --token=K). Values too short to redact as literals are left to the
// patterns.
func mcpLiterals(servers []driver.MCPServer) []string {
	var out []string
	add := func(v string) {
		if len(v) >= redact.MinLiteralLen {
			out = append(out, v)
		}
	}
	for _, s := range servers {
		for _, v := range s.Env {
			add(v)
		}
		for _, v := range s.Headers {
			add(v)
		}
		for i, a := range s.Args {
			name, value, joined := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if !strings.HasPrefix(a, "-") || !redact.LooksSecret(strings.ReplaceAll(name, "-", "_")) {
				continue
			}
			if joined {
				add(value)
			} else if i+1 < len(s.Args) {
				add(s.Args[i+1])
			}
		}
	}
	return out
}
