package feed

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/driver"
)

// randomEvent is one of a flood's frames, or now and then one that is not
// written by hand (a turn's end), with strings of random lengths.
func randomEvent(r *rand.Rand, seq uint64) driver.Event {
	ev := driver.Event{Session: "s1", Seq: seq, Time: time.Date(2026, 12, 1, 10, 0, 0, int(seq), time.UTC)}
	text := strings.Repeat("x", r.IntN(300))
	switch r.IntN(5) {
	case 0, 1:
		ev.Type, ev.Message = driver.EventMessage, &driver.MessageChunk{Role: driver.RoleAgent, MessageID: "m", Text: text, Replace: r.IntN(9) == 0}
	case 2:
		ev.Type, ev.ToolCall = driver.EventToolCall, &driver.ToolCall{ID: fmt.Sprint("t", seq), Title: text, Kind: driver.KindEdit, Status: "pending"}
	case 3:
		ev.Type, ev.Plan = driver.EventPlan, &driver.Plan{Entries: []driver.PlanEntry{{Content: text, Priority: "low", Status: "pending"}}}
		if r.IntN(4) == 0 {
			ev.Plan.Entries = nil
		}
	default:
		ev.Type, ev.Turn = driver.EventTurnEnded, &driver.TurnEnded{StopReason: "end_turn"}
	}
	return ev
}

// A feed nobody reads keeps its frames unencoded, and a client that comes
// later reads what a feed that encoded each frame at once would have
// kept: the same bytes under the same ids, the newest of them, with the
// rest counted as missed. Fleet frames (Publish) and huge chunks come in
// between.
func TestLazyFramesAreTheEagerOnes(t *testing.T) {
	for trial := range 20 {
		r := rand.New(rand.NewPCG(uint64(trial), 7))
		idle := 500 + r.IntN(20000)
		o := func() Options { // the same run in two places
			return Options{Run: "run-flood", Dir: t.TempDir(), MaxBytes: 64 << 10, IdleBytes: idle}
		}
		lazy, err := Open(o())
		if err != nil {
			t.Fatal(err)
		}
		eager, err := Open(o())
		if err != nil {
			t.Fatal(err)
		}
		eager.streaming(1) // a stream reads: every frame encoded when it comes
		n := 1 + r.IntN(3000)
		for seq := uint64(1); seq <= uint64(n); seq++ {
			switch r.IntN(200) {
			case 0:
				for _, s := range []*Server{lazy, eager} {
					s.Publish(map[string]any{"type": "fleet.task", "run": "run", "n": seq})
				}
				continue
			case 1:
				huge := driver.Event{Type: driver.EventMessage, Session: "s1", Seq: seq, Message: &driver.MessageChunk{Text: strings.Repeat("y", 65<<10)}}
				lazy.Sink("").Emit(huge)
				eager.Sink("").Emit(huge)
				continue
			}
			ev := randomEvent(r, seq)
			lazy.Sink("t").Emit(ev)
			eager.Sink("t").Emit(ev)
		}
		if a, b := lazy.Snapshot().LastEventID, eager.Snapshot().LastEventID; a != b {
			t.Fatalf("trial %d: last event id %d, want %d", trial, a, b)
		}
		got, missed, _, _ := lazy.since(0, make([]kept, 0, n+10))
		want, _, _, _ := eager.since(0, make([]kept, 0, n+10))
		if len(got) == 0 {
			t.Fatalf("trial %d: nothing kept", trial)
		}
		if end := got[len(got)-1].id; end != lazy.Snapshot().LastEventID || missed != got[0].id-1 {
			t.Fatalf("trial %d: frames %d..%d, %d missed, last id %d", trial, got[0].id, end, missed, lazy.Snapshot().LastEventID)
		}
		byID := map[uint64]string{}
		for _, f := range want {
			byID[f.id] = string(f.data)
		}
		bytes := 0
		for _, f := range got {
			bytes += len(f.data)
			if w, ok := byID[f.id]; ok && w != string(f.data) {
				t.Fatalf("trial %d: frame %d is\n%s\nwant\n%s", trial, f.id, f.data, w)
			}
		}
		if bytes > idle && len(got) > 1 {
			t.Fatalf("trial %d: %d bytes kept nobody reading, IdleBytes %d", trial, bytes, idle)
		}
		_ = lazy.Close()
		_ = eager.Close()
	}
}

// A lazy frame is a copy: a driver that reuses what it emitted (a tool
// call patched in place) does not change a frame already kept.
func TestLazyFrameIsACopy(t *testing.T) {
	s := open(t, t.TempDir(), "run-copy")
	tc := &driver.ToolCall{ID: "t1", Title: "first", Status: "pending"}
	msg := &driver.MessageChunk{Role: driver.RoleAgent, Text: "before"}
	k := s.Sink("")
	k.Emit(driver.Event{Type: driver.EventToolCall, Session: "s1", Seq: 1, ToolCall: tc})
	k.Emit(driver.Event{Type: driver.EventMessage, Session: "s1", Seq: 2, Message: msg})
	tc.Title, tc.Status, msg.Text = "patched", "completed", "after"
	frames, _, _, _ := s.since(0, make([]kept, 0, 4))
	if len(frames) != 2 || !strings.Contains(string(frames[0].data), `"title":"first","status":"pending"`) || !strings.Contains(string(frames[1].data), `"text":"before"`) {
		for _, f := range frames {
			t.Logf("frame %d: %s", f.id, f.data)
		}
		t.Fatalf("%d frames: not the ones emitted", len(frames))
	}
}

// However long the flood nobody reads, the feed keeps at most lazyMax
// frames unencoded.
func TestLazyFramesBounded(t *testing.T) {
	s, err := Open(Options{Run: "run-bounded", Dir: t.TempDir(), MaxBytes: 64 << 20, IdleBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := uint64(1); i <= lazyMax+100; i++ {
		emit(s.Sink(""), i)
	}
	s.mu.Lock()
	n, size := s.lazy.n, len(s.lazy.buf)
	s.mu.Unlock()
	if n != lazyMax || size != lazyMax {
		t.Fatalf("%d lazy frames in %d slots, want %d", n, size, lazyMax)
	}
	frames, missed, _, _ := s.since(0, make([]kept, 0, lazyMax+200))
	if missed != 100 || len(frames) != lazyMax || frames[0].id != 101 || !strings.Contains(string(frames[0].data), `"chunk 101"`) {
		t.Fatalf("%d frames from %d, %d missed", len(frames), frames[0].id, missed)
	}
}
