package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// A run keeps its session id with the workspace; --continue resumes the
// newest resumable one of the same agent there, in a new agent process
// (the built-in agent keeps its sessions on disk, like real agents).
func TestContinueResumesTheWorkspacesLastSession(t *testing.T) {
	ws, other := t.TempDir(), t.TempDir()
	first := jsonResult(t, tai(t, ws, "run", "--approve", "all", "-o", "json", "first turn"))
	if first.Status != "ok" || first.SessionID == "" {
		t.Fatalf("first run: %+v", first)
	}
	// An unrelated workspace's run must not be what --continue finds.
	jsonResult(t, tai(t, other, "run", "--approve", "all", "-o", "json", "elsewhere"))

	o := tai(t, ws, "sessions", "--json")
	var listed []struct {
		SessionID string `json:"session_id"`
		Agent     string `json:"agent"`
		Driver    string `json:"driver"`
		Resumable bool   `json:"resumable"`
		Prompt    string `json:"prompt"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &listed); err != nil || o.code != 0 {
		t.Fatalf("tai sessions --json: exit %d, %v\n%s%s", o.code, err, o.stdout, o.stderr)
	}
	if len(listed) != 1 || listed[0].SessionID != first.SessionID || !listed[0].Resumable ||
		listed[0].Agent != "builtin" || listed[0].Driver != "acp" || listed[0].Prompt != "first turn" {
		t.Fatalf("tai sessions in the workspace: %+v; want only %s", listed, first.SessionID)
	}

	second := jsonResult(t, tai(t, ws, "run", "--continue", "--approve", "all", "-o", "json", "second turn"))
	if second.Status != "ok" || second.SessionID != first.SessionID {
		t.Fatalf("--continue ran session %q (%s: %s); want %q", second.SessionID, second.Status, second.Error, first.SessionID)
	}
	o = tai(t, ws, "sessions", "-q")
	if ids := strings.Fields(o.stdout); len(ids) != 2 || ids[0] != first.SessionID {
		t.Fatalf("tai sessions -q after --continue: %q", o.stdout)
	}
}

func TestContinueWithoutASession(t *testing.T) {
	ws := t.TempDir()
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"nothing to continue", []string{"run", "--continue", "hi"}, 4, "no resumable builtin session"},
		{"another agent's session does not count", []string{"run", "--continue", "--agent", "qwen", "hi"}, 4, "no resumable qwen session"},
		{"with --resume", []string{"run", "--continue", "--resume", "x", "hi"}, 2, "pass one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "another agent's session does not count" {
				jsonResult(t, tai(t, ws, "run", "--approve", "all", "-o", "json", "builtin's"))
			}
			o := tai(t, ws, tc.args...)
			if o.code != tc.code || !strings.Contains(o.stderr, tc.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", o.code, o.stderr, tc.code, tc.stderr)
			}
		})
	}
}
