package runner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/tai-dev/tai/driver"
)

// The result's message is the agent's text of the turn: chunks joined,
// separate messages apart, and a replace chunk (a screen-read reply the
// TUI redrew) standing for everything of its message before it.
func TestCollectorMessage(t *testing.T) {
	agent := func(id, text string, replace bool) driver.Event {
		return driver.Event{Type: driver.EventMessage, Message: &driver.MessageChunk{Role: driver.RoleAgent, MessageID: id, Text: text, Replace: replace}}
	}
	perm := driver.Event{Type: driver.EventPermissionAsked, Permission: &driver.PermissionRequest{ID: "1"}}
	for _, tc := range []struct {
		name   string
		events []driver.Event
		want   string
	}{
		{"chunks", []driver.Event{agent("m", "Hel", false), agent("m", "lo", false)}, "Hello"},
		{"two messages", []driver.Event{agent("a", "First.", false), agent("b", "Second.", false)}, "First.\n\nSecond."},
		{"streamed then the rest", []driver.Event{agent("p", "a\n", false), agent("p", "b", false)}, "a\nb"},
		{"streamed then replaced", []driver.Event{agent("p", "**a**\n", false), agent("p", "a\nb", true)}, "a\nb"},
		{"replaced across a picker", []driver.Event{agent("p", "I'll write.\n", false), perm, agent("p", "I'll write.\nDone.", true)}, "I'll write.\nDone."},
		{"only the replaced message changes", []driver.Event{agent("a", "Before.", false), agent("p", "x\n", false), agent("p", "y", true)}, "Before.\n\ny"},
		{"replace of an unknown id is a message", []driver.Event{agent("a", "One.", false), agent("z", "Two.", true)}, "One.\n\nTwo."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCollector()
			for _, ev := range tc.events {
				c.Emit(ev)
			}
			if got := c.result().Message; got != tc.want {
				t.Fatalf("message %q, want %q", got, tc.want)
			}
		})
	}
}

// The result frame and the indented result stream their message, and are
// byte for byte what encoding/json writes.
func TestResultStreamsAsEncodingJSON(t *testing.T) {
	for _, msg := range []string{"", "plain", "quote \" and \\ and\nnew line <&> \u2028 \xff", messageMarker + "x"} {
		r := Result{Status: "ok", Agent: "a", Message: msg, Permissions: []driver.PermissionDecision{}}
		f := ResultFrame{Type: "result", Seq: 7, Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Result: r}
		for _, tc := range []struct {
			write  func(w *bufio.Writer) error
			v      any
			indent string
		}{{f.WriteJSON, f, ""}, {r.WriteIndented, r, "  "}} {
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", tc.indent)
			if err := enc.Encode(tc.v); err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			w := bufio.NewWriter(&got)
			if err := tc.write(w); err != nil {
				t.Fatal(err)
			}
			_ = w.Flush()
			if tc.indent == "" {
				got.WriteByte('\n')
			}
			if got.String() != want.String() {
				t.Errorf("got  %s\nwant %s", got.String(), want.String())
			}
		}
	}
}
