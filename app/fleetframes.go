package app

import (
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/fleet"
)

// Fleet stream-json frame types (cap.md §7).
const (
	FleetEventFrameType  = fleet.EventFrameType
	FleetResultFrameType = fleet.ResultFrameType
)

// TaskFrame is a task's session frame in a fleet's stream.
type TaskFrame = fleet.TaskFrame

// FleetEventFrame is the fleet's own progress.
type FleetEventFrame = fleet.EventFrame

// FleetResultFrame is the last frame: the fleet's summary (as --output json
// prints it).
type FleetResultFrame struct {
	Type string    `json:"type"` // fleet.result
	Seq  uint64    `json:"seq"`
	Ts   time.Time `json:"ts"`
	Summary
}

// fleetStream writes `tai fleet run --output stream-json`: one ordering,
// one seq, for every task's frames and the fleet's.
type fleetStream struct {
	run string
	now func() time.Time
	// publish, if set, also gets the fleet's own frames (the live feed).
	publish func(any)

	mu  sync.Mutex
	enc *json.Encoder
	seq uint64
}

func newFleetStream(w io.Writer, run string, now func() time.Time) *fleetStream {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &fleetStream{run: run, now: now, enc: enc}
}

func (s *fleetStream) write(own bool, fill func(seq uint64, ts time.Time) any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	f := fill(s.seq, s.now().UTC())
	_ = s.enc.Encode(f)
	if own && s.publish != nil {
		s.publish(f)
	}
}

// task is a task's sink.
func (s *fleetStream) task(id string) driver.Sink { return taskSink{s, id} }

type taskSink struct {
	s  *fleetStream
	id string
}

func (k taskSink) Emit(ev driver.Event) {
	k.s.write(false, func(seq uint64, _ time.Time) any {
		ev.Seq = seq
		return TaskFrame{Run: k.s.run, Task: k.id, Event: ev}
	})
}

func (s *fleetStream) event(e fleet.Event) {
	s.write(true, func(seq uint64, ts time.Time) any {
		f := FleetEventFrame{Type: FleetEventFrameType, Run: s.run, Seq: seq, Ts: ts, Event: string(e.Kind), Task: e.Task, Detail: e.Detail, Usage: e.State.Usage}
		if t := e.State.Tasks[e.Task]; t != nil {
			f.Status = string(t.Status)
		}
		return f
	})
}

func (s *fleetStream) result(sum Summary) {
	s.write(true, func(seq uint64, ts time.Time) any {
		return FleetResultFrame{Type: FleetResultFrameType, Seq: seq, Ts: ts, Summary: sum}
	})
}

// sinks fans one event out to several sinks.
type sinks []driver.Sink

func (ss sinks) Emit(ev driver.Event) {
	for _, k := range ss {
		k.Emit(ev)
	}
}
