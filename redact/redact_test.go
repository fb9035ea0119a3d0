package redact

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// Fake credentials assembled at run time so secret scanners don't flag the
// source file.
var (
	skAnt  = "sk-" + "ant-api03-" + strings.Repeat("Ab1_", 10)
	skProj = "sk-" + "proj-" + strings.Repeat("xY9z", 8)
	ghp    = "gh" + "p_" + strings.Repeat("aB3d", 9)
	ghPAT  = "github_" + "pat_" + strings.Repeat("11AB_cd", 6)
	gho    = "gh" + "o_" + strings.Repeat("Zz09", 9)
	akia   = "AK" + "IA" + "IOSFODNN7EXAMPLE"
	slack  = "xo" + "xb-" + "123456789012-abcdefghijkl"
	gkey   = "AI" + "za" + "SyA-" + strings.Repeat("k", 31)
	jwt    = "eyJ" + "hbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
	bearer = "abcDEF123456ghiJKL789"
	pem    = "-----BEGIN RSA PRIVATE " + "KEY-----\nMIIEpAIBAAKCAQEA1234\nabcd==\n-----END RSA PRIVATE " + "KEY-----"
)

func TestString(t *testing.T) {
	r := Default()
	tests := []struct {
		name, in, want string
	}{
		{"anthropic", "key=" + skAnt + " end", "key=[REDACTED] end"},
		{"openai proj", skProj, "[REDACTED]"},
		{"github classic", "token " + ghp, "token [REDACTED]"},
		{"github fine-grained", ghPAT + ".", "[REDACTED]."},
		{"github oauth", "(" + gho + ")", "([REDACTED])"},
		{"aws", "id=" + akia + ";", "id=[REDACTED];"},
		{"slack", slack, "[REDACTED]"},
		{"google", "k:" + gkey, "k:[REDACTED]"},
		{"bearer keeps scheme", "Authorization: Bearer " + bearer, "Authorization: Bearer [REDACTED]"},
		{"bearer lower case", "bearer " + bearer + "==", "bearer [REDACTED]"},
		{"jwt", "t=" + jwt, "t=[REDACTED]"},
		{"pem block", "before\n" + pem + "\nafter", "before\n[REDACTED]\nafter"},
		{"pem without end", "-----BEGIN PRIVATE " + "KEY-----\nMIIBVgIBADAN\nBgkq", "[REDACTED]"},
		{"two secrets", ghp + " and " + skAnt, "[REDACTED] and [REDACTED]"},
		{"json escape before token", `"a\n` + skAnt + `"`, `"a\n[REDACTED]"`},
		{"url userinfo", "DB_URL=postgres://app:s3cr3t-pw@db.internal:5432/app", "DB_URL=postgres://app:[REDACTED]@db.internal:5432/app"},
		{"url query token", "https://x.test/cb?user=me&access_token=abc123def&x=1", "https://x.test/cb?user=me&access_token=[REDACTED]&x=1"},
		{"url query key", `"https://maps.test/api?key=AbCdEf012345"`, `"https://maps.test/api?key=[REDACTED]"`},
		{"url without credentials", "see https://go.dev/doc?page=2&sort=asc and a&b=c", ""},
		// No false positives on ordinary code and prose.
		{"code", `func (t *Task) risk-assessment() { return "Bearer " + token }`, ""},
		{"prose bearer", "use a Bearer token for auth", ""},
		{"short sk", "the sk-learn package and task-sk-1", ""},
		{"identifier with sk-", "disk-usage-report-generator-final", ""},
		{"usage counters", `{"max_tokens":1024,"inputTokens":5,"token_count":3}`, ""},
		{"base64 not jwt", "eyJhbGciOi", ""},
		{"public key", "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----", ""},
		{"akia too short", "AKIA1234", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if want == "" {
				want = tt.in
			}
			if got := r.String(tt.in); got != want {
				t.Errorf("String(%q)\n got %q\nwant %q", tt.in, got, want)
			}
		})
	}
}

