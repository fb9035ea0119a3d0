package quota

import (
	"strings"
	"time"
)

// FromRetryNotice reads an agent's notice, in an update's _meta, that a
// request of its turn was refused with HTTP 429 and that it will retry:
// an object with willRetry true and a 429 status in it, at any depth
// (codex-acp 2.6.0's session_info_update _meta.codex.error: "Reconnecting...
// 1/5", codexErrorInfo.responseStreamDisconnected.httpStatusCode 429). An
// agent may then wait what the 429's Retry-After announced, hours at a
// usage limit, saying nothing more; the runner parks a turn whose last
// word is such a notice after a grace (QuotaOptions.RetryGrace).
func FromRetryNotice(meta map[string]any, _ time.Time) (Limit, bool) {
	var l Limit
	found := false
	walk(meta, 0, func(o map[string]any) {
		if found {
			return
		}
		if retry, ok := o["willRetry"].(bool); !ok || !retry || !has429Status(o, 0) {
			return
		}
		var words []string
		for _, k := range []string{"additionalDetails", "message"} {
			if s, ok := o[k].(string); ok && s != "" {
				words = append(words, s)
			}
		}
		l = Limit{Kind: KindRate, Message: strings.Join(words, "; "), Source: "retry_notice"}
		found = true
	})
	return l, found
}

// has429Status: some member of o, at any depth, whose name says status
// (httpStatusCode, statusCode, status) is 429.
func has429Status(o map[string]any, depth int) bool {
	if depth > 6 {
		return false
	}
	for k, v := range o {
		switch x := v.(type) {
		case float64:
			if x == 429 && strings.Contains(strings.ToLower(k), "status") {
				return true
			}
		case map[string]any:
			if has429Status(x, depth+1) {
				return true
			}
		}
	}
	return false
}
