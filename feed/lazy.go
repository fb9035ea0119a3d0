package feed

import (
	"time"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/render"
)

// lazyMax bounds the frames a feed nobody reads keeps unencoded.
const lazyMax = 2048

// lazyOverhead is what a frame's members other than its strings take, about:
// {"run":…,"type":…,"session":…,"seq":…,"ts":…,"message":{"role":…}}.
const lazyOverhead = 128

// lazyFrame is a frame kept outside the ring while no stream reads: in a
// flood nobody watches, nearly every frame is dropped unread, and
// encoding them all cost a tenth of tai's CPU. One FrameEncoder writes by
// hand (a text chunk, a plain tool call, a plan) is kept unencoded, what
// its encoding needs copied, so that the driver is free to reuse what it
// emitted; any other (an ask, a fleet frame, a turn's end: rare) is kept
// encoded, in raw.
type lazyFrame struct {
	raw     []byte
	typ     driver.EventType
	session string
	task    string
	seq     uint64
	at      time.Time
	s       [5]string // message: role, id, text; tool call: id, title, kind, status, name
	replace bool
	entries []driver.PlanEntry // a plan's: drivers build a new slice a plan
	size    int                // estimated encoded size
}

// lazyFrames is a FIFO of lazy frames in a slice that grows to lazyMax
// and is then reused in a circle.
type lazyFrames struct {
	buf   []lazyFrame
	head  int // index of the oldest
	n     int
	bytes int // their estimated size
}

// keepLazyLocked keeps ev as a lazy frame if it is one FrameEncoder
// writes by hand and no stream reads; s.mu is held.
func (s *Server) keepLazyLocked(task string, ev driver.Event) bool {
	if s.streams > 0 || !lazyKind(ev) {
		return false
	}
	f := lazyFrame{typ: ev.Type, session: ev.Session, task: task, seq: ev.Seq, at: ev.Time}
	switch ev.Type {
	case driver.EventMessage:
		m := ev.Message
		f.s = [5]string{string(m.Role), m.MessageID, m.Text}
		f.replace = m.Replace
	case driver.EventToolCall:
		tc := ev.ToolCall
		f.s = [5]string{tc.ID, tc.Title, string(tc.Kind), tc.Status, tc.Name}
	case driver.EventPlan:
		f.entries = ev.Plan.Entries
		for _, e := range f.entries {
			f.size += len(e.Content) + len(e.Priority) + len(e.Status) + 48
		}
	}
	f.size += lazyOverhead + len(task) + len(f.session)
	for _, v := range f.s {
		f.size += len(v)
	}
	s.lazy.push(f, s.o.IdleBytes, s.frames.skip)
	return true
}

// lazyKind reports whether ev is a frame a lazyFrame holds unencoded: one
// FrameEncoder writes by hand that comes by the thousand (a permission's
// decision, written by hand too, is rare and kept encoded).
func lazyKind(ev driver.Event) bool {
	switch ev.Type {
	case driver.EventMessage, driver.EventToolCall, driver.EventPlan:
		return render.ByHand(ev)
	}
	return false
}

// keepRawLocked keeps an encoded frame (copied) as a lazy frame if no
// stream reads; s.mu is held.
func (s *Server) keepRawLocked(data []byte) bool {
	if s.streams > 0 {
		return false
	}
	s.lazy.push(lazyFrame{raw: append([]byte(nil), data...), size: len(data)}, s.o.IdleBytes, s.frames.skip)
	return true
}

// push keeps f. Past the bounds (lazyMax frames, idle bytes) the oldest
// is dropped unencoded: numbered by drop, which also drops every frame
// before it, as the ring would have dropped it; the newest is kept
// whatever its size.
func (l *lazyFrames) push(f lazyFrame, idle int, drop func() uint64) {
	for l.n > 0 && (l.n == lazyMax || l.bytes+f.size > idle) {
		l.dropOldest()
		drop()
	}
	if l.n < len(l.buf) {
		l.buf[(l.head+l.n)%len(l.buf)] = f
	} else { // still growing: the FIFO has never wrapped
		l.buf = append(l.buf, f)
	}
	l.n++
	l.bytes += f.size
}

// lazyPayload is where a lazy frame's payload is put back together to be
// encoded.
type lazyPayload struct {
	msg  driver.MessageChunk
	tc   driver.ToolCall
	plan driver.Plan
}

func (l *lazyFrames) dropOldest() {
	l.bytes -= l.buf[l.head].size
	l.buf[l.head] = lazyFrame{} // let go of its strings
	l.head = (l.head + 1) % len(l.buf)
	l.n--
}

// encodeLazyLocked encodes the lazy frames into the ring, oldest first,
// before anything reads the ring or adds to it; s.mu is held.
func (s *Server) encodeLazyLocked() {
	l := &s.lazy
	for l.n > 0 {
		f := &l.buf[l.head]
		if f.raw != nil {
			s.frames.add(f.raw)
			l.dropOldest()
			continue
		}
		// The payload goes in the Server's own: no allocation a frame.
		p := &s.payload
		ev := driver.Event{Type: f.typ, Session: f.session, Seq: f.seq, Time: f.at}
		switch f.typ {
		case driver.EventMessage:
			p.msg = driver.MessageChunk{Role: driver.Role(f.s[0]), MessageID: f.s[1], Text: f.s[2], Replace: f.replace}
			ev.Message = &p.msg
		case driver.EventToolCall:
			p.tc = driver.ToolCall{ID: f.s[0], Title: f.s[1], Kind: driver.ToolKind(f.s[2]), Status: f.s[3], Name: f.s[4]}
			ev.ToolCall = &p.tc
		case driver.EventPlan:
			p.plan = driver.Plan{Entries: f.entries}
			ev.Plan = &p.plan
		}
		task := f.task
		l.dropOldest()
		if data := s.encodeLocked(task, ev); data != nil {
			s.frames.add(data)
		}
		s.releaseBuf()
	}
	l.head = 0
	s.payload = lazyPayload{}
}

// dropLazyLocked drops the lazy frames unencoded (a frame too large to
// keep comes after them, and drops what came before it); s.mu is held.
func (s *Server) dropLazyLocked() {
	for s.lazy.n > 0 {
		s.lazy.dropOldest()
		s.frames.skip()
	}
	s.lazy.head = 0
}
