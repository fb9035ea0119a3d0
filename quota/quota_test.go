package quota

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/jsonrpc"
)

// now is a fixed Monday 10:00 UTC.
var now = time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)

// A clock time shown to the minute that is the minute now running is
// that minute's end, not the same time tomorrow: Claude Code shows a
// reset 40 s away as "resets 10:04am" at 10:04:30.
func TestParseResetThisMinute(t *testing.T) {
	at := time.Date(2026, 12, 7, 10, 4, 30, 0, time.UTC)
	for _, tt := range []struct {
		text string
		want time.Time
	}{
		{"You've hit your 5-hour limit · resets 10:04am (UTC)", time.Date(2026, 12, 7, 10, 5, 0, 0, time.UTC)},
		{"You've hit your 5-hour limit · resets 10:03am (UTC)", time.Date(2026, 12, 8, 10, 3, 0, 0, time.UTC)},
		{"You've hit your 5-hour limit · resets 10:05am (UTC)", time.Date(2026, 12, 7, 10, 5, 0, 0, time.UTC)},
	} {
		if got, ok := ParseReset(tt.text, at); !ok || !got.Equal(tt.want) {
			t.Errorf("ParseReset(%q) at %s = %v, %v; want %v", tt.text, at.Format("15:04:05"), got, ok, tt.want)
		}
	}
}

