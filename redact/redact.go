// Package redact scrubs secrets from text and JSON before tai writes them to
// audit logs or raw wire traces (--trace FILE).
//
// Three mechanisms are combined:
//
//   - Patterns: regular expressions for well-known credential formats
//     (OpenAI/Anthropic "sk-" keys, GitHub tokens, AWS access key ids, Slack
//     tokens, Google API keys, "Bearer <token>", JWTs, PEM private key blocks)
//     plus user-supplied expressions.
//   - Literals: exact secret values, typically the values of environment
//     variables whose names look secret (see [SecretEnvLiterals]).
//   - Structure: in JSON, values under keys that look secret (api_key,
//     Authorization, GITHUB_TOKEN, ...) and the value of {"name","value"}
//     pairs whose name looks secret (the MCP env/headers shape used by ACP
//     session/new) are replaced.
//
// Every match is replaced with [Replacement]. A Redactor is immutable and safe
// for concurrent use. A nil *Redactor performs no redaction.
package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"sync"
)

// Replacement is what every redacted secret becomes. It contains no
// characters that need escaping in JSON, so substituting it inside a JSON
// string keeps the document valid.
const Replacement = "[REDACTED]"

var replacementBytes = []byte(Replacement)

// MinLiteralLen is the shortest literal [New] accepts; shorter literals would
// shred ordinary text.
const MinLiteralLen = 4

// ErrShortLiteral is returned (wrapped) by [New] for a literal shorter than
// [MinLiteralLen].
var ErrShortLiteral = errors.New("redact: literal too short")

// PatternError reports a user pattern that does not compile.
type PatternError struct {
	Pattern string
	Err     error
}

func (e *PatternError) Error() string {
	return fmt.Sprintf("redact: bad pattern %q: %v", e.Pattern, e.Err)
}

func (e *PatternError) Unwrap() error { return e.Err }

// Options configures [New].
type Options struct {
	// Patterns are extra regular expressions (RE2 syntax) added to the
	// built-in ones. If a pattern has a capture group named "secret"
	// (e.g. `token=(?P<secret>\w+)`) only that group is replaced; otherwise
	// the whole match is.
	Patterns []string
	// Literals are exact secret values to scrub wherever they occur. Their
	// JSON-escaped forms are scrubbed too. Empty strings are ignored;
	// literals shorter than MinLiteralLen are rejected.
	Literals []string
}

// Redactor redacts secrets. Create one with [New] or [Default].
type Redactor struct {
	patterns []pattern
	// pairs is a bitmap of the first two bytes of every trigger, and
	// triggers lists them, for the single-pass pre-check in candidates.
	pairs    [1 << 16 / 64]uint64
	triggers []trigger
	literals [][]byte // longest first, so a literal containing another wins
}

type trigger struct {
	s       []byte
	pattern int
}

type pattern struct {
	re *regexp.Regexp
	// triggers are substrings at least one of which must occur for re to be
	// able to match; they let Bytes skip the regexp engine on clean input.
	// nil means "always run".
	triggers [][]byte
	secret   int // index of the "secret" group, or 0 for the whole match
}

// jsonEsc lets a token pattern start right after a JSON escape such as the
// \n in "line\nsk-...", where \b would not match (n and s are both word
// characters).
const jsonEsc = `(?:\\[nrtbf]|\b)`

var builtins = []struct {
	expr     string
	triggers []string
}{
	// OpenAI (sk-, sk-proj-) and Anthropic (sk-ant-) keys.
	{jsonEsc + `(?P<secret>sk-[A-Za-z0-9_-]{20,})`, []string{"sk-"}},
	// GitHub classic (ghp_/gho_/ghu_/ghs_/ghr_) and fine-grained tokens.
	{jsonEsc + `(?P<secret>(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}))`,
		[]string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}},
	// AWS access key ids (long-term and STS).
	{jsonEsc + `(?P<secret>(?:AKIA|ASIA)[0-9A-Z]{16})\b`, []string{"AKIA", "ASIA"}},
	// Slack tokens.
	{jsonEsc + `(?P<secret>xox[abprs]-[A-Za-z0-9-]{10,})`, []string{"xox"}},
	// Google API keys.
	{jsonEsc + `(?P<secret>AIza[0-9A-Za-z_-]{35})`, []string{"AIza"}},
	// Bearer tokens: keep the scheme so the log still says what kind of
	// credential was there. 16+ chars avoids prose like "Bearer token".
	// The pre-check covers Bearer/bearer/BEARER, not mIxEd case.
	{`(?i:\bbearer)\s+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)`, []string{"earer", "EARER"}},
	// JWTs: base64url('{"') is "eyJ" for both header and payload.
	{jsonEsc + `(?P<secret>eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)`, []string{"eyJ"}},
	// PEM private keys: the whole block, or, if the END line is missing
	// (a block split across lines of a trace), the base64 body that follows.
	{`-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?:(?s:.*?)-----END[A-Z0-9 ]*PRIVATE KEY-----|(?:[A-Za-z0-9+/=\s]|\\[nr])*)`,
		[]string{"-----BEGIN"}},
}

