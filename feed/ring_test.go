package feed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/driver"
)

// The ring agrees with the plain model of it, a list of the latest frames
// within the bounds, whatever the sizes of the frames (some larger than a
// block), the bounds and the batch a stream reads in.
func TestRingAgreesWithModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		r := ring{maxFrames: 1 + rng.IntN(400), maxBytes: 1 + rng.IntN(3*blockSize), recycle: rng.IntN(2) == 0}
		var model [][]byte // every frame added; the kept ones are a suffix
		skipped := 0       // the last frame skipped: none before it is kept
		for range rng.IntN(2000) {
			size := 1 + rng.IntN(600)
			if rng.IntN(50) == 0 {
				size = blockSize + rng.IntN(blockSize)
			}
			f := bytes.Repeat([]byte{byte('a' + len(model)%26)}, size)
			if rng.IntN(100) == 0 { // too large to keep: numbered, dropped with all before it
				if id := r.skip(); id != uint64(len(model)+1) {
					t.Fatalf("trial %d: skipped frame %d got id %d", trial, len(model)+1, id)
				}
				model = append(model, nil)
				skipped = len(model)
				continue
			}
			if id := r.add(f); id != uint64(len(model)+1) {
				t.Fatalf("trial %d: frame %d got id %d", trial, len(model)+1, id)
			}
			model = append(model, f)
		}
		// The model keeps the newest frames within both bounds, at least one.
		first, n, size := len(model), 0, 0
		for first > skipped {
			f := model[first-1]
			if n > 0 && (n+1 > r.maxFrames || size+len(f) > r.maxBytes) {
				break
			}
			first, n, size = first-1, n+1, size+len(f)
		}
		if r.n != n || r.bytes != size {
			t.Fatalf("trial %d: ring keeps %d frames, %d bytes; the model %d, %d", trial, r.n, r.bytes, n, size)
		}
		for _, after := range []int{0, first, first + 1, len(model) / 2, len(model) - 1, len(model)} {
			if after < 0 {
				continue
			}
			buf := make([]kept, 0, 1+rng.IntN(300))
			id, gotMissed := uint64(after), uint64(0)
			for round := 0; ; round++ {
				frames, missed := r.since(id, buf)
				if round == 0 {
					gotMissed = missed
				} else if missed != 0 {
					t.Fatalf("trial %d: missed %d on a later batch", trial, missed)
				}
				if len(frames) == 0 {
					break
				}
				for _, f := range frames {
					if want := max(id+1, uint64(first+1)); f.id != want {
						t.Fatalf("trial %d: after %d, frame %d where %d was due", trial, after, f.id, want)
					}
					if !bytes.Equal(f.data, model[f.id-1]) {
						t.Fatalf("trial %d: frame %d's data differs", trial, f.id)
					}
					id = f.id
				}
			}
			end := uint64(len(model))
			if n == 0 {
				end = uint64(after) // nothing kept: nothing to read
			}
			if id != end {
				t.Fatalf("trial %d: after %d, the frames ended at %d, want %d", trial, after, id, end)
			}
			if want := uint64(max(0, first-after)); gotMissed != want {
				t.Fatalf("trial %d: after %d, missed %d, want %d", trial, after, gotMissed, want)
			}
		}
	}
}

// A flood into a feed allocates nothing a frame, whether it is kept
// unencoded (nobody reads) or encoded by hand into the feed's blocks (a
// stream reads); and nobody waiting means no channel to close. (Each
// frame was once json.Marshal'ed into its own slice.)
func TestFeedFloodAllocatesNothingPerFrame(t *testing.T) {
	for _, reading := range []bool{false, true} {
		t.Run(fmt.Sprintf("reading=%v", reading), func(t *testing.T) { testFloodAllocs(t, reading) })
	}
}

