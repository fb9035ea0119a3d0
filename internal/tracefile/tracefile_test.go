package tracefile

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tai-dev/tai/redact"
)

// Chunks of one message are redacted as their joined text: each secret,
// however it was cut, shows once as [REDACTED] in the chunk it starts in;
// other lines and other messages are left as they were.
func TestChunksRedactedJoined(t *testing.T) {
	const tok = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	red, err := redact.New(redact.Options{Literals: []string{"hunter22!"}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	w, err := Open(path, red)
	if err != nil {
		t.Fatal(err)
	}
	text := "a " + tok + " b hunter22! c " + tok
	chunk := func(id, s string) []byte {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{
			"sessionId": "s", "update": map[string]any{"sessionUpdate": "agent_message_chunk", "messageId": id,
				"content": map[string]any{"type": "text", "text": s}}}})
		return b
	}
	for i := 0; i < len(text); i += 3 {
		w.Line("in", chunk("m1", text[i:min(i+3, len(text))]))
		if i == 6 {
			// Another update in the middle of a streamed token (an
			// agent's commands list, sent on a goroutine of its own).
			w.Line("in", []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"available_commands_update","availableCommands":[]}}}`))
		}
	}
	w.Line("out", []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	w.Line("in", chunk("m2", "plain"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var joined, other strings.Builder
	interleaved := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec struct {
			Line struct {
				Params struct {
					Update struct {
						MessageID string `json:"messageId"`
						Content   struct {
							Text string `json:"text"`
						} `json:"content"`
					} `json:"update"`
				} `json:"params"`
			} `json:"line"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		if strings.Contains(sc.Text(), "available_commands_update") {
			if joined.Len() == 0 {
				t.Fatal("the line held with the message was written before it")
			}
			interleaved++
		}
		switch u := rec.Line.Params.Update; u.MessageID {
		case "m1":
			joined.WriteString(u.Content.Text)
		case "m2":
			other.WriteString(u.Content.Text)
		}
	}
	if want := "a [REDACTED] b [REDACTED] c [REDACTED]"; joined.String() != want {
		t.Fatalf("joined %q, want %q", joined.String(), want)
	}
	if other.String() != "plain" {
		t.Fatalf("the next message reads %q", other.String())
	}
	if interleaved != 1 {
		t.Fatalf("the update between the chunks was written %d times", interleaved)
	}
}
