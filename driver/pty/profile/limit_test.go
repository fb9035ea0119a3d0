package profile

import (
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/quota"
)

// TestLimit: a turn ends on a limit only when its last block is the TUI's
// own rendering of a refused request; the agent's answer about rate
// limits, or a limit the turn went on past, is none (fail closed).
func TestLimit(t *testing.T) {
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, profile string
		before, after string // transcript rows, "|" between
		kind          quota.Kind
		resets        time.Time
	}{
		{name: "claude 429", profile: "claude", before: "❯ earlier|● Done.",
			after: "❯ earlier|● Done.|❯ Say hello.||● API Error: Request rejected (429) · Rate limit exceeded (scripted).", kind: quota.KindRate},
		{name: "claude 429 with a delay", profile: "claude",
			after: "❯ Say hello.||● API Error: Request rejected (429) · Rate limit exceeded. Please try again in 2s.",
			kind:  quota.KindRate, resets: now.Add(2 * time.Second)},
		{name: "claude plan limit wrapped", profile: "claude",
			after: "❯ Fix it||● I'll look.||● You've hit your limit · resets 3pm|  (UTC)", kind: quota.KindUsage, resets: now.Add(5 * time.Hour)},
		{name: "claude answer about rate limits", profile: "claude",
			after: "❯ What does a 429 mean?||● A 429 Too Many Requests means you hit the rate limit; try again in 2s."},
		{name: "claude answer quoting the error", profile: "claude",
			after: "❯ Explain||● The log says:|  API Error: Request rejected (429) · Rate limit exceeded"},
		{name: "claude error then the turn went on", profile: "claude",
			after: "❯ Say hello.||● API Error: Request rejected (429) · Rate limit exceeded||● Hello after all."},
		{name: "claude other API error", profile: "claude", after: "❯ Say hello.||● API Error: Connection error."},
		{name: "claude limit row before the prompt", profile: "claude",
			before: "❯ one||● API Error: Request rejected (429) · Rate limit exceeded",
			after:  "❯ one||● API Error: Request rejected (429) · Rate limit exceeded|❯ two||● Hello."},
		{name: "codex gave up", profile: "codex", after: "› Say hello.||■ exceeded retry limit, last status: 429 Too Many Requests", kind: quota.KindRate},
		{name: "codex usage limit", profile: "codex",
			after: "› Fix it||■ You've hit your usage limit. Upgrade to Pro or try again at 3:15 PM.", kind: quota.KindUsage,
			resets: time.Date(2026, 12, 7, 15, 15, 0, 0, time.UTC)},
		{name: "codex text about limits", profile: "codex", after: "› Explain||• You've hit your usage limit when the 429 comes back."},
		{name: "codex interrupted", profile: "codex", after: "› Say hello.||■ Conversation interrupted - use /feedback if something went wrong"},
		{name: "generic error row", profile: "generic", after: "> go|✕ [API Error: 429 Too Many Requests]", kind: quota.KindRate},
		{name: "generic usage sentence", profile: "generic", after: "> go|Claude usage limit reached. Your limit will reset at 3pm.", kind: quota.KindUsage,
			resets: time.Date(2026, 12, 7, 15, 0, 0, 0, time.UTC)},
		{name: "generic answer", profile: "generic", after: "> go|I added rate limit handling: a 429 now waits and retries."},
		{name: "generic answer ending on the word", profile: "generic", after: "> go|Done.||Rate limit exceeded errors are retried now."},
		{name: "nothing new", profile: "generic", before: "> go|Error: 429 Too Many Requests", after: "> go|Error: 429 Too Many Requests"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := Builtin(tc.profile)
			if !ok {
				t.Fatalf("no profile %q", tc.profile)
			}
			split := func(s string) []string {
				if s == "" {
					return nil
				}
				return strings.Split(s, "|")
			}
			l, ok := p.Limit(split(tc.before), split(tc.after), now)
			if ok != (tc.kind != "") || l.Kind != tc.kind || !l.ResetsAt.Equal(tc.resets) {
				t.Fatalf("Limit = %+v, %v; want kind %q resets %v", l, ok, tc.kind, tc.resets)
			}
			if ok && l.Source != "screen" {
				t.Errorf("source %q, want screen", l.Source)
			}
		})
	}
}

// TestFallbackLimit: a turn the profile could not read is read for a
// limit from the fallback's reply, with the generic shapes.
func TestFallbackLimit(t *testing.T) {
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		reply string
		want  bool
	}{
		{"API Error: Request rejected (429) · Rate limit exceeded", true},
		{"Working on it.\n\nError: 429 Too Many Requests", true},
		{"A 429 means the rate limit was hit.", false},
		{"", false},
	} {
		if _, ok := FallbackLimit(tc.reply, now); ok != tc.want {
			t.Errorf("FallbackLimit(%q) = %v, want %v", tc.reply, ok, tc.want)
		}
	}
}
