package runner

import (
	"fmt"
	"sync"
	"time"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/driver"
)

// stamper numbers events and fans them out, in one order, to every sink.
//
// A turn's end is held back while the turn is open (holdTurnEnd): agents
// send updates after their prompt response, in the late window, and those
// belong to the turn, so turn.ended is numbered and delivered only when the
// runner closes the turn (releaseTurnEnd), after every update it owns.
type stamper struct {
	mu      sync.Mutex
	clock   quartz.Clock
	seq     uint64
	session string
	sinks   []driver.Sink
	last    time.Time // time of the last event, for the late-update window

	holding bool
	held    []driver.Event // turn.ended events waiting for the turn to close
	// maxMessage bounds one message's text (0: no bound); sizes counts
	// this turn's messages by role and id.
	maxMessage int64
	sizes      map[messageKey]int64
}

type messageKey struct {
	role driver.Role
	id   string
}

// newTurn starts counting the messages of a new turn.
func (s *stamper) newTurn() {
	s.mu.Lock()
	s.sizes = nil
	s.mu.Unlock()
}

// capMessage passes a chunk that keeps its message within maxMessage; the
// first one past it becomes an error event, like an oversize line, and the
// rest of that message is skipped.
func (s *stamper) capMessage(ev driver.Event) (driver.Event, bool) {
	if s.maxMessage <= 0 || ev.Type != driver.EventMessage || ev.Message == nil {
		return ev, true
	}
	m := ev.Message
	k := messageKey{m.Role, m.MessageID}
	if s.sizes == nil {
		s.sizes = map[messageKey]int64{}
	}
	had := s.sizes[k]
	if had < 0 {
		return ev, false // already over
	}
	n := had + int64(len(m.Text)+len(m.Content))
	if m.Replace {
		n = int64(len(m.Text) + len(m.Content))
	}
	if n <= s.maxMessage {
		s.sizes[k] = n
		return ev, true
	}
	s.sizes[k] = -1
	return driver.Event{Type: driver.EventError, Session: ev.Session, Error: &driver.ErrorInfo{Code: "oversize_message",
		Message: fmt.Sprintf("skipped the rest of a %s message over the %d-byte limit (--max-message-bytes)", m.Role, s.maxMessage)}}, true
}

func (s *stamper) Emit(ev driver.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now().UTC()
	s.last = now
	ev, ok := s.capMessage(ev)
	if !ok {
		return
	}
	if s.holding && ev.Type == driver.EventTurnEnded {
		s.held = append(s.held, ev)
		return
	}
	s.deliver(ev, now)
}

// deliver stamps ev and hands it to every sink; s.mu is held.
func (s *stamper) deliver(ev driver.Event, now time.Time) {
	s.seq++
	ev.Seq = s.seq
	ev.Time = now
	if ev.Session == "" {
		ev.Session = s.session
	} else if s.session == "" {
		s.session = ev.Session
	}
	for _, k := range s.sinks {
		k.Emit(ev)
	}
}

// holdTurnEnd opens a turn: its turn.ended waits for releaseTurnEnd.
func (s *stamper) holdTurnEnd() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holding = true
}

// releaseTurnEnd closes the turn: the held turn.ended follows every update
// delivered so far. Safe to call when nothing is held.
func (s *stamper) releaseTurnEnd() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holding = false
	held := s.held
	s.held = nil
	for _, ev := range held {
		s.deliver(ev, s.clock.Now().UTC())
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
