package pty

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tai-dev/tai/driver/pty/profile"
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
