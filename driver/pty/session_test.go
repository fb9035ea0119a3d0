package pty

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tai-dev/tai/driver/pty/profile"
	"github.com/tai-dev/tai/driver/pty/term"
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

// A submitted prompt that changed nothing on screen is typed again only
// once the app is known to be at rest: a silent TUI that took it and
// computes (a shell script) must not get a second CR while the settle's
// process probe has not decided yet. On a loaded machine the probe's
// first sample comes late, and the confirm time (3 s) passed before its
// second one (CI: TestGenericSilentWorkIsNotIdle got an empty second
// prompt).
func TestSubmittedPromptIsTypedAgainOnlyAtRest(t *testing.T) {
	base := time.Unix(1000, 0)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		name    string
		busy    bool
		evals   []time.Duration // when the screen is read, after the CR
		wantCRs string
		running bool
	}{
		{"busy, reads on time", true, []time.Duration{ms(2010), ms(2510), ms(3000)}, "", true},
		{"busy, first sample late", true, []time.Duration{ms(2700), ms(3000), ms(3200)}, "", true},
		{"busy, starved for seconds", true, []time.Duration{ms(2900), ms(3000), ms(4500), ms(6100), ms(6600)}, "", true},
		{"at rest: the CR was eaten", false, []time.Duration{ms(2700), ms(3000), ms(3200)}, "\r", false},
		{"at rest, reads on time", false, []time.Duration{ms(2010), ms(2510), ms(3000)}, "\r", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ticks uint64
			probe := func() (agentproc.CPU, bool) {
				if tc.busy {
					ticks++ // starved: a tick per sample, but runnable
					return agentproc.CPU{Ticks: ticks, Running: 1}, true
				}
				return agentproc.CPU{Ticks: 7}, true
			}
			var keys strings.Builder
			prof, _ := profile.Builtin("generic")
			s := &Session{cfg: Config{Confirm: 3 * time.Second, Retries: 3}, prof: prof, log: slog.New(slog.DiscardHandler),
				keysTo: &keys, set: settler{quiet: prof.QuietWindow(), probe: probe}, status: StatusIdle}
			lines := []string{"ready> hello", ""}
			body := prof.Body(lines)
			tr := &turn{text: "hello", phase: phaseSubmitted, before: body, crs: 1, crAt: base, due: base.Add(s.cfg.Confirm), done: make(chan turnResult, 1)}
			s.cur = tr
			s.set.output(base.Add(ms(5))) // the CR's echo
			for _, at := range tc.evals {
				now := base.Add(at)
				v := prof.Parse(lines)
				st := s.set.status(now, v)
				s.status = st
				switch tr.phase {
				case phaseSubmitted:
					s.turnSubmitted(tr, st, v, body, term.Snapshot{Lines: lines}, now)
				}
			}
			if keys.String() != tc.wantCRs {
				t.Errorf("keys typed %q, want %q", keys.String(), tc.wantCRs)
			}
			if got := tr.phase == phaseRunning; got != tc.running {
				t.Errorf("running = %v, want %v", got, tc.running)
			}
		})
	}
}

// An app that printed its answer and went back to waiting is at rest
// before tai has read the answer; on a loaded machine the probe can come
// in between (the app starved while it computed, so its ticks say
// little, and asleep at the second sample). While output is on its way
// the settle gives no verdict; once it is read, it starts over.
func TestSettlerAtRestWithOutputOnItsWay(t *testing.T) {
	base := time.Unix(0, 0)
	cpu := agentproc.CPU{Ticks: 10, Running: 1} // computing, starved
	pending := false
	s := settler{quiet: 2 * time.Second,
		probe:   func() (agentproc.CPU, bool) { return cpu, true },
		pending: func() bool { return pending }}
	unknown := profile.Verdict{State: profile.Unknown}
	s.output(base)
	if got := s.status(base.Add(2*time.Second), unknown); got != StatusUnknown {
		t.Fatalf("first sample: %s", got)
	}
	// It finished, printed and sleeps; tai has not read the output yet.
	cpu, pending = agentproc.CPU{Ticks: 12}, true
	if got := s.status(base.Add(2*time.Second+probeGap), unknown); got != StatusUnknown {
		t.Fatalf("at rest with its answer unread: %s, want unknown", got)
	}
	if got := s.status(base.Add(2*time.Second+2*probeGap), unknown); got != StatusUnknown {
		t.Fatalf("still unread: %s, want unknown", got)
	}
	// Read: the settle starts over from that output.
	pending = false
	read := base.Add(3 * time.Second)
	s.output(read)
	if got := s.status(read.Add(time.Second), unknown); got != StatusUnknown {
		t.Fatalf("just after the answer: %s", got)
	}
	_ = s.status(read.Add(2*time.Second), unknown)
	if got := s.status(read.Add(2*time.Second+probeGap), unknown); got != StatusIdle {
		t.Fatalf("at rest, nothing on its way: %s, want idle", got)
	}
	// Quiescence alone (no figure) waits for pending output too.
	n := settler{quiet: 2 * time.Second, pending: func() bool { return pending }}
	n.output(base)
	pending = true
	if got := n.status(base.Add(2*time.Second), unknown); got != StatusUnknown {
		t.Fatalf("no probe, output on its way: %s, want unknown", got)
	}
}
