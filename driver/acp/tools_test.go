package acp

import (
	"fmt"
	"log/slog"
	"testing"

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
