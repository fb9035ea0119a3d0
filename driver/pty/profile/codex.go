package profile

import (
	"regexp"
	"time"
)

// Codex CLI 0.171 (ratatui, full screen; captured: testdata/codex/0.171.0).
// The composer is the row "› Ask Codex to do anything" near the bottom,
// above the footer "gpt-5.3-codex default · /repo"; the echoed prompt in the
// transcript is a "› " row too, so the composer is the lowest one. While it
// works, "• Working (3s • esc to interrupt)" stands a few rows above the
// composer. Agent text is "• text" with its further rows indented two
// columns; tool cells are "• Ran cmd" / "• Edited file" with "  └ output"
// under them, and a turn ends with "  Worked for 1s • 18:52".
//
// Pickers are numbered with "›" on the highlighted option and arrows move
// it: the approval "Would you like to run the following command?" (or
// "...make the following edits?"), "Environment:", "Reason:", "$ cmd", the
// options "1. Yes, proceed (y)", "2. Yes, and don't ask again for ... (p)",
// "3. No, and tell Codex what to do differently (esc)" and "Press enter to
// confirm or esc to cancel". An untrusted folder first gets "Trust this
// folder? ..." with "1. Trust and continue", "2. Back to Agent Command
// Center" and "enter continue · esc back"; the composer is gone meanwhile.
//
// The screens loading, starting, waiting-for-startup, between-cells and
// denied are frames taken out of recordings (write-allow.rec and tai runs
// kept by TAI_E2E_DEBUG): they last a frame or two, too short for the
// capture steps to dump.
func codex() *Profile {
	return &Profile{
		Name: "codex",
		// The whole screen: the header's "loading" is at its top.
		Bottom: 100,
		// Only the status row says it: a reply row "• Working on it" is
		// text. While it starts, codex shows an idle-looking composer
		// under the header "loading", then the folder, with the bare
		// footer "? for shortcuts" (loaded, the footer is the model line
		// and "← for agents · ? for shortcuts"); the trust dialog pops up
		// over it, and a typed prompt shows "Waiting for startup": a prompt
		// typed before would meet the dialog, its Enter answering it
		// behind the policy's back.
		Working: []*regexp.Regexp{rx(`\besc to interrupt\)`), rx(`^\s{3,}loading\s*$`),
			rx(`^\s*\? for shortcuts\s*$`), rx(`^\s*Waiting for startup\b`)},
		Composer:    rx(`^›\s?(.*?)\s*$`),
		Placeholder: rx(`^(Ask Codex|Implement \{|Find and fix|Explain this|Write tests|Improve documentation|Summarize recent|Run /review)`),
		PickerHint: []*regexp.Regexp{rx(`^\s*Would you like to `), rx(`Press enter to confirm or esc`),
			rx(`^\s*Trust this folder\?`), rx(`enter continue · esc back`)},
		TrustHint: []*regexp.Regexp{rx(`^\s*Trust this folder\?`)},
		// The question is the picker's title; the model's "Reason:" (which
		// may end in "?" too) and the command are its context.
		ToolLine:    rx(`^\s*(Would you like to .*\?|Trust this folder\?)`),
		Marker:      "›",
		PickerQuiet: 300 * time.Millisecond,
		CancelKeys:  "\x1b",
		ReplyPrefix: []string{"• "},
		// Wrapped and later paragraphs, list items included.
		ContinueIndent: "  ",
		EchoPrefix:     "› ",
		// A turn shows the echoed prompt, then the agent's cells, and ends
		// with "Worked for 1s • 18:52", or "■ Conversation interrupted"
		// when stopped.
		TurnOpen: []*regexp.Regexp{rx(`^› \S`), rx(`^• \S`)},
		TurnDone: []*regexp.Regexp{rx(`^\s*Worked for \S+ •`), rx(`^■ `)},
		// An error cell "■ …": a 429 it gave up retrying is "■ exceeded
		// retry limit, last status: 429 Too Many Requests" (captured:
		// testdata/codex/0.171.0/limit.screen), a plan's limit "■ You've
		// hit your usage limit. … try again at 3:15 PM."
		LimitRows: []*regexp.Regexp{rx(`^■ `)},
		Chrome: []*regexp.Regexp{
			// Tool cells share the agent text's bullet.
			rx(`^• (Ran|Running|Exited|Explored|Exploring|Edited|Editing|Added|Deleted|Called|Calling|Searched|Searching|Waiting for|Working|Updated Plan|Proposed Change|Change Approved|Viewed Image)\b`),
			// 0.160 heads a command that a denial stopped "• Failed (exit 1) cmd".
			rx(`^• Failed \(exit \d+\) `),
			rx(`^\s*└`), rx(`^\s*Worked for \S+ •`), rx(`context left`), rx(`^\s*⏎`), rx(`\? for shortcuts`),
		},
	}
}
