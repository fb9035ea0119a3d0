package profile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The reply of a captured turn: the idle screen before the prompt, the
// idle screen after the turn, through Body and Reply as the session uses
// them. The echoed prompt, tool rows that carry the reply's "●", tool
// results and the turn's summary row are not part of it.
func TestCapturedReplies(t *testing.T) {
	for _, tc := range []struct {
		agent, dir, before, after, prompt, want string
	}{
		{"claude", "claude/2.1.332", "startup", "final", "Create hello.txt please", "I'll create hello.txt.\nCreated hello.txt."},
		{"claude", "claude/2.1.332", "startup", "text-final", "Say hello.", "Hello from the scripted model."},
		{"copilot", "copilot/1.0.102", "startup", "final", "Create hello.txt please", "I'll create hello.txt.\nCreated hello.txt."},
		{"copilot", "copilot/1.0.102", "startup", "text-final", "Say hello.", "Hello from the scripted model."},
	} {
		t.Run(tc.agent+"/"+tc.after, func(t *testing.T) {
			p, _ := Builtin(tc.agent)
			read := func(name string) []string {
				b, err := os.ReadFile(filepath.Join("..", "testdata", tc.dir, name+".screen"))
				if err != nil {
					t.Fatal(err)
				}
				return p.Body(strings.Split(string(b), "\n"))
			}
			if got := p.Reply(read(tc.before), read(tc.after), tc.prompt); got != tc.want {
				t.Errorf("reply %q, want %q", got, tc.want)
			}
		})
	}
}

// Copilot 1.0.80 prints a line and stays silent for seconds before its
// first frame: that screen is no verdict of the profile, and quiet alone
// must not make it ready (a prompt typed then reaches no composer).
func TestCopilotReadyOnlyOnScreen(t *testing.T) {
	p, _ := Builtin("copilot")
	if v := p.Parse([]string{"Package extraction took 6013ms", "", ""}); v.State != Unknown {
		t.Fatalf("the pre-start screen is %s (%s), want unknown", v.State, v.Why)
	}
	if !p.ReadyOnScreen {
		t.Error("copilot is ready on quiet alone: a quiet pre-start screen would take the prompt")
	}
}
