package app

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/exitcode"
)

func TestCheckRunFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    RunFlags
		want string // "" = accepted
	}{
		{"defaults", RunFlags{}, ""},
		{"negative timeout", RunFlags{Timeout: -time.Second}, "--timeout"},
		{"negative grace", RunFlags{CancelGrace: -time.Second}, "--cancel-grace"},
		{"negative max line", RunFlags{MaxLineBytes: -1}, "--max-line-bytes"},
		{"empty agent-cmd", RunFlags{AgentCmd: "", AgentCmdSet: true}, "--agent-cmd is empty"},
		{"blank agent-cmd", RunFlags{AgentCmd: "  ", AgentCmdSet: true}, "--agent-cmd is empty"},
		{"agent-cmd", RunFlags{AgentCmd: "x", AgentCmdSet: true}, ""},
		{"env without =", RunFlags{Env: []string{"A=1", "NOEQUALS"}}, `not "NOEQUALS"`},
		{"env without key", RunFlags{Env: []string{"=1"}}, "KEY=VALUE"},
		{"env empty value", RunFlags{Env: []string{"A="}}, ""},
		{"unknown driver", RunFlags{Driver: "xyz"}, "drivers: acp, stream-json, pty, a2a"},
		{"driver", RunFlags{Driver: "pty"}, ""},
	} {
		err := checkRunFlags(tc.f)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		case tc.want != "" && exitcode.Of(err) != exitcode.Usage:
			t.Errorf("%s: exit %d, want 2", tc.name, exitcode.Of(err))
		}
	}
}

func TestCheckPrompt(t *testing.T) {
	for _, tc := range []struct {
		text  string
		given bool
		bad   bool
	}{
		{"fix it", true, false},
		{"", true, true},
		{" \t\n", true, true},
		{"", false, false}, // no prompt at all: attach, resume or stream-json decide
	} {
		if err := checkPrompt(tc.text, tc.given); (err != nil) != tc.bad {
			t.Errorf("%q given=%v: %v", tc.text, tc.given, err)
		}
	}
}

// The terminal checks see through the closed-stdout guard: colour,
// attaching and the ask's "diff already shown" depend on them.
func TestOSFileUnwrapsStdout(t *testing.T) {
	out := &closedOut{w: os.Stdout}
	if f, ok := osFile(out); !ok || f != os.Stdout {
		t.Fatalf("osFile(closedOut) = %v %v", f, ok)
	}
	if _, ok := osFile(&strings.Builder{}); ok {
		t.Fatal("a builder is not a file")
	}
}
