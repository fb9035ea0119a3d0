package profile

import (
	"os"
	"strings"
	"testing"
)

// A change in the captured UIs makes the verdict unknown, never idle:
// an unrecognised row between gemini's rule and its composer, and an
// opencode input box without its footer.
func TestFailClosed(t *testing.T) {
	for _, tc := range []struct{ agent, screen, from, to string }{
		{"gemini", "../testdata/gemini/0.61.0/final.screen", "Shift+Tab to accept edits", "Some new mode line"},
		{"opencode", "../testdata/opencode/1.18.33/final.screen", "┃  Build · fake-model", "┃  Other · fake-model"},
	} {
		b, err := os.ReadFile(tc.screen)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), tc.from) {
			t.Fatalf("%s: no %q", tc.screen, tc.from)
		}
		p, _ := Builtin(tc.agent)
		v := p.Parse(strings.Split(strings.Replace(string(b), tc.from, tc.to, 1), "\n"))
		if v.State != Unknown {
			t.Errorf("%s with %q: %s (%s), want unknown", tc.agent, tc.to, v.State, v.Why)
		}
	}
}