func TestParseReset(t *testing.T) {
	paris, _ := time.LoadLocation("Europe/Paris")
	tests := []struct {
		name, text string
		want       time.Time
		ok         bool
	}{
		{"retry-after seconds", "120", now.Add(2 * time.Minute), true},
		{"retry-after date", "Mon, 07 Dec 2026 11:30:00 GMT", time.Date(2026, 12, 7, 11, 30, 0, 0, time.UTC), true},
		{"unix seconds", "1796644800", time.Unix(1796644800, 0).UTC(), true},
		{"rfc3339", "quota resets at 2026-12-07T12:00:00Z.", time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC), true},
		{"in h m", "Please try again in 2h 5m.", now.Add(2*time.Hour + 5*time.Minute), true},
		{"in words", "Rate limit reached. Please try again in 1 hour and 30 minutes", now.Add(90 * time.Minute), true},
		{"in seconds", "Please retry in 7.5s.", now.Add(7500 * time.Millisecond), true},
		// Claude CLI usage limit text (claude-agent-sdk 0.101.0 prefix "You've hit your").
		{"claude resets pm zone", "You've hit your limit · resets 3pm (Europe/Paris)", time.Date(2026, 12, 7, 15, 0, 0, 0, paris), true},
		{"claude resets earlier today is tomorrow", "You've hit your limit · resets 9am", time.Date(2026, 12, 8, 9, 0, 0, 0, time.UTC), true},
		// codex-acp 0.16.0: "You've hit your usage limit. … Try again at …".
		{"codex try again at", "You've hit your usage limit. Try again at 3:15 PM.", time.Date(2026, 12, 7, 15, 15, 0, 0, time.UTC), true},
		{"24h clock", "resets at 18:30", time.Date(2026, 12, 7, 18, 30, 0, 0, time.UTC), true},
		{"bare hour is no time", "resets 3", time.Time{}, false},
		{"nothing", "the model is overloaded", time.Time{}, false},
		{"empty", "", time.Time{}, false},
		{"bad hour", "resets 13pm", time.Time{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseReset(tt.text, now)
			if ok != tt.ok || !got.Equal(tt.want) {
				t.Fatalf("ParseReset(%q) = %v, %v; want %v, %v", tt.text, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func rpcErr(code int, msg string, data any) error {
	e := &jsonrpc.Error{Code: code, Message: msg}
	if data != nil {
		e.Data, _ = json.Marshal(data)
	}
	return fmt.Errorf("session/prompt: %w", e)
}

func TestFromError(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		ok     bool
		kind   Kind
		source string
		resets time.Time
	}{
		// claude-agent-acp 0.101.0: RequestError.internalError({errorKind}, result text).
		{"claude-agent-acp rate_limit", rpcErr(-32603, "Internal error: You've hit your limit · resets 3pm (UTC)", map[string]any{"errorKind": "rate_limit"}),
			true, KindUsage, "acp_error", time.Date(2026, 12, 7, 15, 0, 0, 0, time.UTC)},
		// What tai's ACP driver makes of it.
		{"driver remote error", &driver.RemoteError{Method: "session/prompt", Code: -32603, Message: "Internal error: You've hit your limit · resets 3pm (UTC)", Data: json.RawMessage(`{"errorKind":"rate_limit"}`)},
			true, KindUsage, "acp_error", time.Date(2026, 12, 7, 15, 0, 0, 0, time.UTC)},
		// codex-acp 2.6.0 at a ChatGPT plan's limit: a bare "Internal
		// error" whose data holds codex's words and its error kind.
		{"codex-acp usageLimitExceeded", rpcErr(-32603, "Internal error", map[string]any{"message": "You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at 2:13 PM.", "codexErrorInfo": "usageLimitExceeded"}),
			true, KindUsage, "acp_error", time.Date(2026, 12, 7, 14, 13, 0, 0, time.UTC)},
		// The ACP quotas RFD draft: quotaExceeded with resetsAt.
		{"rfd quotaExceeded", rpcErr(-32000, "Quota exceeded", map[string]any{"type": "quotaExceeded", "resetsAt": "2026-12-07T11:00:00Z"}),
			true, KindUsage, "quota_exceeded", time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC)},
		{"retryAfter seconds", rpcErr(-32603, "Internal error", map[string]any{"errorKind": "rate_limit", "retryAfter": 60}),
			true, KindRate, "acp_error", now.Add(time.Minute)},
		// qwen/gemini forward the provider's error text.
		{"gemini text", rpcErr(-32603, "Internal error", map[string]any{"details": "[429 Too Many Requests] RESOURCE_EXHAUSTED: Quota exceeded for quota metric 'Generate Content API requests per minute'"}),
			true, KindUsage, "acp_error", time.Time{}},
		{"openai text", rpcErr(-32603, "429 Rate limit reached for gpt-4o. Please try again in 20s.", nil),
			true, KindRate, "acp_error", now.Add(20 * time.Second)},
		// gemini-cli 0.61 and qwen-code 0.24.4 answer with the HTTP status
		// as the code (quota/testdata); Gemini's own words for a 429 name
		// no limit.
		{"code 429", rpcErr(429, "Resource has been exhausted (e.g. check quota).", nil), true, KindRate, "acp_error", time.Time{}},
		{"plain error text", errors.New("You've hit your usage limit. Try again at 3:15 PM."), true, KindUsage, "text", time.Date(2026, 12, 7, 15, 15, 0, 0, time.UTC)},
		// A server that mirrors the HTTP status in the JSON-RPC code.
		{"code 429", rpcErr(429, "slow down, retry in 30s", nil), true, KindRate, "acp_error", now.Add(30 * time.Second)},
		{"retryAfter beside a limit text", rpcErr(-32000, "Rate limit exceeded", map[string]any{"retryAfter": "2026-12-07T10:05:00Z"}),
			true, KindRate, "acp_error", time.Date(2026, 12, 7, 10, 5, 0, 0, time.UTC)},
		{"not a limit", rpcErr(-32603, "Internal error: boom", map[string]any{"errorKind": "server_error"}), false, "", "", time.Time{}},
		{"a number is not 429", errors.New("wrote 14290 bytes"), false, "", "", time.Time{}},
		{"odd data", rpcErr(-32603, "Internal error", []int{1, 2}), false, "", "", time.Time{}},
		{"nil", nil, false, "", "", time.Time{}},
		{"checked by its driver", fmt.Errorf("prompt: %w", checked{"task 5f429c1e ended failed: boom"}), false, "", "", time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, ok := FromError(tt.err, now)
			if ok != tt.ok {
				t.Fatalf("FromError ok = %v, want %v (%+v)", ok, tt.ok, l)
			}
			if !ok {
				return
			}
			if l.Kind != tt.kind || l.Source != tt.source || !l.ResetsAt.Equal(tt.resets) {
				t.Fatalf("FromError = %+v; want kind %s source %s resets %v", l, tt.kind, tt.source, tt.resets)
			}
		})
	}
}

func TestFromHTTP(t *testing.T) {
	hdr := func(retry string) http.Header {
		h := http.Header{}
		if retry != "" {
			h.Set("Retry-After", retry)
		}
		return h
	}
	tests := []struct {
		name   string
		status int
		retry  string
		cause  error
		ok     bool
		kind   Kind
		source string
		resets time.Time
	}{
		{"429 retry-after seconds", 429, "90", errors.New("HTTP 429"), true, KindRate, "http_429", now.Add(90 * time.Second)},
		{"429 retry-after date", 429, "Mon, 07 Dec 2026 11:30:00 GMT", nil, true, KindRate, "http_429", time.Date(2026, 12, 7, 11, 30, 0, 0, time.UTC)},
		{"429 bare", 429, "", errors.New("HTTP 429"), true, KindRate, "http_429", time.Time{}},
		// The JSON-RPC error in the 429's body says usage and when; Retry-After wins.
		{"429 body usage", 429, "", rpcErr(-32000, "You've hit your usage limit. Try again at 3:15 PM.", nil),
			true, KindUsage, "http_429", time.Date(2026, 12, 7, 15, 15, 0, 0, time.UTC)},
		{"429 header beats body", 429, "60", rpcErr(-32000, "rate limit, retry in 2h", nil), true, KindRate, "http_429", now.Add(time.Minute)},
		{"503 retry-after", 503, "120", errors.New("HTTP 503"), true, KindRate, "http_503", now.Add(2 * time.Minute)},
		{"503 body limit", 503, "", rpcErr(-32000, "Quota exceeded", map[string]any{"resetsAt": "2026-12-07T12:00:00Z"}),
			true, KindUsage, "http_503", time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)},
		{"503 outage", 503, "", errors.New("HTTP 503: upstream down"), false, "", "", time.Time{}},
		{"500", 500, "30", errors.New("HTTP 500"), false, "", "", time.Time{}},
		{"429 unreadable retry-after", 429, "soon", nil, true, KindRate, "http_429", time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, ok := FromHTTP(tt.status, hdr(tt.retry), tt.cause, now)
			if ok != tt.ok {
				t.Fatalf("FromHTTP ok = %v, want %v (%+v)", ok, tt.ok, l)
			}
			if ok && (l.Kind != tt.kind || l.Source != tt.source || !l.ResetsAt.Equal(tt.resets)) {
				t.Fatalf("FromHTTP = %+v; want kind %s source %s resets %v", l, tt.kind, tt.source, tt.resets)
			}
		})
	}
}

