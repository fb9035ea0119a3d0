// Package quota recognises that an agent stopped on a usage or rate limit,
// from what agents really emit (JSON-RPC errors, their text, Claude's
// rate-limit events, the ACP quotas draft), reads when the limit resets,
// and names the account the limit belongs to. A run or a fleet uses it to
// park at the limit instead of failing, and to resume at the reset.
package quota

import (
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/jsonrpc"
)

// Kind is what sort of limit stopped the agent.
type Kind string

// The kinds of limit.
const (
	// KindRate is a short-lived rate limit (HTTP 429, "rate limited").
	KindRate Kind = "rate_limit"
	// KindUsage is a plan's usage window ("You've hit your limit · resets
	// 3pm"), or a quota the provider reports exhausted.
	KindUsage Kind = "usage_limit"
)

// Limit is one limit signal.
type Limit struct {
	Kind Kind `json:"kind"`
	// ResetsAt is when the limit clears; zero when the agent did not say
	// (the caller backs off, see Backoff).
	ResetsAt time.Time `json:"resets_at,omitzero"`
	// Message is the agent's own words for it.
	Message string `json:"message,omitempty"`
	// Source says which signal it was read from (acp_error, quota_exceeded,
	// rate_limit_event, text, screen: a PTY TUI's limit screen,
	// final_message; A2A: http_429, http_503, fields).
	Source string `json:"source"`
}

// Error is an error that is a limit: a turn that ended on one.
type Error struct {
	Limit Limit
	Err   error // the agent's error, if the limit came as one
}

