package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tai-dev/tai/internal/safetext"
	"github.com/tai-dev/tai/render"
)

// Filter selects entries for Render and RenderJSON. Zero fields match
// everything.
type Filter struct {
	// Session matches entries whose session equals it or starts with it,
	// or whose short form (what Render prints) starts with it.
	Session string
	// Task matches the entries of this fleet task's sessions.
	Task string
	// Kinds matches entries whose kind equals one of them, or is below one
	// of them ("permission" matches "permission.request" and
	// "permission.decision").
	Kinds []string
}

// Match reports whether e passes the filter.
func (f Filter) Match(e Entry) bool {
	if f.Session != "" && !strings.HasPrefix(e.Session, f.Session) && !strings.HasPrefix(ShortSession(e.Session), f.Session) {
		return false
	}
	if f.Task != "" && e.Task != f.Task {
		return false
	}
	if len(f.Kinds) == 0 {
		return true
	}
	for _, k := range f.Kinds {
		if e.Kind == k || strings.HasPrefix(e.Kind, k+".") {
			return true
		}
	}
	return false
}

// Render writes one human-readable line per matching entry:
//
//	2025-01-02T03:04:05.123Z     12  8f2c01ab  permission.decision  allow option=allow_once by rule:git-ro reason="read-only git"
//
// An entry of a fleet task's session names the task before the session:
// "lint/8f2c01ab".
//
// Strings from the log are quoted when they contain spaces or control
// characters, so agent-controlled text cannot inject terminal escapes. Lines
// that are not entries are an error (*BadLineError); Render does not verify
// hashes (see Verify).
func Render(w io.Writer, r io.Reader, f Filter) error {
	cols := measure(r, f)
	bw := bufio.NewWriter(w)
	err := scan(r, true, func(_ int, _ []byte, e *Entry) error {
		if !f.Match(*e) {
			return nil
		}
		_, err := fmt.Fprintf(bw, "%s %*d  %s  %s  %s\n", e.Time.UTC().Format("2006-01-02T15:04:05.000Z"), cols.seq, e.Seq,
			padCut(sessionLabel(e), cols.session, "/"), padCut(clean(e.Kind), cols.kind, ""), summary(e))
		return err
	})
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return err
}

// columns are the widths of Render's columns: one per log, so the lines
// line up whatever their kinds, tasks and sequence numbers.
type columns struct{ seq, session, kind int }

// The widths' bounds: a column never narrower than its usual content
// (a run's 8-character session, every kind tai writes), nor wider than
// a long task id or an unknown kind deserves (cut in the middle, alike on
// every line).
const (
	minSeq, minSession, maxSession, maxKind = 6, 8, 48, 24
)

// kindWidth is the longest kind tai writes.
var kindWidth = func() int {
	n := 0
	for _, k := range []string{KindRunStart, KindRunEnd, KindSessionStart, KindSessionEnd, KindPrompt, KindTurnEnd, KindScreenFinal,
		KindAgentStop, KindAttach, KindDetach, KindPermissionRequest, KindPermissionDecision, KindFileWrite, KindTerminalStart,
		KindTerminal, KindModeChange, KindProcessStart, KindProcessExit, KindError, KindBudget, KindFleet, KindFeedRefused,
		KindFeedAnswered, KindFeedCancel, KindFeedHand, KindWebRefused,
		KindElicitationRequest, KindElicitationAnswer, KindElicitationComplete} {
		n = max(n, len(k))
	}
	return n
}()

// measure reads a log that can be read twice (a file) for its columns'
// widths and rewinds it; another reader gets the widths that fit every
// kind tai writes and a fleet's task ids up to the session column's bound.
func measure(r io.Reader, f Filter) columns {
	c := columns{seq: minSeq, session: minSession, kind: kindWidth}
	rs, ok := r.(io.ReadSeeker)
	if !ok {
		c.session = maxSession
		return c
	}
	start, err := rs.Seek(0, io.SeekCurrent)
	if err != nil {
		c.session = maxSession
		return c
	}
	// A bad line is Render's to report, as it reaches it.
	_ = scan(rs, false, func(_ int, _ []byte, e *Entry) error {
		if f.Match(*e) {
			c.seq = max(c.seq, len(strconv.FormatUint(e.Seq, 10)))
			c.session = min(max(c.session, utf8.RuneCountInString(sessionLabel(e))), maxSession)
			c.kind = min(max(c.kind, utf8.RuneCountInString(clean(e.Kind))), maxKind)
		}
		return nil
	})
	if _, err := rs.Seek(start, io.SeekStart); err != nil {
		return columns{seq: minSeq, session: maxSession, kind: kindWidth}
	}
	return c
}

// sessionLabel is an entry's session as Render shows it: its short id
// (- for none), after its fleet task's id.
func sessionLabel(e *Entry) string {
	sess := ShortSession(e.Session)
	if sess == "" {
		sess = "-"
	}
	if e.Task != "" {
		sess = e.Task + "/" + sess
	}
	return clean(sess)
}