func TestBytesJSON(t *testing.T) {
	r, err := New(Options{Literals: []string{"hunter2hunter2", `quo"te\secret`, "31415926"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   string
		want string // "" means unchanged
		// absent must not appear in the output.
		absent []string
	}{
		{
			name: "mcp env and headers (session/new)",
			in: `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[{"name":"gh","command":"mcp-gh","args":[],` +
				`"env":[{"name":"GITHUB_TOKEN","value":"plainsecretvalue1"},{"name":"LOG_LEVEL","value":"debug"}],` +
				`"headers":[{"name":"X-Api-Key","value":"plainsecretvalue2"},{"name":"Accept","value":"text/plain"}]}]}}` + "\n",
			absent: []string{"plainsecretvalue1", "plainsecretvalue2"},
		},
		{
			name:   "secret keys",
			in:     `{"apiKey":"v1v1v1v1","nested":{"Authorization":"Basic dXNlcjpwYXNz","ANTHROPIC_API_KEY":"v2v2v2v2","x":1}}`,
			absent: []string{"v1v1v1v1", "dXNlcjpwYXNz", "v2v2v2v2"},
		},
		{
			name: "pattern in string",
			in:   `{"method":"session/prompt","params":{"text":"my key is ` + skAnt + `"}}`,
			want: `{"method":"session/prompt","params":{"text":"my key is [REDACTED]"}}`,
		},
		{
			name: "literal",
			in:   `{"out":"password hunter2hunter2 ok"}`,
			want: `{"out":"password [REDACTED] ok"}`,
		},
		{
			name:   "literal in escaped form",
			in:     `{"out":"x quo\"te\\secret y"}`,
			want:   `{"out":"x [REDACTED] y"}`,
			absent: []string{`te\\secret`},
		},
		{
			name:   "literal equal to a number stays valid JSON",
			in:     `{"size":31415926,"ok":true}`,
			absent: []string{"31415926"},
		},
		{
			name:   "pem spanning strings stays valid JSON",
			in:     `["-----BEGIN PRIVATE ` + `KEY-----", "-----END PRIVATE ` + `KEY-----"]`,
			absent: []string{"BEGIN PRIVATE"},
		},
		{name: "clean line untouched", in: `{"jsonrpc":"2.0","method":"session/update","params":{"update":{"text":"hello"}}}`},
		{name: "secret-looking key with empty value", in: `{"token":"","password":null,"has_api_key":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(r.Bytes([]byte(tt.in)))
			if tt.want != "" && got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if tt.want == "" && tt.absent == nil && got != tt.in {
				t.Errorf("changed clean input:\n got %s\n in  %s", got, tt.in)
			}
			for _, a := range tt.absent {
				if strings.Contains(got, a) {
					t.Errorf("output still contains %q: %s", a, got)
				}
			}
			if json.Valid([]byte(tt.in)) && !json.Valid([]byte(got)) {
				t.Errorf("valid JSON became invalid: %s", got)
			}
			if strings.HasSuffix(tt.in, "\n") != strings.HasSuffix(got, "\n") {
				t.Errorf("trailing newline not preserved: %q", got)
			}
		})
	}
}

func TestBytesUnchangedReturnsInput(t *testing.T) {
	in := []byte(`{"jsonrpc":"2.0","method":"fs/read_text_file","params":{"path":"/a/b.go"}}`)
	out := Default().Bytes(in)
	if &out[0] != &in[0] {
		t.Error("clean input was copied")
	}
	if n := testing.AllocsPerRun(100, func() { Default().Bytes(in) }); n != 0 {
		t.Errorf("clean input: %v allocs, want 0", n)
	}
}

func TestBytesDoesNotModifyInput(t *testing.T) {
	in := []byte("k " + skAnt)
	orig := string(in)
	Default().Bytes(in)
	if string(in) != orig {
		t.Error("input modified")
	}
}

func TestJSON(t *testing.T) {
	r, err := New(Options{Literals: []string{"litlitlit"}})
	if err != nil {
		t.Fatal(err)
	}
	type header struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	tests := []struct {
		name string
		in   any
		want any
	}{
		{
			"map keys",
			map[string]any{"api_key": "a", "Password": "b", "client_secret": "c", "user": "bob", "max_tokens": 5.0},
			map[string]any{"api_key": Replacement, "Password": Replacement, "client_secret": Replacement, "user": "bob", "max_tokens": 5.0},
		},
		{
			"name/value pairs",
			[]any{
				map[string]any{"name": "OPENAI_API_KEY", "value": "xyz"},
				map[string]any{"name": "authorization", "value": "Bearer xyz"},
				map[string]any{"name": "HOME", "value": "/home/u"},
			},
			[]any{
				map[string]any{"name": "OPENAI_API_KEY", "value": Replacement},
				map[string]any{"name": "authorization", "value": Replacement},
				map[string]any{"name": "HOME", "value": "/home/u"},
			},
		},
		{
			"typed structs via encoding/json",
			struct {
				Headers []header `json:"headers"`
			}{[]header{{"x-api-key", "k"}, {"Accept", "litlitlit"}}},
			map[string]any{"headers": []any{
				map[string]any{"name": "x-api-key", "value": Replacement},
				map[string]any{"name": "Accept", "value": Replacement},
			}},
		},
		{"secret object redacted whole", map[string]any{"credentials": map[string]any{"u": "a"}}, map[string]any{"credentials": Replacement}},
		{"string pattern", "k=" + ghp, "k=" + Replacement},
		{"nil", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.JSON(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestJSONDoesNotMutate(t *testing.T) {
	in := map[string]any{"token": "abc", "list": []any{map[string]any{"name": "X_TOKEN", "value": "v"}}}
	Default().JSON(in)
	if in["token"] != "abc" || in["list"].([]any)[0].(map[string]any)["value"] != "v" {
		t.Errorf("input mutated: %v", in)
	}
}

func TestLooksSecret(t *testing.T) {
	yes := []string{"api_key", "apiKey", "APIKEY", "token", "Secret", "password", "Authorization",
		"x-api-key", "Cookie", "Set-Cookie", "ANTHROPIC_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY",
		"client_secret", "accessToken", "DB_PASSWORD", "GH_PAT", "credentials"}
	no := []string{"name", "value", "max_tokens", "inputTokens", "token_count", "sortKey", "keyboard",
		"monkey", "path", "HOME", "SSH_AUTH_SOCK", "tokenizer", "", "id"}
	for _, n := range yes {
		if !LooksSecret(n) {
			t.Errorf("LooksSecret(%q) = false", n)
		}
	}
	for _, n := range no {
		if LooksSecret(n) {
			t.Errorf("LooksSecret(%q) = true", n)
		}
	}
}

func TestSecretEnvLiterals(t *testing.T) {
	env := []string{
		"ANTHROPIC_API_KEY=sk-abcdefgh12345",
		"OPENAI_API_KEY=sk-abcdefgh12345", // duplicate value
		"GITHUB_TOKEN=short",              // < 8: skipped
		"HOME=/home/someone-long",         // not secret
		"MY_SECRET=correct horse battery",
		"EMPTY_TOKEN=",
		"MALFORMED",
	}
	got := SecretEnvLiterals(env)
	want := []string{"sk-abcdefgh12345", "correct horse battery"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestCustomPatterns(t *testing.T) {
	r, err := New(Options{Patterns: []string{`corp-[0-9a-f]{12}`, `(?i)session=(?P<secret>[a-z0-9]+)`}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ in, want string }{
		{"id corp-0123456789ab!", "id [REDACTED]!"},
		{"Cookie: SESSION=abc123; path=/", "Cookie: SESSION=[REDACTED]; path=/"},
		{"corp-xyz", "corp-xyz"},
		{"still builtin " + ghp, "still builtin [REDACTED]"},
	}
	for _, tt := range tests {
		if got := r.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestNewErrors(t *testing.T) {
	_, err := New(Options{Patterns: []string{"("}})
	var pe *PatternError
	if !errors.As(err, &pe) || pe.Pattern != "(" {
		t.Errorf("bad pattern: got %v", err)
	}
	if _, err := New(Options{Literals: []string{"abc"}}); !errors.Is(err, ErrShortLiteral) {
		t.Errorf("short literal: got %v", err)
	}
	if _, err := New(Options{Literals: []string{""}}); err != nil {
		t.Errorf("empty literal should be ignored: %v", err)
	}
}

func TestNilRedactor(t *testing.T) {
	var r *Redactor
	if r.String("x "+ghp) != "x "+ghp || string(r.Bytes([]byte("a"))) != "a" || r.JSON(1) != 1 {
		t.Error("nil Redactor should be the identity")
	}
}

func FuzzBytes(f *testing.F) {
	f.Add([]byte(`{"env":[{"name":"GITHUB_TOKEN","value":"abc"}],"t":"` + skAnt + `"}`))
	f.Add([]byte(pem))
	f.Add([]byte(`["-----BEGIN PRIVATE KEY-----","x"]`))
	f.Add([]byte(`{"n":12345678}`))
	r, err := New(Options{Literals: []string{"12345678", `a"b\c`}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in := append([]byte(nil), b...)
		out := r.Bytes(b)
		if string(b) != string(in) {
			t.Fatal("input modified")
		}
		if json.Valid(b) && !json.Valid(out) {
			t.Fatalf("valid JSON became invalid:\n in %q\nout %q", b, out)
		}
	})
}

// Spans are the ranges Bytes replaces, for callers that redact text kept in
// pieces.
func TestSpans(t *testing.T) {
	r, err := New(Options{Literals: []string{"hunter22"}})
	if err != nil {
		t.Fatal(err)
	}
	text := "a " + ghp + " b hunter22 c"
	got := r.Spans([]byte(text))
	want := [][2]int{{2, 2 + len(ghp)}, {5 + len(ghp), 13 + len(ghp)}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("spans %v, want %v", got, want)
	}
}

// The built-ins compile on first use: each must compile.
func TestBuiltinsCompile(t *testing.T) {
	for i, p := range builtinPatterns() {
		if c := p.re(); c.re == nil {
			t.Errorf("built-in %d (%s) did not compile", i, builtins[i].expr)
		}
	}
}
