package streamjson

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/e2e/internal/auditlog"
)

// limitOnce is a script whose account is at its limit for one request:
// the model answers Anthropic's 429 rate_limit_error, whose message
// announces the reset a few seconds away (the claude CLI passes the API's
// message on, not its reset headers, with an API key), and clears after
// that one refusal of a turn (times: 1, no until; tooled: a side request
// such as a title is not the one refused), so the resume finds it cleared
// on a machine of any speed.
func limitOnce(text string) string {
	return `{"limit":{"times":1,"tooled":true,"retry_after":3,"message":"Usage limit reached; try again in 3 seconds."},"turns":[{"text":"` + text + `"}],"default":{"text":"` + text + `"}}`
}

// TestClaudeUsageLimitResumes: the claude CLI over stream-json meets its
// account's limit (CLAUDE_CODE_MAX_RETRIES=0: the CLI does not back off on
// its own) and its own session goes on after the reset. With --wait-quota
// tai waits for the announced reset and sends the continue prompt to the
// same session in the same process; without it the run parks (exit 75) and
// tai run --resume SESSION in a new process continues that session with the
// CLI's own --resume. Default sandbox, no --dir, a user-like HOME.
func TestClaudeUsageLimitResumes(t *testing.T) {
	exe := claudeExe(t)
	const done = "Resumed and finished."
	t.Run("wait-quota", func(t *testing.T) {
		w := newWorld(t, limitOnce(done))
		w.claudeEnv()
		w.env = append(w.env, "CLAUDE_CODE_MAX_RETRIES=0")
		w.audit = filepath.Join(w.dir, "audit.jsonl")
		o := w.run(append(claudeArgs(exe), "--wait-quota=1h", "--output", "json", "hit the limit")...)
		r := w.result(o)
		if o.code != 0 || r.Status != "ok" || !strings.Contains(r.Message, done) {
			t.Fatalf("exit %d status %q message %q error %q; want 0 ok %q", o.code, r.Status, r.Message, r.Error, done)
		}
		entries := auditlog.Read(t, w.audit)
		checkOneSession(t, entries, r.SessionID, 2)
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
		w := newWorld(t, limitOnce(done))
		w.claudeEnv()
		w.env = append(w.env, "CLAUDE_CODE_MAX_RETRIES=0")
		w.audit = filepath.Join(w.dir, "audit.jsonl")
		o := w.run(append(claudeArgs(exe), "--output", "json", "hit the limit")...)
		first := w.result(o)
		if o.code != 75 || first.Status != "parked" || first.SessionID == "" {
			t.Fatalf("exit %d status %q session %q error %q; want 75 parked", o.code, first.Status, first.SessionID, first.Error)
		}
		o = w.run(append(claudeArgs(exe), "--resume", first.SessionID, "--output", "json", "continue")...)
		second := w.result(o)
		if o.code != 0 || second.Status != "ok" || second.SessionID != first.SessionID || !strings.Contains(second.Message, done) {
			t.Fatalf("resumed: exit %d status %q session %q message %q error %q; want 0 ok in %s", o.code, second.Status, second.SessionID, second.Message, second.Error, first.SessionID)
		}
		entries := auditlog.Read(t, w.audit)
		checkOneSession(t, entries, first.SessionID, 2)
		// The second process resumed the CLI's own session: --resume
		// SESSION, in the command the audit log says was started.
		var starts []string
		for _, e := range entries {
			if e.Kind == audit.KindProcessStart {
				var p audit.Process
				if err := json.Unmarshal(e.Data, &p); err != nil {
					t.Fatal(err)
				}
				starts = append(starts, strings.Join(p.Args, " "))
			}
		}
		if len(starts) != 2 || strings.Contains(starts[0], "--resume") || !strings.Contains(starts[1], "--resume "+first.SessionID) {
			t.Errorf("the processes started: %q; want the second with --resume %s", starts, first.SessionID)
		}
	})
}

// checkOneSession: the log has n prompts, every one to session.
func checkOneSession(t *testing.T, entries []audit.Entry, session string, n int) {
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