func TestFromFields(t *testing.T) {
	tests := []struct {
		name, fields, text string
		ok                 bool
		kind               Kind
		resets             time.Time
	}{
		{"kind and resetsAt", `{"errorKind":"rate_limit","resetsAt":"2026-12-07T11:00:00Z"}`, "failed", true, KindRate, time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC)},
		{"reason usage_limit, retryAfter seconds", `{"reason":"usage_limit","retryAfter":300}`, "stopped", true, KindUsage, now.Add(5 * time.Minute)},
		{"text decides, metadata times it", `{"resetsAt":1796652000}`, "Rate limit exceeded", true, KindRate, time.Unix(1796652000, 0).UTC()},
		{"text alone", ``, "You've hit your usage limit, try again in 10m", true, KindUsage, now.Add(10 * time.Minute)},
		{"metadata of another shape", `["x"]`, "usage limit reached", true, KindUsage, time.Time{}},
		{"a reset time alone is no limit", `{"resetsAt":1796652000}`, "the build failed", false, "", time.Time{}},
		{"not a limit", `{"errorKind":"crash"}`, "boom", false, "", time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, ok := FromFields(json.RawMessage(tt.fields), tt.text, now)
			if ok != tt.ok || ok && (l.Kind != tt.kind || !l.ResetsAt.Equal(tt.resets) || l.Source != "fields") {
				t.Fatalf("FromFields = %+v, %v; want %v %s %v", l, ok, tt.ok, tt.kind, tt.resets)
			}
		})
	}
}