var defaultRedactor = sync.OnceValue(func() *Redactor {
	r, err := New(Options{})
	if err != nil {
		panic("redact: built-in patterns: " + err.Error()) // programming error
	}
	return r
})

// Default returns a shared Redactor with only the built-in patterns.
func Default() *Redactor { return defaultRedactor() }

// New returns a Redactor with the built-in patterns plus opts. A bad pattern
// yields a *PatternError; a too-short literal wraps ErrShortLiteral.
func New(opts Options) (*Redactor, error) {
	r := &Redactor{}
	for _, b := range builtins {
		p := pattern{re: regexp.MustCompile(b.expr)}
		for _, t := range b.triggers {
			p.triggers = append(p.triggers, []byte(t))
		}
		p.secret = max(p.re.SubexpIndex("secret"), 0)
		r.patterns = append(r.patterns, p)
	}
	for _, expr := range opts.Patterns {
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, &PatternError{Pattern: expr, Err: err}
		}
		p := pattern{re: re, secret: max(re.SubexpIndex("secret"), 0)}
		// A complete literal prefix is a cheap, exact pre-check.
		if prefix, _ := re.LiteralPrefix(); len(prefix) >= 2 {
			p.triggers = [][]byte{[]byte(prefix)}
		}
		r.patterns = append(r.patterns, p)
	}
	seen := map[string]bool{}
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			r.literals = append(r.literals, []byte(s))
		}
	}
	for i, lit := range opts.Literals {
		if lit == "" {
			continue
		}
		if len(lit) < MinLiteralLen {
			return nil, fmt.Errorf("literal #%d (%d bytes, minimum %d): %w", i+1, len(lit), MinLiteralLen, ErrShortLiteral)
		}
		add(lit)
		// Inside JSON the value may appear escaped (quotes, backslashes,
		// control characters, non-ASCII as-is).
		if esc, err := json.Marshal(lit); err == nil {
			add(string(esc[1 : len(esc)-1]))
		}
	}
	for i, p := range r.patterns {
		for _, t := range p.triggers {
			k := uint16(t[0])<<8 | uint16(t[1])
			r.pairs[k/64] |= 1 << (k % 64)
			r.triggers = append(r.triggers, trigger{s: t, pattern: i})
		}
	}
	sort.SliceStable(r.literals, func(i, j int) bool { return len(r.literals[i]) > len(r.literals[j]) })
	return r, nil
}

// String redacts free text. See [Redactor.Bytes].
func (r *Redactor) String(s string) string {
	if r == nil || s == "" {
		return s
	}
	b := []byte(s)
	out := r.Bytes(b)
	if &out[0] == &b[0] && len(out) == len(b) {
		return s
	}
	return string(out)
}

// textString applies only patterns and literals, for strings inside a JSON
// value being walked (which must not be treated as JSON documents).
func (r *Redactor) textString(s string) string {
	if out, changed := r.text([]byte(s)); changed {
		return string(out)
	}
	return s
}

// Bytes redacts free text or one JSON document (e.g. a JSON-RPC line, with or
// without its trailing newline).
//
// Patterns and literals are applied to the raw bytes. If b is a JSON object
// or array and contains a string that looks like a secret name, the
// structural rules of [Redactor.JSON] are applied as well; in that case (and
// only then) the document is re-encoded, so key order may change. Valid JSON
// input always yields valid JSON output.
//
// When nothing needs redacting, Bytes returns b itself without allocating;
// otherwise it returns a new slice and never modifies b.
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil || len(b) == 0 {
		return b
	}
	out, changed := r.text(b)
	if changed && !json.Valid(out) && json.Valid(b) {
		// A match straddled JSON syntax (e.g. a literal equal to a number,
		// or a PEM block spanning two strings): redact value by value.
		if s, ok := r.structural(b, true); ok {
			return s
		}
		return replacementJSON(b)
	}
	if !looksJSON(b) {
		return out
	}
	if hasSecretName(out) {
		if s, ok := r.structural(out, false); ok {
			return s
		}
	}
	return out
}

