package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

type agentListing struct {
	Agent    string `json:"agent"`
	Sessions []struct {
		ID       string `json:"id"`
		Cwd      string `json:"cwd"`
		Title    string `json:"title"`
		Recorded bool   `json:"recorded"`
	} `json:"sessions"`
	Recorded []struct {
		SessionID string `json:"session_id"`
	} `json:"recorded"`
}

func listAgent(t *testing.T, dir string, args ...string) agentListing {
	t.Helper()
	o := tai(t, dir, append([]string{"sessions", "--json"}, args...)...)
	var l agentListing
	if err := json.Unmarshal([]byte(o.stdout), &l); err != nil || o.code != 0 {
		t.Fatalf("exit %d %v\n%s\n%s", o.code, err, o.stdout, o.stderr)
	}
	return l
}

// The built-in agent's own sessions, through session/list with pages of
// two: every page is followed, each session tai ran is marked, --fork
// makes a new one from a copy, and `sessions rm` deletes through
// session/delete.
func TestAgentSessionsBuiltin(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	agent := taiBin + " agent builtin --page-size 2"
	var ids []string
	for i := range 5 {
		o := tai(t, ws, "run", "--agent-cmd", agent, "-o", "json", "/echo run "+string(rune('a'+i)))
		ids = append(ids, jsonResult(t, o).SessionID)
	}
	l := listAgent(t, ws, "--agent-cmd", agent)
	if len(l.Sessions) != 5 || len(l.Recorded) != 5 {
		t.Fatalf("listed %d of the agent's sessions and %d records; want 5 and 5 (pages of 2 followed): %+v", len(l.Sessions), len(l.Recorded), l)
	}
	seen := map[string]bool{}
	for _, s := range l.Sessions {
		if !s.Recorded || s.Cwd != ws || seen[s.ID] {
			t.Fatalf("session %+v (recorded, in the workspace, once)", s)
		}
		seen[s.ID] = true
	}
	for _, id := range ids {
		if !seen[id] {
			t.Fatalf("session %s of an earlier run is not listed", id)
		}
	}
	// Another workspace's filter hides them; --all shows them.
	if l := listAgent(t, t.TempDir(), "--agent-cmd", agent); len(l.Sessions) != 0 {
		t.Fatalf("another workspace lists %d", len(l.Sessions))
	}
	if l := listAgent(t, t.TempDir(), "--agent-cmd", agent, "--all"); len(l.Sessions) < 5 {
		t.Fatalf("--all lists %d", len(l.Sessions))
	}

	// --fork: a new session from a copy of the first, listed as the sixth
	// and titled after its source.
	o := tai(t, ws, "run", "--agent-cmd", agent, "--fork", ids[0], "-o", "json", "/echo forked")
	fork := jsonResult(t, o)
	if o.code != 0 || fork.SessionID == "" || fork.SessionID == ids[0] {
		t.Fatalf("--fork: exit %d %+v", o.code, fork)
	}
	if l := listAgent(t, ws, "--agent-cmd", agent); len(l.Sessions) != 6 || !strings.HasPrefix(l.Sessions[0].Title, "Fork of") {
		t.Fatalf("after the fork: %+v", l.Sessions)
	}
	if o := tai(t, ws, "run", "--agent-cmd", agent, "--fork", "builtin-0000000000000000", "go"); o.code != 4 {
		t.Fatalf("--fork of no session: exit %d %s", o.code, o.stderr)
	}

	// rm: gone from the agent's list; a second rm finds nothing.
	if o := tai(t, ws, "sessions", "rm", ids[1], "--agent-cmd", agent); o.code != 0 || !strings.Contains(o.stdout, "deleted") {
		t.Fatalf("rm: exit %d %s %s", o.code, o.stdout, o.stderr)
	}
	for _, s := range listAgent(t, ws, "--agent-cmd", agent).Sessions {
		if s.ID == ids[1] {
			t.Fatal("the deleted session is still listed")
		}
	}
	if o := tai(t, ws, "sessions", "rm", ids[1], "--agent-cmd", agent); o.code != 4 {
		t.Fatalf("second rm: exit %d %s", o.code, o.stderr)
	}
	// --recorded asks only tai's records.
	o = tai(t, ws, "sessions", "--agent-cmd", agent, "--recorded", "--json")
	if o.code != 0 || !strings.HasPrefix(strings.TrimSpace(o.stdout), "[") {
		t.Fatalf("--recorded: exit %d %s", o.code, o.stdout)
	}
}

// An agent without session/list, delete or fork gets a clear usage error.
func TestAgentSessionsUnsupported(t *testing.T) {
	t.Parallel()
	agent := "node " + peer(t, "TAI_TS_AGENT")
	ws := t.TempDir()
	for _, args := range [][]string{
		{"sessions", "--agent-cmd", agent},
		{"sessions", "rm", "x", "--agent-cmd", agent},
		{"run", "--agent-cmd", agent, "--fork", "x", "go"},
	} {
		o := tai(t, ws, args...)
		if o.code != 2 || !strings.Contains(o.stderr, "session/") {
			t.Errorf("%v: exit %d %s", args, o.code, o.stderr)
		}
	}
}
