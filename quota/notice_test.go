package quota

import (
	"encoding/json"
	"testing"
)

func TestFromRetryNotice(t *testing.T) {
	tests := []struct {
		name, meta string
		ok         bool
	}{
		// codex-acp 2.6.0 (quota/testdata/codex-2.6.0.jsonl).
		{"codex reconnecting at 429", `{"codex":{"error":{"message":"Reconnecting... 1/5","codexErrorInfo":{"responseStreamDisconnected":{"httpStatusCode":429}},"additionalDetails":"exceeded retry limit, last status: 429 Too Many Requests","misalignment":null,"turnId":"t","willRetry":true}}}`, true},
		{"codex reconnecting at 500", `{"codex":{"error":{"message":"Reconnecting... 1/5","codexErrorInfo":{"responseStreamDisconnected":{"httpStatusCode":500}},"willRetry":true}}}`, false},
		{"no retry", `{"codex":{"error":{"message":"stream failed","codexErrorInfo":{"responseStreamDisconnected":{"httpStatusCode":429}},"willRetry":false}}}`, false},
		{"a thread status", `{"codex":{"threadStatus":{"type":"active","activeFlags":[]}}}`, false},
		{"429 not a status", `{"x":{"willRetry":true,"count":429}}`, false},
		{"empty", `{}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var meta map[string]any
			if err := json.Unmarshal([]byte(tt.meta), &meta); err != nil {
				t.Fatal(err)
			}
			l, ok := FromRetryNotice(meta, now)
			if ok != tt.ok {
				t.Fatalf("FromRetryNotice = %+v, %v; want ok %v", l, ok, tt.ok)
			}
			if ok && (l.Kind != KindRate || l.Source != "retry_notice" || l.Message == "") {
				t.Fatalf("limit %+v", l)
			}
		})
	}
}