// text applies patterns and literals.
func (r *Redactor) text(b []byte) ([]byte, bool) {
	out := b
	changed := false
	maybe := r.candidates(b)
	for i := range r.patterns {
		p := &r.patterns[i]
		if p.triggers != nil && (i >= 64 || maybe&(1<<i) == 0) {
			if i < 64 || !p.mayMatch(b) {
				continue
			}
		}
		locs := p.re.FindAllSubmatchIndex(out, -1)
		if len(locs) == 0 {
			continue
		}
		buf := make([]byte, 0, len(out))
		last := 0
		for _, loc := range locs {
			start, end := loc[2*p.secret], loc[2*p.secret+1]
			if start < 0 || start < last {
				continue
			}
			buf = append(buf, out[last:start]...)
			buf = append(buf, replacementBytes...)
			last = end
		}
		buf = append(buf, out[last:]...)
		out, changed = buf, true
	}
	for _, lit := range r.literals {
		if bytes.Contains(out, lit) {
			out, changed = bytes.ReplaceAll(out, lit, replacementBytes), true
		}
	}
	return out, changed
}

// candidates returns a bit set of the patterns (index < 64) whose triggers
// occur in b. One pass over a bitmap of trigger byte pairs is several times
// faster than a bytes.Index per trigger, because triggers start with letters
// that are common in prose.
func (r *Redactor) candidates(b []byte) uint64 {
	var set uint64
	for i := 0; i+1 < len(b); i++ {
		k := uint16(b[i])<<8 | uint16(b[i+1])
		if r.pairs[k/64]&(1<<(k%64)) == 0 {
			continue
		}
		for _, t := range r.triggers {
			if t.pattern < 64 && bytes.HasPrefix(b[i:], t.s) {
				set |= 1 << t.pattern
			}
		}
	}
	return set
}

func (p *pattern) mayMatch(b []byte) bool {
	if p.triggers == nil {
		return true
	}
	for _, t := range p.triggers {
		if bytes.Contains(b, t) {
			return true
		}
	}
	return false
}

func looksJSON(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{', '[':
			return true
		default:
			return false
		}
	}
	return false
}

// hasSecretName reports whether some JSON string token in b looks like a
// secret key or env/header name. It is a cheap, allocation-free gate in
// front of the decode/re-encode path; false positives only cost time.
func hasSecretName(b []byte) bool {
	for {
		q := bytes.IndexByte(b, '"')
		if q < 0 {
			return false
		}
		b = b[q+1:]
		// Find the closing quote: one not preceded by an odd number of
		// backslashes.
		end := -1
		for off := 0; end < 0; {
			k := bytes.IndexByte(b[off:], '"')
			if k < 0 {
				return false
			}
			k += off
			n := 0
			for k-1-n >= 0 && b[k-1-n] == '\\' {
				n++
			}
			if n%2 == 0 {
				end = k
			}
			off = k + 1
		}
		if looksSecretName(b[:end]) {
			return true
		}
		b = b[end+1:]
	}
}

// structural decodes a single JSON document, redacts it with the JSON rules
// (and, if deep, applies patterns and literals to every string and number),
// and re-encodes it, preserving b's surrounding whitespace. ok is false if b
// is not a single JSON document or nothing changed.
func (r *Redactor) structural(b []byte, deep bool) (out []byte, ok bool) {
	lead := len(b) - len(bytes.TrimLeft(b, " \t\r\n"))
	trimmed := bytes.TrimRight(b, " \t\r\n")
	trail := b[len(trimmed):]
	dec := json.NewDecoder(bytes.NewReader(trimmed[lead:]))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.InputOffset() != int64(len(trimmed)-lead) {
		return nil, false
	}
	w := walker{r: r, deep: deep}
	v = w.walk(v)
	if !w.changed {
		return nil, false
	}
	var buf bytes.Buffer
	buf.Grow(len(b))
	buf.Write(b[:lead])
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep the text readable; no HTML consumers
	if err := enc.Encode(v); err != nil {
		return nil, false
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	buf.Write(trail)
	return buf.Bytes(), true
}

// replacementJSON is the last resort for valid JSON we could not redact
// value by value: replace the whole document, keeping it valid.
func replacementJSON(b []byte) []byte {
	trimmed := bytes.TrimRight(b, " \t\r\n")
	out := append([]byte(`"`+Replacement+`"`), b[len(trimmed):]...)
	return out
}