func testFloodAllocs(t *testing.T, reading bool) {
	s := open(t, t.TempDir(), "run-allocs")
	if reading {
		s.streaming(1) // as /events does
	}
	k := s.Sink("")
	ts := time.Date(2026, 12, 1, 10, 0, 0, 123, time.UTC)
	msg := &driver.MessageChunk{Role: driver.RoleAgent, MessageID: "m1", Text: "flood 1 "}
	tc := &driver.ToolCall{ID: "flood-1", Title: "Flood flood-1", Kind: driver.KindOther, Status: "in_progress"}
	plan := &driver.Plan{Entries: []driver.PlanEntry{{Content: "Flood 4/100000", Priority: "low", Status: "in_progress"}}}
	evs := []driver.Event{
		{Type: driver.EventMessage, Message: msg},
		{Type: driver.EventToolCall, ToolCall: tc},
		{Type: driver.EventPlan, Plan: plan},
	}
	var seq uint64
	allocs := testing.AllocsPerRun(1000, func() { // the kinds in turn, as in a flood
		for _, ev := range evs {
			seq++
			ev.Session, ev.Time, ev.Seq = "s1", ts, seq
			k.Emit(ev)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations a frame", allocs/float64(len(evs)))
	}
	// Nor a block, once the feed is full, with nobody reading: the lazy
	// frames' slots and the blocks of dropped frames are reused (four
	// times IdleBytes of frames here).
	flood := func(bytes int) {
		for range bytes / 200 / len(evs) { // frames of about 200 bytes
			for _, ev := range evs {
				seq++
				ev.Session, ev.Time, ev.Seq = "s1", ts, seq
				k.Emit(ev)
			}
		}
	}
	if !reading {
		flood(2 << 20) // full
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		flood(4 << 20)
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > 2*blockSize {
			t.Errorf("%d bytes allocated for 4 MiB of frames", n)
		}
	}
	// And what is kept is the frame encoding/json would write, with the
	// ids of a feed that encoded every frame: the last frame is seq.
	frames, missed, _, _ := s.since(seq-1, make([]kept, 0, 1))
	var got TaggedEvent
	if len(frames) != 1 || missed != 0 || frames[0].id != seq {
		t.Fatalf("after %d: %d frames, %d missed", seq-1, len(frames), missed)
	}
	if err := json.Unmarshal(frames[0].data, &got); err != nil || got.Run != "run-allocs" || got.Plan == nil || got.Plan.Entries[0] != plan.Entries[0] {
		t.Fatalf("last frame %s: %v", frames[0].data, err)
	}
	want, _ := json.Marshal(TaggedEvent{Run: "run-allocs", Event: driver.Event{Type: driver.EventPlan, Session: "s1", Seq: seq, Time: ts, Plan: plan}})
	if string(frames[0].data) != string(want) {
		t.Fatalf("last frame\n%s\nwant\n%s", frames[0].data, want)
	}
}

// A frame far larger than a block is kept whole, and its buffer is not
// kept by the feed after it.
func TestFeedHugeFrame(t *testing.T) {
	s := open(t, t.TempDir(), "run-huge")
	text := strings.Repeat("x", 3*blockSize)
	s.Sink("").Emit(driver.Event{Type: driver.EventMessage, Session: "s1", Seq: 1, Message: &driver.MessageChunk{Role: driver.RoleAgent, Text: text}})
	frames, _, _, _ := s.since(0, make([]kept, 0, 4))
	var got TaggedEvent
	if len(frames) != 1 || json.Unmarshal(frames[0].data, &got) != nil || got.Message.Text != text {
		t.Fatalf("%d frames kept", len(frames))
	}
	if s.buf.Cap() > blockSize {
		t.Fatalf("the encode buffer keeps %d bytes", s.buf.Cap())
	}
}

// A feed nobody reads keeps IdleBytes of frames; while a stream reads, up
// to MaxBytes.
func TestFeedKeepsLessWhileNobodyReads(t *testing.T) {
	s, err := Open(Options{Run: "run-idle", Dir: t.TempDir(), MaxBytes: 20000, IdleBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := s.Sink("")
	for i := uint64(1); i <= 100; i++ {
		emit(k, i)
	}
	keptBytes := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.encodeLazyLocked() // what a client coming now would find
		return s.frames.bytes
	}
	if b := keptBytes(); b > 1000 || b == 0 {
		t.Fatalf("nobody reading: %d bytes kept, want at most 1000", b)
	}
	c := Dial(s.Path())
	defer c.Close()
	reading := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		first := true
		_, err := c.Events(context.Background(), 0, func(Event) error {
			if first {
				first = false
				close(reading)
			}
			return nil
		})
		done <- err
	}()
	<-reading
	for i := uint64(101); i <= 300; i++ {
		emit(k, i)
	}
	if b := keptBytes(); b <= 1000 || b > 20000 {
		t.Fatalf("a stream reading: %d bytes kept, want over 1000, at most 20000", b)
	}
	s.Close()
	if err := <-done; !errors.Is(err, ErrEnded) {
		t.Fatal(err)
	}
}

// A message chunk larger than the feed (a 100 MiB line) is neither encoded
// nor kept: a client is told it missed it.
func TestFeedSkipsAFrameLargerThanItself(t *testing.T) {
	s, err := Open(Options{Run: "run-big", Dir: t.TempDir(), MaxBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := s.Sink("")
	emit(k, 1)
	k.Emit(driver.Event{Type: driver.EventMessage, Session: "s1", Seq: 2, Message: &driver.MessageChunk{Role: driver.RoleAgent, Text: strings.Repeat("x", 2000)}})
	emit(k, 3)
	if s.frames.bytes > 1000 {
		t.Fatalf("%d bytes kept", s.frames.bytes)
	}
	c := Dial(s.Path())
	defer c.Close()
	var names []string
	_, err = c.Events(context.Background(), 0, func(ev Event) error {
		names = append(names, fmt.Sprintf("%s%d", ev.Name, ev.ID))
		if ev.ID == 3 {
			return errDrop
		}
		return nil
	})
	if !errors.Is(err, errDrop) || strings.Join(names, ",") != "gap0,3" {
		t.Fatalf("got %v, %v; want the gap (frames 1 and 2) then frame 3", names, err)
	}
}
