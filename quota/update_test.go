package quota

import (
	"encoding/json"
	"testing"
	"time"
)

func TestFromUpdate(t *testing.T) {
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	at := time.Date(2026, 12, 7, 15, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		update string
		ok     bool
		reset  time.Time
	}{
		{"a list, one used up", `{"sessionUpdate":"quota_update","quotas":[{"name":"5h","used":10,"limit":100,"resetsAt":"2026-12-07T11:00:00Z"},{"name":"weekly","used":100,"limit":100,"resetsAt":"2026-12-07T15:00:00Z"}]}`, true, at},
		{"remaining zero, unix seconds", `{"sessionUpdate":"quota_update","quota":{"id":"requests","remaining":0,"resetsAt":1796655600}}`, true, at},
		{"a status, the latest reset wins", `{"quotas":[{"status":"exceeded","resets_at":"2026-12-07T12:00:00Z"},{"status":"rejected","resetsAt":"2026-12-07T15:00:00Z"}]}`, true, at},
		{"used up, no reset", `{"quotas":[{"exceeded":true}]}`, true, time.Time{}},
		{"retryAfter in seconds", `{"quotas":[{"remaining":0,"retryAfter":18000}]}`, true, at},
		{"nothing used up", `{"quotas":[{"used":10,"limit":100,"resetsAt":"2026-12-07T11:00:00Z"},{"status":"allowed","remaining":5}]}`, false, time.Time{}},
		{"not JSON", `{`, false, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, ok := FromUpdate(json.RawMessage(tt.update), now)
			if ok != tt.ok || !l.ResetsAt.Equal(tt.reset) {
				t.Fatalf("FromUpdate = %+v, %v; want ok %v, reset %v", l, ok, tt.ok, tt.reset)
			}
			if ok && (l.Kind != KindUsage || l.Source != UpdateKind) {
				t.Errorf("limit %+v, want a usage limit read from quota_update", l)
			}
		})
	}
}
