package render

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/internal/testutil"
)

// While the agent is silent in a turn, the status line shows a spinner,
// the turn's time and the last activity; the next output takes it off the
// line first; a question on the screen and the turn's end stop it.
func TestStatusLine(t *testing.T) {
	ctx := context.Background()
	clk := quartz.NewMock(t)
	var out testutil.Buffer
	tx := NewText(&out, false)
	tx.Clock, tx.Status = clk, true
	tx.Emit(driver.Event{Type: driver.EventToolCall, ToolCall: &driver.ToolCall{ID: "t1", Title: "Read notes.txt", Kind: "read", Status: "in_progress"}})
	clk.Advance(flushDelay).MustWait(ctx) // the flush comes first
	clk.Advance(statusSilence - flushDelay).MustWait(ctx)
	if got := out.String(); !strings.HasSuffix(got, "\r\x1b[K⠋ working 1s · tool: Read notes.txt") {
		t.Fatalf("after a silence: %q", got)
	}
	clk.Advance(statusTick).MustWait(ctx)
	clk.Advance(statusTick).MustWait(ctx)
	clk.Advance(statusTick).MustWait(ctx)
	clk.Advance(statusTick).MustWait(ctx)
	if got := out.String(); !strings.HasSuffix(got, "\r\x1b[K⠼ working 2s · tool: Read notes.txt") {
		t.Fatalf("a second later: %q", got)
	}
	n := len(out.String())
	tx.Emit(driver.Event{Type: driver.EventUsage, Usage: &driver.Usage{ContextUsed: 1200, ContextSize: 8000}})
	_ = tx.Flush()
	if got := out.String()[n:]; got != "\r\x1b[K◆ context 1200/8000 tokens\n" {
		t.Fatalf("the next output: %q", got)
	}
	tx.Emit(driver.Event{Type: driver.EventPermissionAsked, Permission: &driver.PermissionRequest{ID: "p", ToolCall: driver.ToolCall{Title: "Deploy"}}})
	n = len(out.String())
	advance(ctx, clk, 2*statusSilence)
	if got := out.String()[n:]; got != "" {
		t.Fatalf("drawn over a question: %q", got)
	}
	tx.Emit(driver.Event{Type: driver.EventPermissionDecided, Decision: &driver.PermissionDecision{RequestID: "p", Verdict: "allow", DecidedBy: driver.ByHuman}})
	tx.Emit(driver.Event{Type: driver.EventTurnEnded, Turn: &driver.TurnEnded{StopReason: "end_turn"}})
	_ = tx.Flush()
	n = len(out.String())
	advance(ctx, clk, 2*statusSilence)
	if got := out.String()[n:]; got != "" {
		t.Fatalf("drawn after the turn's end: %q", got)
	}
}

// advance moves the mock clock by d, firing every timer due on the way
// (stale status draws among them).
func advance(ctx context.Context, clk *quartz.Mock, d time.Duration) {
	for d > 0 {
		next, ok := clk.Peek()
		if !ok || next > d {
			clk.Advance(d).MustWait(ctx)
			return
		}
		clk.Advance(next).MustWait(ctx)
		d -= next
	}
}
