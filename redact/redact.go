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
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
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
	// JSON-escaped forms are scrubbed too, and their hex, URL-escaped and
	// base64 forms (see encodedForms). Empty strings are ignored;
	// literals shorter than MinLiteralLen are rejected.
	Literals []string
}

// Redactor redacts secrets. Create one with [New] or [Default].
//
// Text is scanned once: a table of the first two bytes of every place a
// secret can start (a pattern's literal start, a literal) gates the
// position, and only there is a pattern's regexp run, anchored, for the
// length of the match. Only user patterns without a literal start need a
// regexp search over the whole text.
type Redactor struct {
	anchored []pattern // patterns with literal starts, matched where they start
	floating []pattern // user patterns without one: searched for
	// first and pairs gate a position: its byte, then its two bytes, can
	// begin some start.
	first  [256]bool
	pairs  [1 << 16 / 64]uint64
	starts [256][]start // by first byte (both cases for case-folded starts)
	// literals, longest first, so a literal containing another wins.
	literals [][]byte
}

// start is one literal beginning of a pattern's match, or a literal.
type start struct {
	s       []byte
	fold    bool // compare ASCII case-insensitively
	pattern int  // index into anchored; -1 for a literal
	lit     []byte
}

type pattern struct {
	// re is the expression, anchored (^) for anchored patterns. The
	// built-ins compile on first use: most text never starts like a
	// secret, and compiling them all was most of a run's redactor.
	re     func() compiled
	starts []string
	fold   bool
	word   bool // must begin a word (or follow a JSON escape such as \n)
	// quick, if set, is a cheap necessary condition on what follows the
	// start, so prose that only starts like a secret skips the regexp.
	quick func(rest []byte) bool
}

// compiled is a pattern's expression compiled.
type compiled struct {
	re     *regexp.Regexp
	secret int // index of the "secret" group, or 0 for the whole match
}

func compile(expr string) compiled {
	re := regexp.MustCompile(expr)
	return compiled{re: re, secret: max(re.SubexpIndex("secret"), 0)}
}

// builtins are the credential formats tai knows. starts are the literal
// beginnings of a match; expr is matched from there.
var builtins = []struct {
	expr   string
	starts []string
	fold   bool // starts compare case-insensitively
	word   bool // a match begins a word, or follows a JSON escape (the \n in "line\nsk-...")
	quick  func(rest []byte) bool
}{
	// OpenAI (sk-, sk-proj-) and Anthropic (sk-ant-) keys.
	{`sk-[A-Za-z0-9_-]{20,}`, []string{"sk-"}, false, true, run(alnum+"_-", 20)},
	// GitHub classic (ghp_/gho_/ghu_/ghs_/ghr_) and fine-grained tokens.
	{`gh[pousr]_[A-Za-z0-9]{30,}`, []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, false, true, run(alnum, 30)},
	{`github_pat_[A-Za-z0-9_]{30,}`, []string{"github_pat_"}, false, true, run(alnum+"_", 30)},
	// AWS access key ids (long-term and STS).
	{`(?:AKIA|ASIA)[0-9A-Z]{16}\b`, []string{"AKIA", "ASIA"}, false, true, run("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ", 16)},
	// Slack tokens.
	{`xox[abprs]-[A-Za-z0-9-]{10,}`, []string{"xox"}, false, true, func(rest []byte) bool {
		return len(rest) >= 2 && bytes.IndexByte([]byte("abprs"), rest[0]) >= 0 && rest[1] == '-'
	}},
	// Google API keys.
	{`AIza[0-9A-Za-z_-]{35}`, []string{"AIza"}, false, true, run(alnum+"_-", 35)},
	// Bearer tokens: keep the scheme so the log still says what kind of
	// credential was there. 16+ chars avoids prose like "Bearer token".
	{`(?i:bearer)\s+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)`, []string{"bearer"}, true, true, afterSpace(run(alnum+"._~+/-", 16))},
	// JWTs: base64url('{"') is "eyJ" for both header and payload.
	{`eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`, []string{"eyJ"}, false, true, run(alnum+"_-", 8)},
	// Credentials in URLs: the password of scheme://user:password@host.
	{`://[^/?#@\s"'\\]*:(?P<secret>[^/?#@\s"'\\]+)@`, []string{"://"}, false, false, nil},
	// Tokens in query strings: ?token=..., &api_key=..., &sig=...
	{`[?&][A-Za-z0-9_.-]+=(?P<secret>[^&#\s"'\\<>]+)`, []string{"?", "&"}, false, false, secretQueryName},
	// PEM private keys: the whole block, or, if the END line is missing
	// (a block split across lines of a trace), the base64 body that follows.
	{`-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?:(?s:.*?)-----END[A-Z0-9 ]*PRIVATE KEY-----|(?:[A-Za-z0-9+/=\s]|\\[nr])*)`,
		[]string{"-----BEGIN"}, false, false, pemStart},
}

