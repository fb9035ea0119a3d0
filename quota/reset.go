package quota

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

var (
	rfc3339Re = regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})`)
	// "try again in 2h 5m", "retry after 30 seconds", "resets in 4 hours".
	inRe   = regexp.MustCompile(`(?i)\b(?:in|after)\s+((?:\d+(?:\.\d+)?\s*(?:days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b[\s,]*(?:and\s+)?)+)`)
	partRe = regexp.MustCompile(`(?i)(\d+(?:\.\d+)?)\s*([a-z]+)`)
	// "resets 3pm", "resets at 3:15 PM (Europe/Paris)", "Try again at 15:00".
	clockRe = regexp.MustCompile(`(?i)\b(?:resets?|try again|available again|retry|reset)\s+(?:at\s+)?(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?(?:\s*\(([A-Za-z_]+/[A-Za-z_/]+|UTC)\))?`)
)

// ParseReset reads when a limit clears from text: an RFC3339 time, a
// Retry-After value (seconds or an HTTP date), a delay ("try again in
// 2h 5m"), or a clock time ("resets 3pm (Europe/Paris)", "Try again at
// 3:15 PM"), which is the next such time after now, in the named zone or
// now's.
func ParseReset(text string, now time.Time) (time.Time, bool) {
	s := strings.TrimSpace(text)
	if s == "" {
		return time.Time{}, false
	}
	if n, err := strconv.ParseFloat(s, 64); err == nil && n >= 0 {
		return unixOrDelay(n, now), true
	}
	if t, err := http.ParseTime(s); err == nil {
		return t, true
	}
	if m := rfc3339Re.FindString(s); m != "" {
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05Z07:00", "2006-01-02T15:04Z07:00", "2006-01-02T15:04:05Z0700"} {
			if t, err := time.Parse(layout, m); err == nil {
				return t, true
			}
		}
	}
	if m := inRe.FindStringSubmatch(s); m != nil {
		if d, ok := parseDelay(m[1]); ok {
			return now.Add(d), true
		}
	}
	if m := clockRe.FindStringSubmatch(s); m != nil {
		return nextClock(m, now)
	}
	return time.Time{}, false
}

// parseDelay adds up "2h 5m", "1 hour and 30 minutes", "45s".
func parseDelay(s string) (time.Duration, bool) {
	var total time.Duration
	for _, p := range partRe.FindAllStringSubmatch(s, -1) {
		n, err := strconv.ParseFloat(p[1], 64)
		if err != nil {
			return 0, false
		}
		var unit time.Duration
		switch u := strings.ToLower(p[2]); {
		case u == "d" || strings.HasPrefix(u, "day"):
			unit = 24 * time.Hour
		case u == "h" || strings.HasPrefix(u, "hour") || strings.HasPrefix(u, "hr"):
			unit = time.Hour
		case u == "m" || strings.HasPrefix(u, "min"):
			unit = time.Minute
		case u == "s" || strings.HasPrefix(u, "sec"):
			unit = time.Second
		default:
			return 0, false
		}
		total += time.Duration(n * float64(unit))
	}
	return total, total > 0
}

// nextClock is the next time after now showing the matched clock time.
// A bare hour without minutes or am/pm ("resets 3") is not a time.
func nextClock(m []string, now time.Time) (time.Time, bool) {
	hour, _ := strconv.Atoi(m[1])
	minute := 0
	if m[2] != "" {
		minute, _ = strconv.Atoi(m[2])
	}
	ampm := strings.ToLower(strings.ReplaceAll(m[3], ".", ""))
	if m[2] == "" && ampm == "" {
		return time.Time{}, false
	}
	switch ampm {
	case "am", "pm":
		if hour < 1 || hour > 12 {
			return time.Time{}, false
		}
		hour %= 12
		if ampm == "pm" {
			hour += 12
		}
	}
	if hour > 23 || minute > 59 {
		return time.Time{}, false
	}
	loc := now.Location()
	if m[4] != "" {
		if l, err := time.LoadLocation(m[4]); err == nil {
			loc = l
		}
	}
	n := now.In(loc)
	t := time.Date(n.Year(), n.Month(), n.Day(), hour, minute, 0, 0, loc)
	switch {
	case t.After(n):
	case n.Sub(t) < time.Minute:
		// Shown to the minute (Claude Code's "resets 12:04pm"), the reset
		// lies within the minute now running: at its end, not tomorrow.
		t = t.Add(time.Minute)
	default:
		t = t.AddDate(0, 0, 1)
	}
	return t, true
}
