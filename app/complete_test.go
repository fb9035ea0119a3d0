package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/sessions"
)

// --resume's completion offers each session once, newest first, with its
// newest run's status and prompt, though it was resumed in several runs.
func TestSessionIDsOnce(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	t.Setenv("TAI_SESSIONS_DIR", dir)
	st := sessions.Open(dir)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i, r := range []sessions.Record{
		{SessionID: "s-1", RunID: "run-1", Prompt: "first", Status: "ok"},
		{SessionID: "s-2", RunID: "run-2", Prompt: "other", Status: "ok"},
		{SessionID: "s-1", RunID: "run-3", Prompt: "again", Status: "error", Resumed: "s-1"},
	} {
		r.Time, r.Workspace, r.Agent, r.Driver, r.Resumable = t0.Add(time.Duration(i)*time.Minute), ws, "builtin", "acp", true
		if err := st.Add(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	got := SessionIDs(context.Background(), ws)
	want := []string{"s-1\tbuiltin error: again", "s-2\tbuiltin ok: other"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("completion %q, want %q", got, want)
	}
}

// Every listing of sessions says when in one format: tai's records and an
// agent's own updated_at alike; an agent's word that is no time, escaped.
func TestAgentTime(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 46, 27, 0, time.UTC)
	for _, tc := range []struct{ in, want string }{
		{"2026-12-01T10:46:27Z", sessionTime(at)},
		{"2026-12-01T10:46:27.123456Z", sessionTime(at.Add(123456 * time.Microsecond))},
		{"2026-12-01T11:46:27+01:00", sessionTime(at)},
		{"", "-"},
		{"yesterday\x1b[2K", `yesterday\x1b[2K`},
	} {
		if got := agentTime(tc.in); got != tc.want {
			t.Errorf("agentTime(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
