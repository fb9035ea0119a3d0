package profile

import "regexp"

// Claude Code: "esc to interrupt" under a star spinner; the composer
// is "> " (older: inside │ │); pickers "❯ 1. Yes"; replies "⏺ ".
func claude() *Profile {
	return &Profile{
		Name:        "claude",
		Working:     []*regexp.Regexp{rx(`esc to interrupt`), rx(`^\s*[✻✽✶✳✢·*]\s+\w+…`)},
		Composer:    rx(`^\s*[│|]?\s*[>❯]\s?(.*?)\s*[│|]?\s*$`),
		Placeholder: rx(`^Try "`),
		PickerHint:  []*regexp.Regexp{rx(`Do you want to`), rx(`(?i)do you trust`), rx(`Esc to cancel`)},
		TrustHint:   []*regexp.Regexp{rx(`(?i)do you trust the files`), rx(`(?i)one you trust`)},
		ToolLine:    rx(`^\s*[│|]?\s*(?:⏺\s+)?((?:Bash|Write|Edit|Create|Update|Read|Fetch|MultiEdit)\b.*?)\s*[│|]?\s*$`),
		Marker:      "❯>",
		CancelKeys:  "\x1b",
		ReplyPrefix: []string{"⏺ "},
		EchoPrefix:  "> ",
		Chrome:      []*regexp.Regexp{rx(`^\s*[⎿]`), rx(`\? for shortcuts`), rx(`^\s*[╭╰│]`)},
	}
}
