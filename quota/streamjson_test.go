package quota_test

import (
	"testing"
	"time"

	"github.com/tai-dev/tai/driver/streamjson"
	"github.com/tai-dev/tai/quota"
)

// The claude CLI's stream-json result at a usage limit (is_error, the
// API's 429, the CLI's "You've hit your limit" text: claude-agent-sdk
// 0.101.0's USAGE_LIMIT_ERROR_PREFIXES) reaches the runner as the
// driver's TurnError, whose text is enough.
func TestStreamJSONTurnErrorIsALimit(t *testing.T) {
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		err    *streamjson.TurnError
		ok     bool
		resets time.Time
	}{
		{"usage limit", &streamjson.TurnError{Dialect: "claude", Subtype: "success", TerminalReason: "api_error", APIErrorStatus: 429,
			Message: "You've hit your limit · resets 3pm (UTC)"}, true, time.Date(2026, 12, 7, 15, 0, 0, 0, time.UTC)},
		{"bare 429", &streamjson.TurnError{Dialect: "claude", Subtype: "success", TerminalReason: "api_error", APIErrorStatus: 429}, true, time.Time{}},
		// After a rejected rate_limit_event its resetsAt (Unix seconds) wins.
		{"rate_limit_info", &streamjson.TurnError{Dialect: "claude", Subtype: "success", TerminalReason: "api_error", APIErrorStatus: 429,
			Message: "You've hit your limit · resets 3pm (UTC)", RateLimit: []byte(`{"status":"rejected","resetsAt":1796652000,"rateLimitType":"five_hour"}`)},
			true, time.Unix(1796652000, 0).UTC()},
		{"overloaded", &streamjson.TurnError{Dialect: "claude", Subtype: "success", TerminalReason: "api_error", APIErrorStatus: 529, Message: "Overloaded"}, false, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, ok := quota.FromError(tt.err, now)
			if ok != tt.ok || !l.ResetsAt.Equal(tt.resets) {
				t.Fatalf("FromError(%v) = %+v, %v", tt.err, l, ok)
			}
		})
	}
}
