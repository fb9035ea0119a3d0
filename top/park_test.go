package top

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/coder/quartz"

	"github.com/tai-dev/tai/feed"
)

// A parked task's row shows it parked (its session's state does not hide
// it), its account (on the fleet's parked line), and a countdown to the reset that moves with the
// model's clock; a task paused by hand says what releases it.
func TestParkedCountdown(t *testing.T) {
	clk := quartz.NewMock(t)
	clk.Set(t0)
	run := feed.State{Run: "fleet-20261201-100000-abcdef", Kind: feed.KindFleet, Started: t0,
		Sessions: []feed.Session{{ID: "builtin-aaaa", Task: "api", Agent: "builtin", Driver: "acp", State: feed.StateIdle,
			Activity: "the turn ended", Started: t0, LastEvent: t0}},
		Tasks: []feed.Task{
			{ID: "api", Agent: "builtin", Status: "parked", Account: "builtin/sha256:5e3a0c1d2e3f4a5b", ResetsAt: t0.Add(2 * time.Hour), Updated: t0},
			{ID: "docs", Agent: "builtin", Status: "parked", Account: "builtin/sha256:5e3a0c1d2e3f4a5b", ResetsAt: t0.Add(2 * time.Hour), Updated: t0},
			{ID: "lint", Agent: "claude", Status: "parked", Account: "claude/sha256:77c0aa11bb22cc33", Updated: t0},
		}}
	m := New(context.Background(), nil, func() time.Time { return clk.Now() }, false, time.Second)
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 24})
	m.Update(runsMsg{runs: []feed.State{run}})
	for _, step := range []struct {
		advance time.Duration
		want    []string
	}{
		{0, []string{"parked: builtin/sha256:5e3a0c1d2e3f4a5b reset in 2h0m0s (api, docs)",
			"parked: claude/sha256:77c0aa11bb22cc33 paused by hand until tai fleet resume (lint)", "reset in 2h0m0s", "paused by hand"}},
		{59*time.Minute + 30*time.Second, []string{"builtin/sha256:5e3a0c1d2e3f4a5b reset in 1h0m30s (api, docs)", "reset in 1h0m30s"}},
		{3 * time.Hour, []string{"builtin/sha256:5e3a0c1d2e3f4a5b reset in 0s (api, docs)"}},
	} {
		clk.Advance(step.advance).MustWait(context.Background())
		got := m.Screen()
		for _, want := range step.want {
			if !strings.Contains(got, want) {
				t.Errorf("at %s the frame lacks %q:\n%s", clk.Now().Sub(t0), want, got)
			}
		}
		for _, l := range strings.Split(got, "\n") {
			if strings.Contains(l, " api ") && !strings.Contains(l, "parked") {
				t.Errorf("the parked task's row does not say parked: %q", l)
			}
		}
	}
}
