package render

import (
	"bufio"
	"bytes"
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
// The frames a stream is mostly made of are encoded by hand (FrameEncoder).
type Frames struct {
	// Clock times the delayed flush; nil is the real clock.
	Clock quartz.Clock

	mu       sync.Mutex
	out      *bufio.Writer
	enc      *json.Encoder
	frame    FrameEncoder
	flushing bool
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
	_ = f.frame.Write(f.out, ev, "", "")
	if urgent(ev.Type) {
		_ = f.out.Flush()
		return
	}
	f.later()
}

// Tagged is an event's frame with the run and, in a fleet, the task it
// belongs to: how the live feed and fleet stream-json send a session's
// frames.
type Tagged struct {
	Run  string `json:"run,omitempty"`
	Task string `json:"task,omitempty"`
	driver.Event
}

// FrameEncoder writes events as frames, one JSON object and a newline
// each, byte for byte as encoding/json writes them with
// SetEscapeHTML(false). The frames a flood is made of, text chunks, plain
// tool calls and plans, are written by hand: no reflection, no allocation,
// and a long text goes from the agent's line to w without a copy. Other
// tool calls and a permission's request and decision are written without
// reflection too. The zero value is ready; it is not safe for concurrent
// use.
type FrameEncoder struct {
	scratch []byte
	buf     bytes.Buffer // a payload written before its frame
	key     frameKey     // of tags and session
	tags    []byte       // {"run":…,"task":…,"type":"
	session []byte       // ","session":…,"seq":
}

// Write writes ev's frame to w, tagged with run and task (a Tagged frame)
// when they are not empty.
func (e *FrameEncoder) Write(w jsonw.Writer, ev driver.Event, run, task string) error {
	if !ByHand(ev) {
		if e.payload(ev) {
			e.header(w, ev, run, task)
			_, _ = w.Write(e.buf.Bytes())
			if e.buf.Cap() > 1<<20 {
				e.buf = bytes.Buffer{} // not kept after one huge call
			}
			_, err := w.WriteString("}\n")
			return err
		}
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		if run == "" && task == "" {
			return enc.Encode(ev)
		}
		return enc.Encode(Tagged{Run: run, Task: task, Event: ev})
	}
	e.header(w, ev, run, task)
	switch ev.Type {
	case driver.EventMessage:
		m := ev.Message
		_, _ = w.WriteString(`{"role":`)
		_ = jsonw.String(w, string(m.Role))
		field(w, "message_id", m.MessageID)
		field(w, "text", m.Text)
		if m.Replace {
			_, _ = w.WriteString(`,"replace":true`)
		}
	case driver.EventToolCall:
		_ = ev.ToolCall.WriteJSON(w) // plain members: nothing to fail on
		_, err := w.WriteString("}\n")
		return err
	case driver.EventPermissionDecided:
		ev.Decision.WriteJSON(w)
		_, err := w.WriteString("}\n")
		return err
	case driver.EventPlan:
		_, _ = w.WriteString(`{"entries":`)
		if ev.Plan.Entries == nil {
			_, _ = w.WriteString("null")
		} else {
			_ = w.WriteByte('[')
			for i, pe := range ev.Plan.Entries {
				if i > 0 {
					_ = w.WriteByte(',')
				}
				_, _ = w.WriteString(`{"content":`)
				_ = jsonw.String(w, pe.Content)
				field(w, "priority", pe.Priority)
				field(w, "status", pe.Status)
				_ = w.WriteByte('}')
			}
			_ = w.WriteByte(']')
		}
	}
	_, err := w.WriteString("}}\n")
	return err
}

// payload encodes into e.buf, without reflection, the payload of a tool
// call with content, locations or raw values and of a permission's
// request; false for another event, or for a raw value that is not JSON:
// nothing is written then, and encoding/json reports it.
func (e *FrameEncoder) payload(ev driver.Event) bool {
	e.buf.Reset()
	switch {
	case ev.Type == driver.EventToolCall && ev.ToolCall != nil:
		return ev.ToolCall.WriteJSON(&e.buf) == nil
	case ev.Type == driver.EventPermissionAsked && ev.Permission != nil:
		return ev.Permission.WriteJSON(&e.buf) == nil
	}
	return false
}

// ByHand reports whether ev is one of the frames FrameEncoder writes by
// hand: a text chunk, a tool call of plain members, a plan, a permission's
// decision. Such a frame depends on nothing but the event's header and
// that payload.
func ByHand(ev driver.Event) bool {
	switch ev.Type {
	case driver.EventMessage:
		return ev.Message != nil && len(ev.Message.Content) == 0
	case driver.EventToolCall:
		tc := ev.ToolCall
		return tc != nil && len(tc.Locations) == 0 && len(tc.Content) == 0 && len(tc.RawInput) == 0 && len(tc.RawOutput) == 0
	case driver.EventPlan:
		return ev.Plan != nil
	case driver.EventPermissionDecided:
		return ev.Decision != nil
	}
	return false
}

// header writes a frame's common members up to its payload's value. The
// run, task and session repeat from frame to frame: their encoding is kept
// for the next frame of the same ones.
func (e *FrameEncoder) header(w jsonw.Writer, ev driver.Event, run, task string) {
	if k := (frameKey{run, task, ev.Session}); k != e.key || e.tags == nil {
		var b bytes.Buffer
		b.WriteByte('{')
		if run != "" {
			b.WriteString(`"run":`)
			_ = jsonw.String(&b, run)
			b.WriteByte(',')
		}
		if task != "" {
			b.WriteString(`"task":`)
			_ = jsonw.String(&b, task)
			b.WriteByte(',')
		}
		b.WriteString(`"type":"`)
		tags := len(b.Bytes())
		b.WriteByte('"')
		if ev.Session != "" {
			b.WriteString(`,"session":`)
			_ = jsonw.String(&b, ev.Session)
		}
		b.WriteString(`,"seq":`)
		e.key, e.tags, e.session = k, b.Bytes()[:tags], b.Bytes()[tags:]
	}
	buf := append(e.scratch[:0], e.tags...)
	buf = append(buf, ev.Type...) // a fixed ASCII name
	buf = append(buf, e.session...)
	buf = strconv.AppendUint(buf, ev.Seq, 10)
	buf = append(buf, `,"ts":"`...)
	buf = ev.Time.AppendFormat(buf, time.RFC3339Nano)
	buf = append(buf, `","`...)
	buf = append(buf, payloadName(ev.Type)...)
	buf = append(buf, `":`...)
	_, _ = w.Write(buf)
	e.scratch = buf[:0]
}

// frameKey is what the header's kept encoding depends on.
type frameKey struct{ run, task, session string }

// payloadName is the member holding a hand-written frame's payload.
func payloadName(t driver.EventType) string {
	switch t {
	case driver.EventMessage:
		return "message"
	case driver.EventToolCall:
		return "tool_call"
	case driver.EventPermissionDecided:
		return "decision"
	case driver.EventPermissionAsked:
		return "permission"
	}
	return "plan"
}

// field writes an omitempty string member.
func field(w jsonw.Writer, name, v string) {
	if v == "" {
		return
	}
	_ = w.WriteByte(',')
	_ = w.WriteByte('"')
	_, _ = w.WriteString(name)
	_, _ = w.WriteString(`":`)
	_ = jsonw.String(w, v)
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
