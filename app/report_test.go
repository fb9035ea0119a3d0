package app

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// The last word of a command may quote an agent (its error, its stderr):
// it reaches the terminal escaped, its lines kept.
func TestReportEscapesTheError(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"one", fmt.Errorf("agent error: %w", errors.New("bad\x1b[2J\x1b]0;x\x07")), "tai: agent error: bad\\x1b[2J\\x1b]0;x\\x07 (exit 1, agent_error)\n"},
		{"joined", errors.Join(errors.New("a\u202e"), errors.New("b")), "tai: a\\u202e\ntai: b (exit 1, agent_error)\n"},
		{"lines kept", errors.New("stderr:\nline 2"), "tai: stderr:\nline 2 (exit 1, agent_error)\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			Report(&b, tt.err)
			if b.String() != tt.want {
				t.Fatalf("got %q, want %q", b.String(), tt.want)
			}
		})
	}
}

// The agent's stderr (--verbose) is prefixed line by line and escaped; a
// character cut between two writes is whole on the screen.
func TestPrefixWriterEscapes(t *testing.T) {
	var b strings.Builder
	w := prefixWriter(&b, "[a] ")
	for _, s := range []string{"one\x1b[2K\n", "two\u202e", "\nthree \xe6", "\x97\xa5\r\n", "\xff\n"} {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("write %q: %d, %v", s, n, err)
		}
	}
	want := "[a] one\\x1b[2K\n[a] two\\u202e\n[a] three 日\n[a] \\xff\n"
	if b.String() != want {
		t.Fatalf("got %q, want %q", b.String(), want)
	}
}

// tai fleet logs shows the agents' words escaped, one line a frame.
func TestFleetLogsEscape(t *testing.T) {
	var b strings.Builder
	show := logShower(FleetLogsFlags{}, "", IO{Out: &b})
	show([]byte(`{"type":"permission.asked","task":"lint","permission":{"tool_call":{"title":"Run tests\u001b[2K\u202e"}}}`))
	show([]byte(`{"type":"fleet.event","task":"lint","event":"failed","detail":"exit 1\nnext\u001b[1A"}`))
	got := b.String()
	for _, want := range []string{`asks: Run tests\x1b[2K\u202e`, `failed exit 1\nnext\x1b[1A`} {
		if !strings.Contains(got, want) {
			t.Errorf("logs lack %q:\n%s", want, got)
		}
	}
	if strings.ContainsAny(got, "\x1b\u202e") || strings.Count(got, "\n") != 2 {
		t.Fatalf("logs %q", got)
	}
}
