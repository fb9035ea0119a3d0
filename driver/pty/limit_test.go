package pty

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/tai-dev/tai/driver/pty/profile"
)

// After a turn that ended on a limit, the TUI's own offer to resume at
// the reset is cancelled once, when it shows, and only then: the run
// resumes the session itself.
func TestCancelAutoResume(t *testing.T) {
	offer := []string{"❯ ", "  ⚠ Usage limit reached · limit resets 12:04pm", "    Continuing automatically at 12:04pm · Esc to cancel"}
	plain := []string{"❯ ", "  ⏵⏵ auto mode on (shift+tab to cycle)"}
	for _, tc := range []struct {
		name      string
		limited   bool
		screens   [][]string
		wantKeys  string
		wantAfter bool // still waiting for the offer
	}{
		{"offer after a limit", true, [][]string{offer, offer}, "\x1b", false},
		{"offer shows later", true, [][]string{plain, offer}, "\x1b", false},
		{"no offer yet", true, [][]string{plain}, "", true},
		{"no limit", false, [][]string{offer}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prof, _ := profile.Builtin("claude")
			var keys strings.Builder
			s := &Session{prof: prof, log: slog.New(slog.DiscardHandler), keysTo: &keys, autoResume: tc.limited}
			for _, sc := range tc.screens {
				s.cancelAutoResume(sc)
			}
			if keys.String() != tc.wantKeys || s.autoResume != tc.wantAfter {
				t.Errorf("keys %q, still waiting %v; want %q, %v", keys.String(), s.autoResume, tc.wantKeys, tc.wantAfter)
			}
		})
	}
}
