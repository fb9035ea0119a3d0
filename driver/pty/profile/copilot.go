package profile

import "regexp"

// GitHub Copilot CLI: "Esc to cancel" while thinking; pickers
// "❯ 1. Yes"; composer "> ".
func copilot() *Profile {
	return &Profile{
		Name:        "copilot",
		Working:     []*regexp.Regexp{rx(`(?i)esc to (cancel|interrupt|stop)`), rx(spinner)},
		Composer:    rx(`^\s*[│|]?\s*[>❯]\s?(.*?)\s*[│|]?\s*$`),
		Placeholder: rx(`^(Enter @|Type @|Ask)`),
		PickerHint:  []*regexp.Regexp{rx(`Do you want to`), rx(`(?i)confirm`), rx(`(?i)do you trust`)},
		TrustHint:   []*regexp.Regexp{rx(`(?i)trust the files`), rx(`(?i)do you trust`)},
		Marker:      "❯>",
		CancelKeys:  "\x1b",
		ReplyPrefix: []string{"● "},
		EchoPrefix:  "> ",
	}
}
