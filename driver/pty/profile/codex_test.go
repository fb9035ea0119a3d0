package profile

import (
	"os"
	"strings"
	"testing"
)

func screen(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile("../testdata/codex/0.171.0/" + name + ".screen")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(b), "\n")
}

// The reply of a turn on the captured codex screens: the echoed prompt,
// the tool cells ("• Ran ...", "└ ..."), the approval note and the
// "Worked for" row are not part of it; the rows under a reply's bullet
// are, lists and code included.
func TestCodexReply(t *testing.T) {
	p, _ := Builtin("codex")
	for _, tc := range []struct{ before, after, prompt, want string }{
		{"startup", "text-final", "Say hello.", "Hello from the scripted model."},
		{"startup", "final", "Create hello.txt please", "I'll create hello.txt.\nCreated hello.txt."},
		{"startup-multiline", "multiline", "Say things.", strings.Join([]string{
			"This first paragraph is long enough to wrap on a terminal of two hundred columns, so that its second row is indented under the bullet the way codex indents every further row of a reply block.",
			"", "Second paragraph:", "", "• Ran the tests", "• item two", "", "1. Read the notes", "2. Ran nothing", "", "code block", "", "Done.",
		}, "\n")},
	} {
		t.Run(tc.after, func(t *testing.T) {
			got := p.Reply(p.Body(screen(t, tc.before)), p.Body(screen(t, tc.after)), tc.prompt)
			if got != tc.want {
				t.Errorf("reply:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}