// checked is an error its driver read for a limit already.
type checked struct{ msg string }

func (c checked) Error() string { return c.msg }
func (checked) LimitChecked()   {}

func TestFromErrorKeepsLimit(t *testing.T) {
	want := Limit{Kind: KindRate, Source: "text"}
	err := fmt.Errorf("turn: %w", &Error{Limit: want})
	if got, ok := FromError(err, now); !ok || got != want {
		t.Fatalf("FromError = %+v, %v", got, ok)
	}
}

func TestFromRateLimitInfo(t *testing.T) {
	tests := []struct {
		name, raw string
		ok        bool
		resets    time.Time
	}{
		// claude-agent-sdk 0.101.0 SDKRateLimitInfo: resetsAt in Unix seconds.
		{"rejected", `{"status":"rejected","resetsAt":1796652000,"rateLimitType":"five_hour"}`, true, time.Unix(1796652000, 0).UTC()},
		{"warning", `{"status":"allowed_warning","resetsAt":1796652000}`, false, time.Time{}},
		{"garbage", `[`, false, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, ok := FromRateLimitInfo(json.RawMessage(tt.raw), now)
			if ok != tt.ok || !l.ResetsAt.Equal(tt.resets) {
				t.Fatalf("got %+v, %v", l, ok)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		attempt int
		want    time.Duration
	}{{0, time.Minute}, {1, 2 * time.Minute}, {3, 8 * time.Minute}, {10, time.Hour}, {1000, time.Hour}}
	for _, tt := range tests {
		if got := Backoff(tt.attempt, time.Minute, time.Hour); got != tt.want {
			t.Errorf("Backoff(%d) = %v, want %v", tt.attempt, got, tt.want)
		}
	}
}

func TestAccountOf(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".codex/auth.json"), []byte(`{"token":"s3cret"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c := Credentials{Env: []string{"OPENAI_API_KEY"}, Files: []string{".codex/auth.json", ".codex/missing"}}
	a := AccountOf("codex", c, []string{"OPENAI_API_KEY=sk-one"}, home)
	b := AccountOf("codex", c, []string{"OPENAI_API_KEY=sk-two"}, home)
	same := AccountOf("codex", c, []string{"OPENAI_API_KEY=sk-one"}, home)
	none := AccountOf("codex", c, nil, "")
	if a.ID == b.ID || a.ID != same.ID || !strings.HasPrefix(a.ID, "sha256:") {
		t.Fatalf("ids: %s %s %s", a.ID, b.ID, same.ID)
	}
	if none.ID != "none" {
		t.Fatalf("no credentials: %+v", none)
	}
	js, _ := json.Marshal(a)
	if strings.Contains(string(js), "sk-one") || strings.Contains(string(js), "s3cret") {
		t.Fatalf("the account shows a secret: %s", js)
	}
	if got := strings.Join(a.From, ","); got != "$OPENAI_API_KEY,~/.codex/auth.json" {
		t.Fatalf("from = %s", got)
	}
}

// The agent writes its own state, credentials included: a FIFO it put in
// a credentials file's place counts as absent at once; reading it would
// block tai's next run before it starts.
func TestAccountOfIgnoresAFIFO(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(home, ".codex", "auth.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan Account, 1)
	go func() { done <- AccountOf("codex", Credentials{Files: []string{".codex/auth.json"}}, nil, home) }()
	select {
	case a := <-done:
		if a.ID != "none" || len(a.From) != 0 {
			t.Errorf("account %+v: a FIFO is no credential", a)
		}
	case <-time.After(time.Minute): // a hang guard only
		t.Fatal("AccountOf blocked on a FIFO")
	}
}
