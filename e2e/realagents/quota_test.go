package realagents

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/e2e/internal/auditlog"
)

// claude-agent-acp at its account's limit: the scripted model answers
// Anthropic's 429 rate_limit_error until 2099; with
// CLAUDE_CODE_MAX_RETRIES=0 (so that the CLI under the adapter does not
// back off for minutes) the adapter fails session/prompt with its
// JSON-RPC error, and tai parks the run (exit 75) with the session kept.
// Default sandbox, no --dir, the suite's user-like HOME.
func TestRealAgentParksAtLimit(t *testing.T) {
	need(t)
	var a agent
	for _, x := range agents {
		if x.name == "claude" {
			a = x
		}
	}
	exe, _ := a.installed(t)
	script := filepath.Join(t.TempDir(), "limit.json")
	writeFile(t, script, `{"limit": {"until": "2099-01-01T00:00:00Z"}, "turns": [{"text": "`+scriptedText+`"}]}`)
	w := newWorld(t, a, exe, "limit", script)
	w.env = append(w.env, "CLAUDE_CODE_MAX_RETRIES=0")
	o := w.run("-o", "json", "Say hello.")
	var res struct {
		Status    string `json:"status"`
		SessionID string `json:"session_id"`
		Error     string `json:"error"`
		Parked    *struct {
			Source  string `json:"source"`
			Session string `json:"session"`
			Account struct {
				Agent string `json:"agent"`
			} `json:"account"`
		} `json:"parked"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &res); err != nil {
		t.Fatalf("exit %d, stdout not JSON: %v\n%s", o.code, err, tail(o.stdout, 2000))
	}
	if o.code != 75 || res.Status != "parked" || res.Parked == nil || res.Parked.Session != res.SessionID || res.SessionID == "" {
		t.Fatalf("exit %d, status %s, error %q, parked %+v; want 75, parked", o.code, res.Status, res.Error, res.Parked)
	}
	if res.Parked.Source != "acp_error" || res.Parked.Account.Agent != "claude" {
		t.Errorf("parked %+v, want it read from the adapter's error, for claude's account", *res.Parked)
	}
	t.Logf("error: %s", res.Error)
}

// claude-agent-acp (the claude preset) meets its account's limit and its
// own session goes on after the reset. The model answers Anthropic's 429
// once (times: 1, so the resume finds it cleared on a machine of any
// speed), its message announcing the reset a few seconds away; the
// adapter fails session/prompt with it (CLAUDE_CODE_MAX_RETRIES=0: the CLI
// under it does not back off on its own). With --wait-quota tai waits for
// the reset and sends the continue prompt to the same session; without it
// the run parks (exit 75) and tai run --resume SESSION in a new process
// loads that session (session/load or session/resume) and finishes.
// Default sandbox, no --dir, the suite's user-like HOME.
func TestRealAgentResumesAfterLimit(t *testing.T) {
	need(t)
	if !hasAudit {
		t.Skip("this tai has no --audit")
	}
	var a agent
	for _, x := range agents {
		if x.name == "claude" {
			a = x
		}
	}
	exe, _ := a.installed(t)
	const done = "Resumed and finished."
	script := `{"limit": {"times": 1, "retry_after": 3, "message": "Usage limit reached; try again in 3 seconds."}, "turns": [{"text": "` + done + `"}], "default": {"text": "` + done + `"}}`
	type res struct {
		Status    string `json:"status"`
		SessionID string `json:"session_id"`
		Message   string `json:"message"`
		Error     string `json:"error"`
	}
	decode := func(t *testing.T, o outcome) res {
		t.Helper()
		var r res
		if err := json.Unmarshal([]byte(o.stdout), &r); err != nil {
			t.Fatalf("exit %d, stdout not JSON: %v\n%s", o.code, err, tail(o.stdout, 2000))
		}
		return r
	}
	t.Run("wait-quota", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "limit.json")
		writeFile(t, path, script)
		w := newWorld(t, a, exe, "limit", path)
		w.env = append(w.env, "CLAUDE_CODE_MAX_RETRIES=0")
		o := w.run("--wait-quota=1h", "-o", "json", "Say hello.")
		r := decode(t, o)
		if o.code != 0 || r.Status != "ok" || !strings.Contains(r.Message, done) {
			t.Fatalf("exit %d status %q message %q error %q; want 0 ok %q", o.code, r.Status, r.Message, r.Error, done)
		}
		entries := auditlog.Read(t, w.audit)
		promptsTo(t, entries, r.SessionID, 2)
		for _, k := range []string{audit.KindQuotaWait, audit.KindQuotaResume} {
			if _, ok := auditlog.First(entries, k); !ok {
				t.Errorf("no %s entry in the audit log", k)
			}
		}
		// It waited for the reset the agent announced, not a backoff.
		if e, _ := auditlog.First(entries, audit.KindQuotaWait); !strings.Contains(string(e.Data), `"resets_at"`) {
			t.Errorf("quota.wait %s has no announced reset", e.Data)
		}
	})
	t.Run("park-then-resume", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "limit.json")
		writeFile(t, path, script)
		w := newWorld(t, a, exe, "limit", path)
		w.env = append(w.env, "CLAUDE_CODE_MAX_RETRIES=0")
		o := w.run("-o", "json", "Say hello.")
		first := decode(t, o)
		if o.code != 75 || first.Status != "parked" || first.SessionID == "" {
			t.Fatalf("exit %d status %q session %q error %q; want 75 parked", o.code, first.Status, first.SessionID, first.Error)
		}
		o = w.run("--resume", first.SessionID, "-o", "json", "continue")
		second := decode(t, o)
		if o.code != 0 || second.Status != "ok" || second.SessionID != first.SessionID || !strings.Contains(second.Message, done) {
			t.Fatalf("resumed: exit %d status %q session %q message %q error %q; want 0 ok in %s", o.code, second.Status, second.SessionID, second.Message, second.Error, first.SessionID)
		}
		promptsTo(t, auditlog.Read(t, w.audit), first.SessionID, 2)
		if n := strings.Count(readFile(t, w.trace), `"method":"session/load"`) + strings.Count(readFile(t, w.trace), `"method":"session/resume"`); n != 1 {
			t.Errorf("%d session/load or session/resume calls, want 1", n)
		}
	})
}

// promptsTo: the log has n prompts, every one to session.
func promptsTo(t *testing.T, entries []audit.Entry, session string, n int) {
	t.Helper()
	got := 0
	for _, e := range entries {
		if e.Kind != audit.KindPrompt {
			continue
		}
		got++
		if e.Session != session {
			t.Errorf("a prompt went to session %s, not %s", e.Session, session)
		}
	}
	if got != n {
		t.Errorf("%d prompts in the audit log, want %d", got, n)
	}
}
