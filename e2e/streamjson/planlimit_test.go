package streamjson

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestClaudePlanUsageLimit: a Claude plan's account (an OAuth token, not
// an API key) at its 5-hour window. The model server answers with the
// unified limiter's 429 (window five_hour), from which the real claude CLI
// makes its own rejected rate_limit_event and its "You've hit your 5-hour
// limit · resets ..." result, as a subscriber sees it. tai parks the run
// as a usage limit with the reset the limiter announced, for the account
// of the OAuth token (hashed), and the session to resume. Default
// sandbox, no --dir, a user-like HOME; CLAUDE_CODE_MAX_RETRIES=0 so that
// the CLI does not back off for minutes first.
func TestClaudePlanUsageLimit(t *testing.T) {
	exe := claudeExe(t)
	until := time.Now().Add(3 * time.Hour).UTC().Truncate(time.Second)
	w := newWorld(t, fmt.Sprintf(`{"limit":{"until":%q,"window":"five_hour"},"turns":[{"text":"never"}]}`, until.Format(time.RFC3339)))
	w.claudeEnv()
	env := w.env[:0]
	for _, e := range w.env {
		if !strings.HasPrefix(e, "ANTHROPIC_API_KEY=") { // a subscriber has no API key
			env = append(env, e)
		}
	}
	w.env = append(env, "CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-plan-test", "CLAUDE_CODE_MAX_RETRIES=0")
	o := w.run(append(claudeArgs(exe), "--output", "json", "hit the limit")...)
	var r struct {
		Status    string `json:"status"`
		ExitCode  int    `json:"exit_code"`
		SessionID string `json:"session_id"`
		Parked    *struct {
			Kind     string    `json:"kind"`
			ResetsAt time.Time `json:"resets_at"`
			Source   string    `json:"source"`
			Message  string    `json:"message"`
			Session  string    `json:"session"`
			Account  struct {
				Agent string   `json:"agent"`
				ID    string   `json:"id"`
				From  []string `json:"from"`
			} `json:"account"`
		} `json:"parked"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &r); err != nil {
		t.Fatalf("exit %d, stdout not JSON (%v):\n%s", o.code, err, tailStr(o.stdout, 3000))
	}
	if o.code != 75 || r.Status != "parked" || r.Parked == nil {
		t.Fatalf("exit %d, status %q; want 75, parked\n%s", o.code, r.Status, tailStr(o.stdout, 3000))
	}
	p := r.Parked
	if p.Kind != "usage_limit" || p.Source != "rate_limit_event" || !p.ResetsAt.Equal(until) {
		t.Errorf("parked %s from %s resetting %v; want usage_limit from the CLI's rate_limit_event resetting %v", p.Kind, p.Source, p.ResetsAt, until)
	}
	if !strings.Contains(p.Message, "You've hit your 5-hour limit") {
		t.Errorf("message %q, want the CLI's own words", p.Message)
	}
	if p.Session != r.SessionID || r.SessionID == "" {
		t.Errorf("parked session %q, run's %q", p.Session, r.SessionID)
	}
	if p.Account.Agent != "claude" || !strings.HasPrefix(p.Account.ID, "sha256:") || strings.Join(p.Account.From, ",") != "$CLAUDE_CODE_OAUTH_TOKEN" {
		t.Errorf("account %+v, want claude's, from its OAuth token", p.Account)
	}
	if strings.Contains(o.stdout, "plan-test") {
		t.Error("the token's value is in the result")
	}
}
