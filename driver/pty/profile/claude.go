package profile

import (
	"regexp"
	"time"
)

// Claude Code 2.1 (captured: testdata/claude/2.1.332). It draws on the
// main screen and lays out to the full height: the transcript at the top
// ("❯ prompt" echoed, "● text" replies, "● Write(hello.txt)" tool rows
// with "  ⎿  result" under them, "✻ Crunched for 0s" after a turn), the
// live area at the bottom: the spinner row "✽ Working…", the effort
// indicator "◐ medium · /effort", the composer "❯ " between two rules,
// and the footer "⏸ manual mode on · ? for shortcuts" that says "esc to
// interrupt" while it works. The permission picker replaces the composer:
// the file preview, "Do you want to create hello.txt?", "❯ 1. Yes",
// "2. Yes, and switch to accept edits (…) for this session", "3. No",
// "Esc to cancel · Tab to amend". The first start in a folder asks
// "Accessing workspace: … one you trust?" with an arrow list without
// numbers, "❯ No, exit" highlighted over "Yes, I trust this folder".
func claude() *Profile {
	return &Profile{
		Name: "claude",
		// The spinner's verb ends in "…" while it works; the row that
		// stays after the turn says "✻ Crunched for 0s" without it.
		Working:           []*regexp.Regexp{rx(`esc to interrupt`), rx(`^\s*[✻✽✶✳✢·*]\s+\w+…`)},
		Composer:          rx(`^\s*[>❯]\s?(.*?)\s*$`),
		ComposerUnderRule: true,
		// After a failed request the box's hint is "Resend your message
		// to try again" (2.1.332 against a 429).
		Placeholder: rx(`^(?:Try "|Resend your message to try again$)`),
		PickerHint: []*regexp.Regexp{rx(`Do you want to`), rx(`(?i)do you trust`), rx(`Esc to cancel`),
			rx(`(?i)one you trust`)},
		TrustHint: []*regexp.Regexp{rx(`(?i)do you trust the files`), rx(`(?i)one you trust`),
			rx(`(?i)I trust this folder`)},
		ToolLine:    rx(`^\s*(?:●\s+)?([A-Z]\w*(?: \w+)?\(.*\)|Accessing workspace:)\s*$`),
		Marker:      "❯",
		ArrowList:   true,
		StartQuiet:  true,
		PickerDelay: 500 * time.Millisecond,
		CancelKeys:  "\x1b",
		ReplyPrefix: []string{"● "},
		EchoPrefix:  "❯ ",
		// A refused request is the turn's last row, as a reply row:
		// "● API Error: Request rejected (429) · <the API's message>"
		// (captured: testdata/claude/2.1.332/limit.screen). A plan's limit
		// (a subscription's token, the API's unified rate-limit headers)
		// is "⎿  You've hit your 5-hour limit · resets 12:04pm (UTC)" then
		// "● Usage limit reached · set to continue automatically at …"
		// (usage-limit.screen; "⎿" is followed by a no-break space);
		// older releases said "Claude usage limit reached".
		LimitRows: []*regexp.Regexp{rx(`^\s*(?:●|⎿)[\s\x{a0}]+(?:API Error:|You(?:'|’)ve (?:hit|reached) your|You(?:'|’)re out of|(?:Claude (?:AI )?)?[Uu]sage limit reached)`)},
		// At a plan's limit it offers to go on by itself at the reset,
		// under the composer: "Continuing automatically at 12:04pm · Esc
		// to cancel", then "… shortly · Esc to cancel".
		AutoResume: rx(`Continuing automatically\b.*Esc to cancel`),
		// Tool rows carry the reply's "●": "● Write(hello.txt)".
		Chrome: []*regexp.Regexp{rx(`^\s*●\s+[A-Z]\w*(?: \w+)?\(.*\)\s*$`), rx(`^\s*⎿`), rx(`\? for shortcuts`),
			rx(`esc to interrupt`), rx(`^\s*[✻✽✶✳✢·*]\s+\w+`), rx(`/effort\s*$`)},
	}
}
