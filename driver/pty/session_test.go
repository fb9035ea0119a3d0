package pty

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tai-dev/tai/driver/pty/profile"
	"github.com/tai-dev/tai/internal/agentproc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPickKeys(t *testing.T) {
	for _, tc := range []struct {
		sel, target int
		app         bool
		want        string
	}{
		{0, 0, false, "\r"},
		{0, 2, false, "\x1b[B\x1b[B\r"},
		{2, 0, false, "\x1b[A\x1b[A\r"},
		{0, 1, true, "\x1bOB\r"},
	} {
		if got := pickKeys(tc.sel, tc.target, tc.app, false); got != tc.want {
			t.Errorf("pickKeys(%d,%d,%v) = %q, want %q", tc.sel, tc.target, tc.app, got, tc.want)
		}
	}
}

// The settler on an injected timeline: the profile's verdict decides at
// once; an unrecognised screen becomes idle only after the quiet window.
func TestSettler(t *testing.T) {
	base := time.Unix(0, 0)
	s := settler{quiet: 2 * time.Second}
	s.output(base)
	for _, tc := range []struct {
		at    time.Duration
		state profile.State
		want  string
	}{
		{10 * time.Millisecond, profile.Idle, StatusIdle},
		{10 * time.Millisecond, profile.Working, StatusWorking},
		{10 * time.Millisecond, profile.Waiting, StatusWaiting},
		{1999 * time.Millisecond, profile.Unknown, StatusUnknown},
		{2 * time.Second, profile.Unknown, StatusIdle},
	} {
		if got := s.status(base.Add(tc.at), profile.Verdict{State: tc.state}); got != tc.want {
			t.Errorf("at %s with %s: %s, want %s", tc.at, tc.state, got, tc.want)
		}
	}
}

// The process-state signal: a quiet, unrecognised screen is idle only if
// the agent's process tree is at rest too; while it computes (a silent
// build) it is working. New output starts over.
func TestSettlerProcessState(t *testing.T) {
	base := time.Unix(0, 0)
	var ticks uint64
	running := 0
	s := settler{quiet: 2 * time.Second, probe: func() (agentproc.CPU, bool) { return agentproc.CPU{Ticks: ticks, Running: running}, true }}
	s.output(base)
	unknown := profile.Verdict{State: profile.Unknown}
	for i, tc := range []struct {
		at    time.Duration
		cpu   uint64 // ticks used since the previous step
		want  string
		probe bool // a probe is due afterwards
	}{
		{1 * time.Second, 0, StatusUnknown, false},
		{2 * time.Second, 0, StatusUnknown, true}, // quiet: first sample
		{2*time.Second + 499*time.Millisecond, 40, StatusUnknown, true},
		{2*time.Second + 500*time.Millisecond, 10, StatusWorking, true}, // 50 ticks in 500 ms: a busy core
		{3 * time.Second, 20, StatusWorking, true},
		{3*time.Second + 500*time.Millisecond, 2, StatusIdle, false}, // at rest
		{10 * time.Second, 500, StatusIdle, false},                   // idle holds until new output
	} {
		ticks += tc.cpu
		running = 0
		if got := s.status(base.Add(tc.at), unknown); got != tc.want {
			t.Fatalf("step %d at %s: %s, want %s", i, tc.at, got, tc.want)
		}
		if _, due := s.probeDue(); due != tc.probe {
			t.Fatalf("step %d: probe due = %v, want %v", i, due, tc.probe)
		}
	}
	s.output(base.Add(11 * time.Second))
	if got := s.status(base.Add(11*time.Second+time.Millisecond), unknown); got != StatusUnknown {
		t.Fatalf("after new output: %s, want unknown", got)
	}
	// Starved of CPU on a loaded machine but runnable at both samples:
	// still working.
	running = 1
	_ = s.status(base.Add(13*time.Second), unknown)
	if got := s.status(base.Add(13*time.Second+probeGap), unknown); got != StatusWorking {
		t.Fatalf("runnable at both samples: %s, want working", got)
	}
	running = 0
	if got := s.status(base.Add(13*time.Second+2*probeGap), unknown); got != StatusIdle {
		t.Fatalf("asleep and no CPU: %s, want idle", got)
	}
	// The profile's verdict still wins at once.
	if got := s.status(base.Add(11*time.Second+2*time.Millisecond), profile.Verdict{State: profile.Idle}); got != StatusIdle {
		t.Fatalf("profile idle: %s", got)
	}
}
