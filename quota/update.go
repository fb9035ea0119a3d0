package quota

import (
	"encoding/json"
	"strings"
	"time"
)

// UpdateKind is the session/update kind of the ACP quotas RFD draft, in
// which an agent reports its account's quotas as they change. tai reads
// it when an agent sends it and does not advertise the draft.
const UpdateKind = "quota_update"

// FromUpdate reads a quota_update notification's update: whether one of
// the quotas it reports is used up, and when the latest of those resets.
// The draft's shape is not settled, so it reads what any shape says: an
// object with a reset time (resetsAt, resets_at, resetAt, retryAfter)
// that is used up (remaining 0, used at its limit, a status of exceeded,
// exhausted or rejected, exceeded true), at any depth.
func FromUpdate(raw json.RawMessage, now time.Time) (Limit, bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return Limit{}, false
	}
	var l Limit
	found := false
	walk(v, 0, func(o map[string]any) {
		if !usedUp(o) {
			return
		}
		var at time.Time
		if raw, err := json.Marshal(o); err == nil {
			var d errorData
			_ = json.Unmarshal(raw, &d) // a member of another type: the rest still read
			at, _ = d.resets(now)
		}
		if !found || at.After(l.ResetsAt) {
			l = Limit{Kind: KindUsage, ResetsAt: at, Source: UpdateKind, Message: nameOf(o)}
		}
		found = true
	})
	return l, found
}

// walk calls f on every object in v, to a bounded depth.
func walk(v any, depth int, f func(map[string]any)) {
	if depth > 8 {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		f(x)
		for _, c := range x {
			walk(c, depth+1, f)
		}
	case []any:
		for _, c := range x {
			walk(c, depth+1, f)
		}
	}
}

func usedUp(o map[string]any) bool {
	if b, ok := o["exceeded"].(bool); ok && b {
		return true
	}
	if s, ok := o["status"].(string); ok {
		switch strings.ToLower(s) {
		case "exceeded", "exhausted", "rejected", "quota_exceeded", "quotaexceeded":
			return true
		}
	}
	if r, ok := o["remaining"].(float64); ok && r <= 0 {
		return true
	}
	used, uok := o["used"].(float64)
	limit, lok := o["limit"].(float64)
	return uok && lok && limit > 0 && used >= limit
}

func nameOf(o map[string]any) string {
	for _, k := range []string{"name", "title", "id", "type", "kind"} {
		if s, ok := o[k].(string); ok && s != "" {
			return s + " used up"
		}
	}
	return "a quota used up"
}
