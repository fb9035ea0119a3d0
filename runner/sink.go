package runner

import (
	"sync"
	"time"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/driver"
)

// stamper numbers events and fans them out, in one order, to every sink.
type stamper struct {
	mu      sync.Mutex
	clock   quartz.Clock
	seq     uint64
	session string
	sinks   []driver.Sink
	last    time.Time // time of the last event, for the late-update window
}

func (s *stamper) Emit(ev driver.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	ev.Seq = s.seq
	ev.Time = s.clock.Now().UTC()
	s.last = ev.Time
	if ev.Session == "" {
		ev.Session = s.session
	} else if s.session == "" {
		s.session = ev.Session
	}
	for _, k := range s.sinks {
		k.Emit(ev)
	}
}

func (s *stamper) nextSeq() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return s.seq
}

// sessionID is the session the events are stamped with ("" before the
// first).
func (s *stamper) sessionID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.session
}

func (s *stamper) lastEvent() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// add appends a sink.
func (s *stamper) add(k driver.Sink) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sinks = append(s.sinks, k)
}
