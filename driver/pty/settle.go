package pty

import (
	"time"

	"github.com/tai-dev/tai/driver/pty/profile"
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
// quiescence (no output for the profile's window, agentapi's 2 s rule);
// a dead process is never idle (the session reports the exit instead).
// It holds no goroutines or timers: the session and the replay tests feed
// it times from the injected clock.
type settler struct {
	quiet   time.Duration
	lastOut time.Time
}

// output records that the application wrote at now.
func (s *settler) output(now time.Time) { s.lastOut = now }

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
		return StatusIdle
	}
	return StatusUnknown
}

// quietAt is when quiescence will be reached, for the wake-up timer.
func (s *settler) quietAt() time.Time { return s.lastOut.Add(s.quiet) }