// pemStart: "-----BEGIN" is followed by [A-Z0-9 ]* and PRIVATE KEY-----.
func pemStart(rest []byte) bool {
	const tail = "PRIVATE KEY-----"
	k := bytes.Index(rest[:min(len(rest), 80)], []byte(tail))
	if k < 0 {
		return false
	}
	for _, c := range rest[:k] {
		if !(c == ' ' || '0' <= c && c <= '9' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// secretQueryName: rest (after ? or &) is name=value with a name that
// looks secret.
func secretQueryName(rest []byte) bool {
	i := 0
	for i < len(rest) && i < maxNameLen && (isWord(rest[i]) || rest[i] == '-' || rest[i] == '.') {
		i++
	}
	if i == 0 || i >= len(rest) || rest[i] != '=' {
		return false
	}
	name := rest[:i]
	if looksSecretName(name) {
		return true
	}
	for _, n := range queryNames {
		if equalFold(name, n) {
			return true
		}
	}
	return false
}

// queryNames are query parameters that carry credentials though their
// names alone do not look secret.
var queryNames = []string{"key", "sig", "signature", "auth", "code", "pass", "pwd", "jwt", "session", "sessionid"}

const alnum = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// run is a quick check: rest begins with n bytes of the set.
func run(set string, n int) func([]byte) bool {
	var in [256]bool
	for i := 0; i < len(set); i++ {
		in[set[i]] = true
	}
	return func(rest []byte) bool {
		if len(rest) < n {
			return false
		}
		for _, c := range rest[:n] {
			if !in[c] {
				return false
			}
		}
		return true
	}
}

// afterSpace applies check after the white space rest begins with (at
// least one byte of it).
func afterSpace(check func([]byte) bool) func([]byte) bool {
	return func(rest []byte) bool {
		i := 0
		for i < len(rest) && (rest[i] == ' ' || rest[i] == '\t' || rest[i] == '\n' || rest[i] == '\r' || rest[i] == '\f' || rest[i] == '\v') {
			i++
		}
		return i > 0 && check(rest[i:])
	}
}

var defaultRedactor = sync.OnceValue(func() *Redactor {
	r, err := New(Options{})
	if err != nil {
		panic("redact: built-in patterns: " + err.Error()) // programming error
	}
	return r
})

// builtinPatterns are the built-ins, each compiled once per process on
// first use: a run makes a Redactor for its audit log, its session record
// and its feed.
var builtinPatterns = sync.OnceValue(func() []pattern {
	ps := make([]pattern, 0, len(builtins))
	for _, b := range builtins {
		re := sync.OnceValue(func() compiled { return compile(`^(?:` + b.expr + `)`) })
		ps = append(ps, pattern{re: re, starts: b.starts, fold: b.fold, word: b.word, quick: b.quick})
	}
	return ps
})

// Default returns a shared Redactor with only the built-in patterns.
func Default() *Redactor { return defaultRedactor() }

// New returns a Redactor with the built-in patterns plus opts. A bad pattern
// yields a *PatternError; a too-short literal wraps ErrShortLiteral.
func New(opts Options) (*Redactor, error) {
	r := &Redactor{anchored: slices.Clone(builtinPatterns())}
	for _, expr := range opts.Patterns {
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, &PatternError{Pattern: expr, Err: err}
		}
		// Every match of a pattern with a literal prefix starts with it:
		// matched where the prefix occurs, the pattern costs no search.
		if prefix, _ := re.LiteralPrefix(); len(prefix) >= 2 {
			c := compile(`^(?:` + expr + `)`)
			r.anchored = append(r.anchored, pattern{re: func() compiled { return c }, starts: []string{prefix}})
			continue
		}
		c := compiled{re: re, secret: max(re.SubexpIndex("secret"), 0)}
		r.floating = append(r.floating, pattern{re: func() compiled { return c }})
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
		// Inside JSON the value, and its encodings, may appear escaped
		// (quotes, backslashes, control characters, & < > as \u00XX).
		for _, form := range append([]string{lit}, encodedForms(lit)...) {
			add(form)
			if esc, err := json.Marshal(form); err == nil {
				add(string(esc[1 : len(esc)-1]))
			}
		}
	}
	sort.SliceStable(r.literals, func(i, j int) bool { return len(r.literals[i]) > len(r.literals[j]) })
	for i, p := range r.anchored {
		for _, s := range p.starts {
			r.addStart(start{s: []byte(s), fold: p.fold, pattern: i})
		}
	}
	for _, lit := range r.literals {
		r.addStart(start{s: lit, pattern: -1, lit: lit})
	}
	return r, nil
}

// minEncodedLen is the shortest encoded form of a literal that is
// scrubbed: shorter runs of hex or base64 occur by chance.
const minEncodedLen = 6

// encodedForms are the ways a secret value is commonly spelled in text
// that carries it encoded: hex (either case), URL escapes (query and
// path), and base64 (standard and URL alphabets, padded or not). A value
// inside a longer base64 string is spelled by its position modulo 3: for
// each, the characters that depend only on the value's bytes (the first
// and last ones mix in its neighbours' bits) are scrubbed, which leaves at
// most a character or two of it on either side.
func encodedForms(lit string) []string {
	var out []string
	add := func(s string) {
		if len(s) >= minEncodedLen && s != lit {
			out = append(out, s)
		}
	}
	h := hex.EncodeToString([]byte(lit))
	add(h)
	add(strings.ToUpper(h))
	add(url.QueryEscape(lit))
	add(url.PathEscape(lit))
	n := len(lit)
	buf := make([]byte, 2+n)
	copy(buf[2:], lit)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		add(enc.EncodeToString([]byte(lit)))
		raw := enc.WithPadding(base64.NoPadding)
		for a := range 3 {
			// a bytes before the value: characters [skip, whole) are its own.
			e := raw.EncodeToString(buf[2-a:])
			skip := [3]int{0, 2, 3}[a]
			whole := (a + n) * 8 / 6
			if a == 0 {
				add(e) // the value on its own, unpadded: its last character too
			}
			if whole > skip {
				add(e[skip:whole])
			}
		}
	}
	return out
}

// addStart indexes st by its first byte and its first two bytes (in both
// cases when it folds case).
func (r *Redactor) addStart(st start) {
	variants := func(c byte) []byte {
		if st.fold && unicode.IsLetter(rune(c)) && c < utf8.RuneSelf {
			return []byte{c | 0x20, c &^ 0x20}
		}
		return []byte{c}
	}
	for _, c0 := range variants(st.s[0]) {
		r.first[c0] = true
		r.starts[c0] = append(r.starts[c0], st)
		if len(st.s) < 2 {
			for c1 := range 256 { // a one-byte start: every pair
				k := uint16(c0)<<8 | uint16(c1)
				r.pairs[k/64] |= 1 << (k % 64)
			}
			continue
		}
		for _, c1 := range variants(st.s[1]) {
			k := uint16(c0)<<8 | uint16(c1)
			r.pairs[k/64] |= 1 << (k % 64)
		}
	}
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

// Spans returns the byte ranges of text that patterns and literals would
// replace, in order and not overlapping. A caller that must keep the text's
// shape (the chunks a streamed reply came in) redacts those ranges itself.
func (r *Redactor) Spans(text []byte) [][2]int {
	if r == nil {
		return nil
	}
	var spans [][2]int
	for i := 0; i < len(text); i++ {
		if i+1 < len(text) {
			k := uint16(text[i])<<8 | uint16(text[i+1])
			if r.pairs[k>>6]&(1<<(k&63)) == 0 {
				continue
			}
		} else if !r.first[text[i]] {
			continue
		}
		from, to, next, ok := r.matchAt(text, i)
		if !ok {
			continue
		}
		spans = append(spans, [2]int{from, to})
		i = next - 1
	}
	for i := range r.floating {
		c := r.floating[i].re()
		for _, loc := range c.re.FindAllSubmatchIndex(text, -1) {
			if loc[2*c.secret] >= 0 {
				spans = append(spans, [2]int{loc[2*c.secret], loc[2*c.secret+1]})
			}
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i][0] < spans[j][0] })
	merged := spans[:0]
	for _, sp := range spans {
		if n := len(merged); n > 0 && sp[0] <= merged[n-1][1] {
			merged[n-1][1] = max(merged[n-1][1], sp[1])
			continue
		}
		merged = append(merged, sp)
	}
	return merged
}

// text applies patterns and literals in one pass over b.
func (r *Redactor) text(b []byte) ([]byte, bool) {
	var out []byte // nil until the first match
	last := 0      // b[last:] is not yet in out
	for i := 0; i < len(b); i++ {
		if i+1 < len(b) {
			k := uint16(b[i])<<8 | uint16(b[i+1])
			if r.pairs[k>>6]&(1<<(k&63)) == 0 {
				continue
			}
		} else if !r.first[b[i]] {
			continue
		}
		from, to, next, ok := r.matchAt(b, i)
		if !ok {
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(b))
		}
		out = append(out, b[last:from]...)
		out = append(out, replacementBytes...)
		last = to
		i = next - 1
	}
	changed := out != nil
	if changed {
		out = append(out, b[last:]...)
	} else {
		out = b
	}
	for i := range r.floating {
		if o, ok := r.floating[i].replaceAll(out); ok {
			out, changed = o, true
		}
	}
	return out, changed
}

