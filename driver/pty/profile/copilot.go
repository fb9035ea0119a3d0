package profile

import (
	"regexp"
	"time"
)

// GitHub Copilot CLI 1.0 (captured: testdata/copilot/1.0.102, BYOK
// against the model server). Alternate screen, laid out to the full
// height: the transcript at the top ("❯ prompt" echoed with the time far
// right, "● text" replies, "○ Create hello.txt" a pending tool call, "●
// Create hello.txt +1" a finished edit, "● MCP Servers reloaded" and
// other notices), at the bottom the workspace row, the composer "❯"
// between two rules, and the footer: "← open sidebar · Interactive ·
// Manual Approval · …" when idle, "● Working esc esc edit prompt" while
// it works. Pickers are boxed ("│ ❯ 1. Yes │") with "↑/↓ to navigate ·
// enter to select · esc to cancel"; the first start in a folder asks
// "Confirm folder trust … Do you trust the files in this folder?".
func copilot() *Profile {
	return &Profile{
		Name:              "copilot",
		Working:           []*regexp.Regexp{rx(`\besc\s+(?:esc\s+)?(?:interrupt|edit prompt)\b`)},
		Composer:          rx(`^\s*[>❯]\s?(.*?)\s*$`),
		ComposerUnderRule: true,
		Placeholder:       rx(`^(Enter @|Type @|Ask)`),
		PickerHint:        []*regexp.Regexp{rx(`Do you want to`), rx(`(?i)do you trust`), rx(`enter to select`)},
		TrustHint:         []*regexp.Regexp{rx(`(?i)trust the files`), rx(`(?i)confirm folder trust`)},
		Marker:            "❯",
		// The footer says "esc esc interrupt".
		CancelKeys: "\x1b\x1b",
		// It prints notices ("● MCP Servers reloaded") a few seconds into
		// its start, after the first idle composer: a prompt sent before
		// would count them as its reply.
		ReadyQuiet: true,
		// 1.0.80 prints "Package extraction took 6013ms" and is silent
		// for seconds before its first frame: quiet is not ready.
		ReadyOnScreen: true,
		EndSettle:     300 * time.Millisecond,
		EscOption:     true,
		ReplyPrefix:   []string{"● "},
		EchoPrefix:    "❯ ",
		// Rows with the reply's "●" that are not text: a finished edit
		// ends in its diff stats ("● Create hello.txt +1"; 1.0.80 adds its
		// duration far right, "+1      11s"), and notices.
		Chrome: []*regexp.Regexp{rx(`^\s*●\s+\S.*\s\+\d+(?:\s+-\d+)?(?:\s{2,}(?:\d+m\s*)?[\d.]+s)?\s*$`), rx(`^\s*●\s+Operation cancelled by user`),
			rx(`^\s*[○└│╭╰]`),
			// The workspace row over the composer: "/tmp/repo [⎇ main]".
			rx(`^\s?[~/]\S*(?: \[⎇ [^\]]*\])?\s*$`)},
		// A request it gave up on is "✗ Failed to get response from the
		// AI model; retried 5 times (…) Last error: 429 …" (captured:
		// testdata/copilot/1.0.102/limit.screen), above the workspace row.
		LimitRows: []*regexp.Regexp{rx(`^\s*✗ `)},
		Notices:   []*regexp.Regexp{rx(`^\s*●\s+(?:MCP Servers|Tip:|No copilot-instructions)`)},
	}
}
