package render

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/internal/testutil"
)

// chunkEvents is a reply streamed as n small chunks of one message, as long
// replies arrive.
func chunkEvents(n int) []driver.Event {
	evs := make([]driver.Event, n)
	for i := range evs {
		evs[i] = driver.Event{Type: driver.EventMessage, Message: &driver.MessageChunk{
			Role: driver.RoleAgent, MessageID: "m1", Text: fmt.Sprintf("word%d ", i)}}
	}
	return evs
}

// BenchmarkTextChunks renders 10k and 100k chunks of one message; ns/chunk
// must be the same for both (no work that grows with what was printed).
//
//	go test ./render -run x -bench TextChunks
func BenchmarkTextChunks(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		evs := chunkEvents(n)
		b.Run(fmt.Sprintf("chunks-%dk", n/1000), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				t := NewText(io.Discard, false)
				for _, ev := range evs {
					t.Emit(ev)
				}
				t.Flush()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/chunk")
		})
	}
}

// The bytes allocated per chunk do not grow with the length of the message:
// 100k chunks cost at most a few times 10 times what 10k chunks cost (the
// text renderer once copied the whole message per chunk).
func TestTextChunksLinear(t *testing.T) {
	alloc := func(n int) uint64 {
		evs := chunkEvents(n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		tx := NewText(io.Discard, false)
		for _, ev := range evs {
			tx.Emit(ev)
		}
		tx.Flush()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := alloc(10_000), alloc(100_000)
	if large > 30*small {
		t.Fatalf("100k chunks allocated %d bytes, 10k chunks %d: %.0f× for 10× the chunks", large, small, float64(large)/float64(small))
	}
}

// A long session's finished tool calls are not all remembered.
func TestTextForgetsFinishedToolCalls(t *testing.T) {
	tx := NewText(io.Discard, false)
	for i := range 3 * maxTools {
		id := fmt.Sprintf("t%d", i)
		tx.Emit(driver.Event{Type: driver.EventToolCall, ToolCall: &driver.ToolCall{ID: id, Status: "in_progress"}})
		tx.Emit(driver.Event{Type: driver.EventToolCall, ToolCall: &driver.ToolCall{ID: id, Status: "completed"}})
	}
	if n := len(tx.tools); n > maxTools {
		t.Fatalf("%d tool calls remembered after %d finished", n, 3*maxTools)
	}
}

// Text is buffered: streamed chunks reach the writer once the flush delay
// has passed (on the injected clock), and at once before a permission ask.
func TestTextFlushes(t *testing.T) {
	ctx := context.Background()
	clk := quartz.NewMock(t)
	var out testutil.Buffer
	tx := NewText(&out, false)
	tx.Clock = clk
	chunk := driver.Event{Type: driver.EventMessage, Message: &driver.MessageChunk{Role: driver.RoleAgent, Text: "hello"}}
	tx.Emit(chunk)
	if out.String() != "" {
		t.Fatalf("written before the flush delay: %q", out.String())
	}
	clk.Advance(flushDelay).MustWait(ctx)
	if out.String() != "hello" {
		t.Fatalf("after the flush delay: %q", out.String())
	}
	tx.Emit(chunk)
	tx.Emit(driver.Event{Type: driver.EventPermissionAsked, Permission: &driver.PermissionRequest{ToolCall: driver.ToolCall{Title: "Edit"}}})
	if got := out.String(); got != "hellohello\n" {
		t.Fatalf("before the ask: %q", got)
	}
	// The policy's decision makes one line with its ask.
	tx.Emit(driver.Event{Type: driver.EventPermissionDecided, Decision: &driver.PermissionDecision{Verdict: driver.VerdictAllow, DecidedBy: driver.ByDefault, Reason: "reads are allowed"}})
	_ = tx.Flush()
	if got := out.String(); got != "hellohello\n  · allowed: Edit (by default: reads are allowed)\n" {
		t.Fatalf("the decision: %q", got)
	}
}

// A flood's tool calls and plans render without an allocation each (they
// went through fmt, a few boxed strings a line).
func TestTextFloodAllocations(t *testing.T) {
	tx := NewText(io.Discard, false)
	const runs = 1000
	var evs [][3]driver.Event // made beforehand: only the rendering is counted
	for i := range runs + 1 {
		tc := &driver.ToolCall{ID: fmt.Sprintf("flood-%d", i), Title: "Flood call", Kind: driver.KindOther, Status: "in_progress"}
		done := *tc
		done.Status = "completed"
		p := &driver.Plan{Entries: []driver.PlanEntry{{Content: fmt.Sprintf("Flood %d/%d", i, runs), Priority: "low", Status: "in_progress"}}}
		evs = append(evs, [3]driver.Event{{Type: driver.EventToolCall, ToolCall: tc},
			{Type: driver.EventToolCall, ToolCall: &done}, {Type: driver.EventPlan, Plan: p}})
	}
	i := 0
	allocs := testing.AllocsPerRun(runs, func() {
		for _, ev := range evs[i] {
			tx.Emit(ev)
		}
		i++
	})
	if allocs >= 3 {
		t.Fatalf("%v allocations for a tool call, its update and a plan", allocs)
	}
}
