package chat

import (
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/tai-dev/tai/driver"
)

func state() *State {
	s := NewState()
	s.Emit(driver.Event{Type: driver.EventSessionStarted, Started: &driver.SessionStarted{
		Modes:  []driver.ModeInfo{{ID: "plan"}, {ID: "default"}},
		Config: []driver.ConfigOption{{ID: "model", Category: "model", Type: "select", Values: []driver.ConfigValue{{Value: "small"}, {Value: "large"}}}},
	}})
	s.Emit(driver.Event{Type: driver.EventCommands, Commands: []driver.Command{{Name: "echo", Description: "Echo", Hint: "text"}, {Name: "explain"}}})
	return s
}

func TestComplete(t *testing.T) {
	s := state()
	tests := []struct {
		line  string
		start int
		want  string
	}{
		{"/e", 0, "/echo /explain"},
		{"/mo", 0, "/mode /model"},
		{"/mode p", 6, "plan"},
		{"/model ", 7, "small large"},
		{"/echo x", 0, ""},
		{"hello", 0, ""},
	}
	for _, tc := range tests {
		start, cands := s.Complete(tc.line)
		var got []string
		for _, c := range cands {
			got = append(got, c.Text)
		}
		if strings.Join(got, " ") != tc.want || (len(cands) > 0 && start != tc.start) {
			t.Errorf("%q: %d %v, want %d %q", tc.line, start, got, tc.start, tc.want)
		}
	}
}

func TestReadLine(t *testing.T) {
	tests := []struct {
		name, in, want string
		err            error
	}{
		{"plain", "hello\r", "hello", nil},
		{"backspace", "helo\x7f\x7fllo\r", "hello", nil},
		{"left and insert", "hllo\x1b[D\x1b[D\x1b[De\r", "hello", nil},
		{"ctrl-a, ctrl-k", "xyz\x01\x0bok\r", "ok", nil},
		{"tab completes one", "/ec\thi\r", "/echo hi", nil},
		{"tab completes the common prefix", "/mo\tl\t\r", "/model ", nil},
		{"tab completes a mode", "/mode pl\t\r", "/mode plan ", nil},
		{"utf-8", "héllo\r", "héllo", nil},
		{"ctrl-c", "abc\x03", "", ErrInterrupted},
		{"ctrl-d on empty", "\x04", "", io.EOF},
		{"eof", "abc", "", io.EOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			e := &Editor{In: strings.NewReader(tc.in), Out: &out, Complete: state().Complete}
			got, err := e.ReadLine("> ")
			if got != tc.want || !errors.Is(err, tc.err) {
				t.Fatalf("%q, %v; want %q, %v (screen %q)", got, err, tc.want, tc.err, out.String())
			}
		})
	}
	// History: Up recalls, Down returns to the new line.
	var out strings.Builder
	e := &Editor{In: strings.NewReader("one\rtwo\r\x1b[A\x1b[A\r\x1b[A\x1b[Bnew\r"), Out: &out}
	var lines []string
	for range 4 {
		l, err := e.ReadLine("> ")
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	if strings.Join(lines, ",") != "one,two,one,new" {
		t.Fatalf("lines %v", lines)
	}
	// The hint of a completed command is shown.
	out.Reset()
	e = &Editor{In: strings.NewReader("/ec\t\r"), Out: &out, Complete: state().Complete}
	_, _ = e.ReadLine("> ")
	if !strings.Contains(out.String(), "/echo  — Echo (text)") {
		t.Fatalf("no hint: %q", out.String())
	}
}

// A line longer than the terminal scrolls: the redraw never writes more
// than the width.
func TestReadLineScrolls(t *testing.T) {
	var out strings.Builder
	long := strings.Repeat("abcdefghij", 10)
	e := &Editor{In: strings.NewReader(long + "\r"), Out: &out, Width: func() int { return 40 }}
	got, err := e.ReadLine("> ")
	if err != nil || got != long {
		t.Fatalf("%q %v", got, err)
	}
	for _, frame := range strings.Split(out.String(), "\r") {
		frame = strings.TrimSuffix(strings.TrimSuffix(frame, "\x1b[K"), "\n")
		if i := strings.Index(frame, "\x1b"); i >= 0 {
			frame = frame[:i]
		}
		if len(frame) > 40 {
			t.Fatalf("a %d-column frame: %q", len(frame), frame)
		}
	}
}

// A completion is the agent's (a command's name and hint): it reaches the
// line and the list escaped, and the line sent is what was shown.
func TestCompletionIsEscaped(t *testing.T) {
	var out strings.Builder
	evil := func(string) (int, []Completion) {
		return 0, []Completion{{Text: "/deploy\x1b[2K\u202e", Hint: "ship it\x1b]0;x\x07"}}
	}
	e := &Editor{In: strings.NewReader("/d\t\r"), Out: &out, Complete: evil}
	got, err := e.ReadLine("> ")
	if err != nil || got != `/deploy\x1b[2K\u202e ` {
		t.Fatalf("%q, %v", got, err)
	}
	// The editor's own sequences are \x1b[K (clear to the end) and \x1b[nD.
	screen := regexp.MustCompile(`\x1b\[(K|\d+D)`).ReplaceAllString(out.String(), "")
	if strings.ContainsAny(screen, "\x1b\x07\u202e") || !strings.Contains(screen, `ship it\x1b]0;x\x07`) {
		t.Fatalf("screen %q", out.String())
	}
}
