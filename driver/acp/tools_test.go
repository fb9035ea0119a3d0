package acp

import (
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"weak"

	"github.com/tai-dev/tai/driver"
)

// The calls kept for merging updates are bounded: finished ones go first,
// and an agent that starts calls without end cannot grow the session
// past its cap.
func TestKeptToolCallsBounded(t *testing.T) {
	for _, tc := range []struct {
		name     string
		finished func(i int) bool
		running  int // calls that must all be kept
	}{
		{"all running", func(int) bool { return false }, 0},
		{"a few running among finished", func(i int) bool { return i >= 12 || i%4 != 0 }, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Session{tools: map[string]*driver.ToolCall{}, toolsMax: 4, toolsCap: 8, log: slog.New(slog.DiscardHandler)}
			var running []string
			for i := range 1000 {
				call := &driver.ToolCall{ID: fmt.Sprintf("c%d", i), Status: "in_progress"}
				if tc.finished(i) {
					call.Status = "completed"
				} else if tc.running > 0 && len(running) < tc.running {
					running = append(running, call.ID)
				}
				s.keepTool(call)
				if len(s.tools) > 8 {
					t.Fatalf("after %d calls, %d kept", i+1, len(s.tools))
				}
				if s.tools[call.ID] != call {
					t.Fatalf("call %d, just kept, is not there", i)
				}
			}
			for _, id := range running {
				if _, ok := s.tools[id]; !ok {
					t.Errorf("running call %s let go while finished ones made room", id)
				}
			}
		})
	}
}

// dropSink takes events and keeps none.
type dropSink struct{ n int }

func (d *dropSink) Emit(driver.Event) { d.n++ }

// A long chunk's line is not held by the session's reusing decoder once
// the chunk is applied: it goes when the events that show it go.
func TestLongChunkNotHeldAfterApply(t *testing.T) {
	sink := &dropSink{}
	s := &Session{id: "s", cfg: Config{Host: driver.Host{Sink: sink}}, tools: map[string]*driver.ToolCall{}, log: slog.New(slog.DiscardHandler)}
	s.dec.Reuse = true
	line := func() *byte {
		params := []byte(`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"` +
			strings.Repeat("x", 128<<10) + `"}}}`)
		s.onUpdate(params)
		return &params[0]
	}
	held := weak.Make(line())
	runtime.GC()
	if sink.n != 1 {
		t.Fatalf("%d events", sink.n)
	}
	if held.Value() != nil {
		t.Fatal("the session still holds the long chunk's line")
	}
	runtime.KeepAlive(s) // the session, its decoder with it, lives on
}
