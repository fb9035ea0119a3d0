package app

import (
	"strings"
	"testing"

	"github.com/tai-dev/tai/driver"
)

func TestNewRedactor(t *testing.T) {
	mcp := []driver.MCPServer{{Name: "db", Command: "db-mcp",
		Args:    []string{"--api-key", "argsecret-1234567", "--token=joinedsecret-7654321", "--verbose", "plainvalue-1234567"},
		Env:     map[string]string{"DB_URL": "postgres://u:pw-1234567@h/db"},
		Headers: map[string]string{"X-Custom": "headersecret-1234567"}}}
	env := []string{"OPENAI_API_KEY=envsecret-1234567", "HOME=/home/u"}
	tests := []struct {
		name     string
		in       string
		patterns []string
		want     string // a part that must be gone
		keep     string // a part that must stay
	}{
		{"env secret", "key envsecret-1234567", nil, "envsecret-1234567", "key"},
		{"mcp env value, whatever its name", "url postgres://u:pw-1234567@h/db", nil, "pw-1234567", "url"},
		{"mcp header", "h headersecret-1234567", nil, "headersecret-1234567", "h "},
		{"mcp flag's next argument", "a argsecret-1234567", nil, "argsecret-1234567", "a "},
		{"mcp flag joined with =", "j joinedsecret-7654321", nil, "joinedsecret-7654321", "j "},
		{"an argument after a plain flag stays", "p plainvalue-1234567", nil, "", "plainvalue-1234567"},
		{"--redact pattern", "id corp-42-x", []string{`corp-\d+-x`}, "corp-42-x", "id"},
		{"not secret env stays", "home /home/u", nil, "", "/home/u"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			red, err := newRedactor(env, mcp, tt.patterns)
			if err != nil {
				t.Fatal(err)
			}
			got := red.String(tt.in)
			if tt.want != "" && strings.Contains(got, tt.want) {
				t.Errorf("%q kept %q", got, tt.want)
			}
			if !strings.Contains(got, tt.keep) {
				t.Errorf("%q lost %q", got, tt.keep)
			}
		})
	}
	if _, err := newRedactor(nil, nil, []string{"("}); err == nil {
		t.Error("a bad pattern: no error")
	}
}
