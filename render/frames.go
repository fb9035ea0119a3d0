package render

import (
	"bufio"
	"encoding/json"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/internal/jsonw"
)

// Frames writes one JSON object per line for every event: tai's stream-json
// output, specified in cap.md. Frames go through one buffer, written out
// within flushDelay, at once for the events a reader must not wait for, and
// on every Write (results and protocol lines, which a parent answers).
// Message chunks, most of a stream, are encoded by hand: no reflection, and
// a long text goes from the agent's line to the output without a copy.
type Frames struct {
	// Clock times the delayed flush; nil is the real clock.
	Clock quartz.Clock

	mu       sync.Mutex
	out      *bufio.Writer
	enc      *json.Encoder
	flushing bool
	scratch  []byte
}

// NewFrames returns a frame writer.
func NewFrames(w io.Writer) *Frames {
	out := bufio.NewWriterSize(w, 32<<10)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	return &Frames{out: out, enc: enc}
}

// Emit writes the event as a frame.
func (f *Frames) Emit(ev driver.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.byHand(ev) {
		_ = f.enc.Encode(ev)
	}
	if urgent(ev.Type) {
		_ = f.out.Flush()
		return
	}
	f.later()
}

// byHand writes the frames a flood is made of, text chunks, plain tool
// calls and plans, as encoding/json would; false for any other event.
func (f *Frames) byHand(ev driver.Event) bool {
	switch {
	case ev.Type == driver.EventMessage && ev.Message != nil && len(ev.Message.Content) == 0:
		m := ev.Message
		f.header(ev, "message")
		_, _ = f.out.WriteString(`{"role":`)
		_ = jsonw.String(f.out, string(m.Role))
		f.field("message_id", m.MessageID)
		f.field("text", m.Text)
		if m.Replace {
			_, _ = f.out.WriteString(`,"replace":true`)
		}
	case ev.Type == driver.EventToolCall && ev.ToolCall != nil && len(ev.ToolCall.Locations) == 0 &&
		len(ev.ToolCall.Content) == 0 && len(ev.ToolCall.RawInput) == 0 && len(ev.ToolCall.RawOutput) == 0:
		tc := ev.ToolCall
		f.header(ev, "tool_call")
		_, _ = f.out.WriteString(`{"id":`)
		_ = jsonw.String(f.out, tc.ID)
		f.field("title", tc.Title)
		f.field("kind", string(tc.Kind))
		f.field("status", tc.Status)
		f.field("name", tc.Name)
	case ev.Type == driver.EventPlan && ev.Plan != nil:
		f.header(ev, "plan")
		_, _ = f.out.WriteString(`{"entries":`)
		if ev.Plan.Entries == nil {
			_, _ = f.out.WriteString("null")
		} else {
			_ = f.out.WriteByte('[')
			for i, e := range ev.Plan.Entries {
				if i > 0 {
					_ = f.out.WriteByte(',')
				}
				_, _ = f.out.WriteString(`{"content":`)
				_ = jsonw.String(f.out, e.Content)
				f.field("priority", e.Priority)
				f.field("status", e.Status)
				_ = f.out.WriteByte('}')
			}
			_ = f.out.WriteByte(']')
		}
	default:
		return false
	}
	_, _ = f.out.WriteString("}}\n")
	return true
}

// header writes a frame's common members up to its payload's value.
func (f *Frames) header(ev driver.Event, payload string) {
	b := append(f.scratch[:0], `{"type":`...)
	b = strconv.AppendQuote(b, string(ev.Type)) // a fixed ASCII name
	if ev.Session != "" {
		f.flushScratch(append(b, `,"session":`...))
		_ = jsonw.String(f.out, ev.Session)
		b = f.scratch[:0]
	}
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, ev.Seq, 10)
	b = append(b, `,"ts":"`...)
	b = ev.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","`...)
	b = append(b, payload...)
	b = append(b, `":`...)
	f.flushScratch(b)
}

// field writes an omitempty string member.
func (f *Frames) field(name, v string) {
	if v == "" {
		return
	}
	_ = f.out.WriteByte(',')
	_ = f.out.WriteByte('"')
	_, _ = f.out.WriteString(name)
	_, _ = f.out.WriteString(`":`)
	_ = jsonw.String(f.out, v)
}

func (f *Frames) flushScratch(b []byte) {
	_, _ = f.out.Write(b)
	f.scratch = b[:0]
}

// later schedules the delayed flush.
func (f *Frames) later() {
	if f.flushing {
		return
	}
	if f.Clock == nil {
		f.Clock = quartz.NewReal()
	}
	f.flushing = true
	f.Clock.AfterFunc(flushDelay, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.flushing = false
		_ = f.out.Flush()
	}, "render", "frames-flush")
}

// StreamingJSON is a frame that writes itself, for one whose encoding
// would otherwise be built whole in memory first (a result holding a
// 100 MiB message).
type StreamingJSON interface {
	WriteJSON(w *bufio.Writer) error
}

// Write writes any frame (the final result frame, protocol lines) and
// flushes.
func (f *Frames) Write(v any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var err error
	if s, ok := v.(StreamingJSON); ok {
		if err = s.WriteJSON(f.out); err == nil {
			err = f.out.WriteByte('\n')
		}
	} else {
		err = f.enc.Encode(v)
	}
	if ferr := f.out.Flush(); err == nil {
		err = ferr
	}
	return err
}

// Flush writes out what is buffered.
func (f *Frames) Flush() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.out.Flush()
}