// matchAt tries every start that can begin at b[i]: it returns the span to
// replace and where scanning goes on.
func (r *Redactor) matchAt(b []byte, i int) (from, to, next int, ok bool) {
	for _, st := range r.starts[b[i]] {
		if len(b)-i < len(st.s) {
			continue
		}
		if st.fold {
			if !equalFold(b[i:i+len(st.s)], st.s) {
				continue
			}
		} else if !bytes.HasPrefix(b[i:], st.s) {
			continue
		}
		if st.pattern < 0 {
			return i, i + len(st.lit), i + len(st.lit), true
		}
		p := &r.anchored[st.pattern]
		if p.word && !wordStart(b, i) || p.quick != nil && !p.quick(b[i+len(st.s):]) {
			continue
		}
		c := p.re()
		loc := c.re.FindSubmatchIndex(b[i:])
		if loc == nil || loc[2*c.secret] < 0 {
			continue
		}
		return i + loc[2*c.secret], i + loc[2*c.secret+1], i + max(loc[1], 1), true
	}
	return 0, 0, 0, false
}

// wordStart reports whether a match may begin at b[i]: at a word boundary
// (for a match beginning with a word character) or right after a JSON
// escape such as the \n of "line\nsk-...".
func wordStart(b []byte, i int) bool {
	if i == 0 || !isWord(b[i]) || !isWord(b[i-1]) {
		return true
	}
	if i >= 2 && b[i-2] == '\\' {
		switch b[i-1] {
		case 'n', 'r', 't', 'b', 'f':
			return true
		}
	}
	return false
}

func isWord(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// replaceAll replaces every match of a floating pattern.
func (p *pattern) replaceAll(b []byte) ([]byte, bool) {
	c := p.re()
	locs := c.re.FindAllSubmatchIndex(b, -1)
	if len(locs) == 0 {
		return b, false
	}
	buf := make([]byte, 0, len(b))
	last := 0
	for _, loc := range locs {
		start, end := loc[2*c.secret], loc[2*c.secret+1]
		if start < 0 || start < last {
			continue
		}
		buf = append(buf, b[last:start]...)
		buf = append(buf, replacementBytes...)
		last = end
	}
	return append(buf, b[last:]...), true
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
