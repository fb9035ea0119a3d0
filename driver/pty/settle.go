package pty

import (
	"time"

	"github.com/tai-dev/tai/driver/pty/profile"
	"github.com/tai-dev/tai/internal/agentproc"
)

// Status values of the `status` frame.
const (
	StatusWorking = "working"
	StatusIdle    = "idle"
	StatusWaiting = "waiting"
	StatusUnknown = "unknown"
)

// settler combines the three signals into one status: the profile's
// structural verdict decides when it recognises the screen (idle is
// declared the moment the profile sees an empty composer and no spinner,
// not after a fixed window); a screen it does not recognise falls back to
// quiescence (no output for the profile's window, agentapi's 2 s rule),
// confirmed by the process state: a quiet screen over a process tree that
// still computes (a build, a test run that prints nothing) is working, not
// idle; and a dead process is never idle (the session reports the exit).
// It holds no goroutines or timers: the session and the replay tests feed
// it times from the injected clock.
type settler struct {
	quiet   time.Duration
	lastOut time.Time

	// probe samples the agent's process tree; nil leaves quiescence
	// alone.
	probe func() (agentproc.CPU, bool)
	// pending says the app wrote output tai has not read yet (nil: none
	// known). An app at rest with output on its way has answered, and
	// the answer is not on screen yet: no verdict until it is.
	pending  func() bool
	sampleAt time.Time // the last probe (zero: none since the output)
	sample   agentproc.CPU
	idle     bool // the probe found the tree at rest since the last output
}

// probeGap is the time between two CPU samples. The tree is busy if it
// used busyTicks in that time (a tenth of a core: an idle Node or Go TUI
// uses well under 1 %, a compiler or test run 100 %), or had a runnable
// process at both samples (on a loaded machine a busy process may get
// little CPU, but it stays runnable, where an idle TUI sleeps).
const (
	probeGap  = 500 * time.Millisecond
	busyTicks = 5 // of 50 possible per core in probeGap
)

// output records that the application wrote at now.
func (s *settler) output(now time.Time) {
	if now.After(s.lastOut) {
		s.sampleAt, s.idle = time.Time{}, false
	}
	s.lastOut = now
}

// status is the combined verdict at now.
func (s *settler) status(now time.Time, v profile.Verdict) string {
	switch v.State {
	case profile.Waiting:
		return StatusWaiting
	case profile.Working:
		return StatusWorking
	case profile.Idle:
		return StatusIdle
	}
	if !s.lastOut.IsZero() && now.Sub(s.lastOut) >= s.quiet {
		return s.byProcess(now)
	}
	return StatusUnknown
}

// byProcess settles a quiet, unrecognised screen by the process tree's
// CPU use over probeGap.
//
// An idle verdict also needs that no output is on its way (pending, asked
// after the probe): an app that printed its answer and went back to
// waiting is at rest before tai has read the answer, which on a busy
// machine takes a while; called idle then, the turn ended with the
// answer unread (CI: TestGenericSilentWorkIsNotIdle's empty reply). The
// output, once read, starts the settle over.
func (s *settler) byProcess(now time.Time) string {
	if s.probe == nil || s.idle {
		return s.unlessPending(StatusIdle)
	}
	if !s.sampleAt.IsZero() && now.Sub(s.sampleAt) < probeGap {
		return StatusUnknown
	}
	cur, ok := s.probe()
	if !ok {
		return s.unlessPending(StatusIdle) // no figure (not Linux, or exiting): quiescence alone
	}
	if s.sampleAt.IsZero() {
		s.sampleAt, s.sample = now, cur
		return StatusUnknown
	}
	busy := cur.Ticks-s.sample.Ticks >= busyTicks || cur.Running > 0 && s.sample.Running > 0
	s.sampleAt, s.sample = now, cur
	if busy {
		return StatusWorking
	}
	if s.unlessPending(StatusIdle) != StatusIdle {
		return StatusUnknown
	}
	s.idle = true
	return StatusIdle
}

// unlessPending is st, or unknown while output is on its way.
func (s *settler) unlessPending(st string) string {
	if s.pending != nil && s.pending() {
		return StatusUnknown
	}
	return st
}

// quietAt is when quiescence will be reached, for the wake-up timer.
func (s *settler) quietAt() time.Time { return s.lastOut.Add(s.quiet) }

// probeDue is when the next CPU sample is due, if one is.
func (s *settler) probeDue() (time.Time, bool) {
	if s.probe == nil || s.idle || s.sampleAt.IsZero() {
		return time.Time{}, false
	}
	return s.sampleAt.Add(probeGap), true
}
