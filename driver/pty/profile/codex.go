package profile

import "regexp"

// Codex CLI (ratatui, inline): "Working (3s • esc to interrupt)";
// composer "› "; replies "• ".
func codex() *Profile {
	return &Profile{
		Name:        "codex",
		Working:     []*regexp.Regexp{rx(`esc to interrupt`), rx(`^\s*[•◦]\s+Working`)},
		Composer:    rx(`^\s*›\s?(.*?)\s*$`),
		Placeholder: rx(`^(Ask Codex|Implement|Find and fix|Explain this|Write tests|Improve documentation|Summarize|Run /review)`),
		PickerHint:  []*regexp.Regexp{rx(`Would you like to`), rx(`(?i)do you trust`), rx(`Press enter to confirm`)},
		TrustHint:   []*regexp.Regexp{rx(`(?i)do you trust the contents`), rx(`(?i)trust this (folder|directory)`)},
		Marker:      "›>",
		CancelKeys:  "\x1b",
		ReplyPrefix: []string{"• "},
		EchoPrefix:  "› ",
		Chrome:      []*regexp.Regexp{rx(`context left`), rx(`^\s*⏎`), rx(`^\s*└`)},
	}
}