// padCut is s in exactly w columns: padded, or cut in its middle (tasks'
// ids differ at their ends); with keep, what follows its last occurrence
// (a task's session) stays whole if it can.
func padCut(s string, w int, keep string) string {
	r := []rune(s)
	if len(r) <= w {
		return s + strings.Repeat(" ", w-len(r))
	}
	if i := strings.LastIndex(s, keep); keep != "" && i > 0 {
		if tail := utf8.RuneCountInString(s[i:]); w-tail >= 5 {
			return padCut(s[:i], w-tail, "") + s[i:]
		}
	}
	head := (w - 1) / 2
	return string(r[:head]) + "…" + string(r[len(r)-(w-1-head):])
}

// RenderJSON writes matching lines verbatim (JSONL), e.g. for jq.
func RenderJSON(w io.Writer, r io.Reader, f Filter) error {
	bw := bufio.NewWriter(w)
	err := scan(r, true, func(_ int, raw []byte, e *Entry) error {
		if !f.Match(*e) {
			return nil
		}
		bw.Write(raw)
		return bw.WriteByte('\n')
	})
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return err
}

// ShortSession is the 8 characters of a session id that tell sessions
// apart: agents prefix their ids with a name ("builtin-4d37a8dc…",
// "ses_…"), so a prefix that is not hex (a UUID's first group is) is
// skipped.
func ShortSession(id string) string {
	if i := strings.IndexAny(id, "-_"); i > 0 && i < len(id)-1 && i <= 12 && strings.Trim(id[:i], "0123456789abcdefABCDEF") != "" {
		id = id[i+1:]
	}
	if len(id) > 8 {
		id = id[:8]
	}
	return id
}

// summary renders an entry's data compactly, by kind.
func summary(e *Entry) string {
	if len(e.Data) == 0 {
		return ""
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(e.Data))
	d.UseNumber()
	if err := d.Decode(&m); err != nil || m == nil {
		return truncate(string(e.Data), 160)
	}
	var parts []string
	add := func(s string) {
		if s != "" {
			parts = append(parts, s)
		}
	}
	kv := func(k string) string {
		if v, ok := m[k]; ok && v != nil && v != "" {
			delete(m, k)
			return k + "=" + scalar(v)
		}
		delete(m, k)
		return ""
	}
	str := func(k string) string {
		v, ok := m[k]
		delete(m, k)
		if !ok || v == nil {
			return ""
		}
		return scalar(v)
	}
	switch e.Kind {
	case KindPermissionDecision:
		add(str("decision"))
		add(kv("option"))
		if by := str("decided_by"); by != "" {
			add("by " + by)
		}
		add(kv("reason"))
		delete(m, "request")
	case KindPermissionRequest:
		add(str("title"))
		add(kv("tool"))
		add(kv("options"))
		delete(m, "request")
	case KindFileWrite:
		add(str("path"))
		if s := str("size"); s != "" {
			add(s + "B")
		}
		before, after := short(str("hash_before")), short(str("hash_after"))
		if before == "" {
			before = "new"
		}
		add(before + "→" + after)
	case KindTerminalStart, KindTerminal:
		add("$ " + commandLine(m))
		if s := str("exit_status"); s != "" {
			add("→ exit " + s)
		}
		add(kv("signal"))
		add(kv("cwd"))
	case KindModeChange:
		add(str("from") + "→" + str("to"))
		add(kv("by"))
	case KindPrompt:
		if t, ok := m["text"].(string); ok {
			delete(m, "text")
			add(clean(truncate(t, 100)))
		}
	case KindError:
		add(str("error"))
	}
	// Remaining fields, sorted, for everything else.
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		add(clean(k) + "=" + scalar(m[k]))
	}
	return truncate(strings.Join(parts, " "), 240)
}

// commandLine is a terminal entry's command as tai ran it: an argv quoted
// once as a shell reads it (render.ShellLine, which escapes what a
// terminal acts on), or the shell line run by sh -c, escaped. It takes
// command and args out of m.
func commandLine(m map[string]any) string {
	cmd, _ := m["command"].(string)
	raw, hasArgs := m["args"].([]any)
	if _, ok := m["command"]; ok && cmd == "" {
		cmd = scalar(m["command"]) // not a string: shown as the log has it
	}
	delete(m, "command")
	delete(m, "args")
	if !hasArgs || len(raw) == 0 {
		return safetext.Line(cmd)
	}
	args := make([]string, len(raw))
	for i, a := range raw {
		if s, ok := a.(string); ok {
			args[i] = s
		} else {
			args[i] = scalar(a)
		}
	}
	return render.ShellLine(cmd, args)
}

// scalar formats a JSON value for a summary: strings quoted if needed,
// composites as compact JSON.
func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return clean(x)
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	default:
		b, _ := json.Marshal(x)
		return truncate(string(b), 80)
	}
}

// clean quotes s if it contains spaces, quotes or non-printable characters.
func clean(s string) string {
	if s == "" {
		return `""`
	}
	for _, r := range s {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) || r == '"' || r == '=' {
			return strconv.Quote(s)
		}
	}
	return s
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary.
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