func (e *Error) Error() string {
	msg := "the agent hit a " + strings.ReplaceAll(string(e.Limit.Kind), "_", " ")
	if !e.Limit.ResetsAt.IsZero() {
		msg += " (resets " + e.Limit.ResetsAt.UTC().Format(time.RFC3339) + ")"
	}
	if e.Limit.Message != "" {
		msg += ": " + e.Limit.Message
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// As returns the limit err carries, if it is one.
func As(err error) (*Error, bool) {
	var qe *Error
	ok := errors.As(err, &qe)
	return qe, ok
}

// errorData is the part of a JSON-RPC error's data (or an A2A task's
// metadata) that says "limit": the ACP quotas RFD draft's quotaExceeded
// (resetsAt), claude-agent-acp's errorKind, and retry hints some agents
// add.
type errorData struct {
	Type       string          `json:"type"`
	Code       string          `json:"code"`
	ErrorKind  string          `json:"errorKind"`
	Kind       string          `json:"kind"`
	Reason     string          `json:"reason"`
	ResetsAt   json.RawMessage `json:"resetsAt"`
	ResetAt    json.RawMessage `json:"resetAt"`
	RetryAfter json.RawMessage `json:"retryAfter"`
	// The same, as snake_case payloads spell them.
	ResetsAtSnake   json.RawMessage `json:"resets_at"`
	ResetAtSnake    json.RawMessage `json:"reset_at"`
	RetryAfterSnake json.RawMessage `json:"retry_after"`
	Details         string          `json:"details"`
	// Message is the agent's own words where its JSON-RPC message is a
	// generic "Internal error" (codex-acp); CodexErrorInfo is codex-acp's
	// kind of error (usageLimitExceeded at a ChatGPT plan's limit).
	Message        string `json:"message"`
	CodexErrorInfo string `json:"codexErrorInfo"`
}

// rateKinds are the errorKind/type values that name a limit:
// claude-agent-acp 0.101.0 forwards the Claude SDK's assistant error
// ("rate_limit") as data.errorKind of an internal error (-32603); the
// RFD draft's is "quotaExceeded".
var rateKinds = map[string]Kind{
	"rate_limit": KindRate, "rate_limit_error": KindRate, "rate_limited": KindRate,
	"quotaexceeded": KindUsage, "quota_exceeded": KindUsage, "usage_limit": KindUsage,
	"usage_limit_reached": KindUsage, "resource_exhausted": KindRate,
	"rate_limit_exceeded": KindRate, "too_many_requests": KindRate,
	"usagelimitexceeded": KindUsage,
}

// FromError reads a limit from an agent's error: a JSON-RPC error's data
// (the RFD draft's quotaExceeded with resetsAt, claude-agent-acp's
// errorKind) or, failing that, its message's text. now resolves relative
// reset times ("try again in 2h").
func FromError(err error, now time.Time) (Limit, bool) {
	if err == nil {
		return Limit{}, false
	}
	if qe, ok := As(err); ok {
		return qe.Limit, true
	}
	var c Checked
	if errors.As(err, &c) {
		return Limit{}, false
	}
	var rl rateLimited
	if errors.As(err, &rl) {
		if l, ok := FromRateLimitInfo(rl.RateLimitInfo(), now); ok {
			l.Message = err.Error()
			return l, true
		}
	}
	code, msg, data, ok := rpcError(err)
	if !ok {
		return FromText(err.Error(), now)
	}
	msg = strings.TrimPrefix(msg, "Internal error: ")
	l, ok := fromFields(data, msg, "acp_error", now)
	if !ok && code == http.StatusTooManyRequests {
		// gemini-cli 0.61 and qwen-code 0.24.4 fail session/prompt with the
		// HTTP status as the JSON-RPC code, whatever the provider's words.
		l, ok = Limit{Kind: KindRate, Message: msg, Source: "acp_error"}, true
		if t, rok := ParseReset(msg, now); rok {
			l.ResetsAt = t
		}
	}
	return l, ok
}

// FromFields reads a limit from the structured fields an agent attached
// to a failure (an error's data, an A2A task's or status message's
// metadata: a kind such as rate_limit or quotaExceeded, resetsAt,
// retryAfter) together with its text, which decides when no field names
// a limit. Fields of another shape are ignored.
func FromFields(fields json.RawMessage, text string, now time.Time) (Limit, bool) {
	return fromFields(fields, text, "fields", now)
}

// fromFields is FromFields with the source to report for a limit the
// fields or the text name.
func fromFields(fields json.RawMessage, msg, source string, now time.Time) (Limit, bool) {
	var d errorData
	if len(fields) > 0 {
		_ = json.Unmarshal(fields, &d) // data of another shape: the text decides
	}
	if m := strings.TrimSpace(d.Message); m != "" && m != msg {
		if generic := strings.TrimSpace(strings.TrimSuffix(msg, "Internal error")) == ""; generic {
			msg = m
		} else {
			msg += ": " + m
		}
	}
	for _, k := range []string{d.ErrorKind, d.Type, d.Code, d.Kind, d.Reason, d.CodexErrorInfo} {
		kind, ok := rateKinds[strings.ToLower(k)]
		if !ok {
			continue
		}
		l := Limit{Kind: kind, Message: msg, Source: source}
		if strings.EqualFold(k, "quotaExceeded") {
			l.Source = "quota_exceeded"
		}
		if t, ok := d.resets(now); ok {
			l.ResetsAt = t
		} else if t, ok := ParseReset(msg, now); ok {
			l.ResetsAt = t
		}
		if tl, ok := FromText(msg, now); ok && tl.Kind == KindUsage {
			l.Kind = KindUsage
		}
		return l, true
	}
	if l, ok := FromText(strings.TrimSpace(msg+" "+d.Details), now); ok {
		l.Source = source
		if t, ok := d.resets(now); ok {
			l.ResetsAt = t
		}
		return l, true
	}
	return Limit{}, false
}

// finalReports are how agents that end a turn normally (end_turn) after
// their retries of a 429 ran out word it, as the whole of the turn's
// message: codex-acp 2.6.0 ("exceeded retry limit, last status: 429 Too
// Many Requests") and Copilot CLI 1.0.102 ("Error: Failed to get response
// from the AI model; retried 5 times (…) Last error: 429 …", or "Error:
// 429 …" when the 429's Retry-After is too far to retry). Anchored
// at the start of the message, so that a model's answer about rate limits
// is not taken for one.
var finalReports = []*regexp.Regexp{
	regexp.MustCompile(`(?is)^exceeded retry limit, last status: 429\b`),
	regexp.MustCompile(`(?is)^error: failed to get response from the ai model;.*\blast error: 429\b`),
	// Copilot CLI 1.0.102 when the 429's Retry-After is too far to retry.
	regexp.MustCompile(`(?is)^error: 429\b`),
}

// FromFinalMessage reads a limit from the message of a turn that ended
// without an error: an agent's own report that its requests were refused
// at a limit (finalReports).
func FromFinalMessage(text string, now time.Time) (Limit, bool) {
	text = strings.TrimSpace(text)
	for _, re := range finalReports {
		if !re.MatchString(text) {
			continue
		}
		l, ok := FromText(text, now)
		if !ok {
			l = Limit{Kind: KindRate, Message: text}
		}
		l.Source = "final_message"
		return l, true
	}
	return Limit{}, false
}

// resets is the reset time the fields give: resetsAt, else retryAfter.
func (d errorData) resets(now time.Time) (time.Time, bool) {
	for _, raw := range []json.RawMessage{d.ResetsAt, d.ResetsAtSnake, d.ResetAt, d.ResetAtSnake, d.RetryAfter, d.RetryAfterSnake} {
		if t, ok := jsonTime(raw, now); ok {
			return t, true
		}
	}
	return time.Time{}, false
}

// FromHTTP reads a limit from an HTTP answer that refused a request: 429
// always is one, 503 only with a Retry-After or a body that names a limit
// (else it is an outage). The reset is the Retry-After header's (seconds
// or an HTTP date), else what the body's error (cause) says.
func FromHTTP(status int, h http.Header, cause error, now time.Time) (Limit, bool) {
	if status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable {
		return Limit{}, false
	}
	l, named := FromError(cause, now)
	retry := strings.TrimSpace(h.Get("Retry-After"))
	if !named && status == http.StatusServiceUnavailable && retry == "" {
		return Limit{}, false
	}
	if !named {
		l = Limit{Kind: KindRate}
		if cause != nil {
			l.Message = cause.Error()
		}
	}
	l.Source = "http_" + strconv.Itoa(status)
	if t, ok := ParseReset(retry, now); ok {
		l.ResetsAt = t
	}
	return l, true
}

// Checked is an error its driver already read for a limit and found none
// (a limit would be an *Error): FromError does not read its text, which
// may hold ids ("task 5f429c…") that look like one.
type Checked interface {
	error
	LimitChecked()
}

// rateLimited is an error that carries the Claude rate_limit_info that
// rejected the turn (the stream-json driver's TurnError).
type rateLimited interface {
	error
	RateLimitInfo() json.RawMessage
}

// rpcError is the code, message and data of the agent's JSON-RPC error
// in err: a driver's RemoteError, or the connection's own error.
func rpcError(err error) (int, string, json.RawMessage, bool) {
	var de *driver.RemoteError
	if errors.As(err, &de) {
		return de.Code, de.Message, de.Data, true
	}
	var re *jsonrpc.Error
	if errors.As(err, &re) {
		return re.Code, re.Message, re.Data, true
	}
	return 0, "", nil, false
}

// jsonTime reads a reset time given as an RFC3339 string, a Retry-After
// text, or a number: Unix seconds (or milliseconds) when it is a plausible
// date, else seconds from now.
func jsonTime(raw json.RawMessage, now time.Time) (time.Time, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return time.Time{}, false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return ParseReset(s, now)
	}
	var n float64
	if json.Unmarshal(raw, &n) != nil || n < 0 {
		return time.Time{}, false
	}
	return unixOrDelay(n, now), true
}

// unixOrDelay reads n as Unix seconds or milliseconds when it is a date
// after 2001, else as seconds from now.
func unixOrDelay(n float64, now time.Time) time.Time {
	switch {
	case n > 1e12:
		return time.UnixMilli(int64(n)).UTC()
	case n > 1e9:
		return time.Unix(int64(n), 0).UTC()
	}
	return now.Add(time.Duration(n * float64(time.Second)))
}

// RateLimitInfo is Claude's rate_limit_event info (stream-json, and
// claude-agent-acp's usage_update _meta "_claude/rateLimit"), as
// @anthropic-ai/claude-agent-sdk 0.101.0's SDKRateLimitInfo defines it.
type RateLimitInfo struct {
	Status        string  `json:"status"` // allowed | allowed_warning | rejected
	ResetsAt      float64 `json:"resetsAt"`
	RateLimitType string  `json:"rateLimitType"`
}

// FromRateLimitInfo is the limit a rejected rate_limit_event reports.
func FromRateLimitInfo(raw json.RawMessage, now time.Time) (Limit, bool) {
	var info RateLimitInfo
	if json.Unmarshal(raw, &info) != nil || info.Status != "rejected" {
		return Limit{}, false
	}
	l := Limit{Kind: KindUsage, Source: "rate_limit_event", Message: info.RateLimitType}
	if info.ResetsAt > 0 {
		l.ResetsAt = unixOrDelay(info.ResetsAt, now)
	}
	return l, true
}

// limitPhrases are how agents word a limit, lower-cased, each with its
// kind. Sources: Claude SDK 0.101.0 USAGE_LIMIT_ERROR_PREFIXES ("You've hit
// your", "You've reached your", "You're out of usage credits"); codex-acp
// 0.16.0 ("You've hit your usage limit. … Try again at …"); Gemini and
// qwen (RESOURCE_EXHAUSTED, "Quota exceeded for quota metric"); OpenAI
// and Anthropic API bodies ("Rate limit reached", rate_limit_error).
var limitPhrases = []struct {
	phrase string
	kind   Kind
}{
	{"you've hit your", KindUsage},
	{"you've reached your", KindUsage},
	{"you're out of usage", KindUsage},
	{"you're out of extra usage", KindUsage},
	{"usage limit", KindUsage},
	{"quota exceeded", KindUsage},
	{"exceeded your current quota", KindUsage},
	{"quotaexceeded", KindUsage},
	{"resource_exhausted", KindRate},
	{"rate_limit_error", KindRate},
	{"rate limit", KindRate},
	{"rate-limit", KindRate},
	{"ratelimit", KindRate},
	{"too many requests", KindRate},
	{"429", KindRate},
}

// FromText recognises a limit in an agent's text: its error message, or
// the final message of a turn that ended on one.
func FromText(text string, now time.Time) (Limit, bool) {
	lower := strings.ToLower(strings.ReplaceAll(text, "’", "'"))
	for _, p := range limitPhrases {
		if !strings.Contains(lower, p.phrase) {
			continue
		}
		if p.phrase == "429" && !has429(lower) {
			continue
		}
		l := Limit{Kind: p.kind, Message: strings.TrimSpace(text), Source: "text"}
		if t, ok := ParseReset(text, now); ok {
			l.ResetsAt = t
		}
		return l, true
	}
	return Limit{}, false
}

// has429 is "429" as a status, not inside a longer number.
func has429(s string) bool {
	for i := strings.Index(s, "429"); i >= 0; {
		before := i == 0 || !isDigit(s[i-1])
		after := i+3 >= len(s) || !isDigit(s[i+3])
		if before && after {
			return true
		}
		j := strings.Index(s[i+3:], "429")
		if j < 0 {
			return false
		}
		i += 3 + j
	}
	return false
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// Backoff is the wait before retry attempt (0-based) when the agent gave
// no reset time: base doubled each attempt, at most max.
func Backoff(attempt int, base, max time.Duration) time.Duration {
	d := base
	for range attempt {
		if d >= max/2 {
			return max
		}
		d *= 2
	}
	return min(d, max)
}
