package audit

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// Entry kinds.
const (
	KindRunStart           = "run.start"
	KindRunEnd             = "run.end"
	KindSessionStart       = "session.start"
	KindSessionEnd         = "session.end"
	KindPrompt             = "prompt"
	KindTurnEnd            = "turn.end"
	KindScreenFinal        = "screen.final"
	KindAgentStop          = "agent.stop" // the agent's own end-of-turn hook (its transcript's path)
	KindAttach             = "tty.attach" // a user took over a terminal UI
	KindDetach             = "tty.detach" // ...and gave it back, or it exited
	KindPermissionRequest  = "permission.request"
	KindPermissionDecision = "permission.decision"
	KindFileWrite          = "file.write"
	KindTerminalStart      = "terminal.start"
	KindTerminal           = "terminal.exit"
	KindModeChange         = "mode.change"
	KindProcessStart       = "process.start"
	KindProcessExit        = "process.exit"
	KindError              = "error"
	KindBudget             = "budget"
	KindQuotaWait          = "quota.wait"     // a turn hit a usage limit and the run waits for its reset
	KindQuotaResume        = "quota.resume"   // ...and resumes the same session after it
	KindQuotaRelaunch      = "quota.relaunch" // ...after its agent died meanwhile: started again, its session loaded (or a new one told what was done)
	KindRunParked          = "run.parked"     // the run ended at a usage limit, its session kept
	KindFleet              = "fleet"
	KindFeedRefused        = "feed.refused"  // a request on the live feed from inside a sandbox, or without its secret
	KindFeedAnswered       = "feed.answered" // a human answered through the live feed: the channel (via) and the client's address
	KindFeedCancel         = "feed.cancel"   // a human cancelled the run through the live feed
	KindFeedHand           = "feed.hand"     // a human paused or released a fleet by hand through the live feed (tai fleet pause/resume, the page)
	KindWebRefused         = "web.refused"   // tai serve refused a request: no token, a cross-site POST, a sandboxed peer

	KindElicitationRequest  = "elicitation.request"
	KindElicitationAnswer   = "elicitation.answer" // with its provenance; secret fields redacted
	KindElicitationComplete = "elicitation.complete"
)

// GenesisPrev is the Prev of the first entry: 64 zeros.
const GenesisPrev = "0000000000000000000000000000000000000000000000000000000000000000"

// MaxLineSize bounds one encoded entry. Append rejects larger entries with
// ErrTooLarge and Verify reports longer lines as corrupt, so the writer and
// the verifier agree.
const MaxLineSize = 64 << 20

// Entry is one line of the log.
//
// On disk an entry is a single line of compact JSON whose members appear in
// exactly this order, with "hash" last:
//
//	{"seq":1,"ts":"2025-01-02T03:04:05.123456789Z","kind":"run.start","run":"r1","data":{...},"prev":"000…0","hash":"9f…"}
//
// Prev is the lowercase hex SHA-256 of the previous line's bytes (without its
// trailing newline), or GenesisPrev for the first entry.
//
// Hash is the lowercase hex SHA-256 of the line's bytes with the
// `,"hash":"<64 hex>"` member removed, i.e. of the JSON encoding of the entry
// without its hash. Verification works on the exact bytes, so any change to a
// line, even whitespace, is detected.
type Entry struct {
	Seq     uint64          `json:"seq"`
	Time    time.Time       `json:"ts"`
	Kind    string          `json:"kind"`
	Run     string          `json:"run,omitempty"`
	Session string          `json:"session,omitempty"`
	Task    string          `json:"task,omitempty"` // the fleet task whose session this is
	Data    json.RawMessage `json:"data,omitempty"` // kind-specific payload, already redacted
	Prev    string          `json:"prev"`
	Hash    string          `json:"hash"`
}

// hashMember is the length of `,"hash":"` + 64 hex digits + `"}`.
const hashMember = len(`,"hash":"`) + 64 + len(`"}`)

// appendBody appends the entry's encoding without the hash member and without
// the closing brace: `{"seq":…,"prev":"…"`. data must be compact JSON.
func appendBody(buf []byte, seq uint64, ts time.Time, kind, run, session, task string, data []byte, prev string) []byte {
	buf = append(buf, `{"seq":`...)
	buf = strconv.AppendUint(buf, seq, 10)
	buf = append(buf, `,"ts":"`...)
	buf = ts.UTC().AppendFormat(buf, time.RFC3339Nano)
	buf = append(buf, `","kind":`...)
	buf = appendString(buf, kind)
	if run != "" {
		buf = append(buf, `,"run":`...)
		buf = appendString(buf, run)
	}
	if session != "" {
		buf = append(buf, `,"session":`...)
		buf = appendString(buf, session)
	}
	if task != "" {
		buf = append(buf, `,"task":`...)
		buf = appendString(buf, task)
	}
	if len(data) > 0 {
		buf = append(buf, `,"data":`...)
		buf = append(buf, data...)
	}
	buf = append(buf, `,"prev":"`...)
	buf = append(buf, prev...)
	buf = append(buf, '"')
	return buf
}

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// with encoding/json, so the line always decodes.
func appendString(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				buf = append(buf, '\\', c)
			case c < 0x20 || c == 0x7f:
				buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				buf = append(buf, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			buf = append(buf, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			// Valid JSON, but some JavaScript-based viewers split lines on them.
			buf = append(buf, `\u202`...)
			buf = append(buf, hex[r&0xf])
		default:
			buf = append(buf, s[i:i+size]...)
		}
		i += size
	}
	return append(buf, '"')
}
