package realagents

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// claude-agent-acp for a Claude plan's account (an OAuth token, no API
// key) at its 5-hour window: the model server's 429 is the unified
// limiter's (window five_hour), the CLI under the adapter says "You've hit
// your 5-hour limit · resets 1:31pm (UTC)" and the adapter fails
// session/prompt with it (errorKind rate_limit). tai parks the run as a
// usage limit resetting at that minute, for the token's account. Default
// sandbox, no --dir, the suite's user-like HOME; CLAUDE_CODE_MAX_RETRIES=0
// so that the CLI does not back off for minutes first.
func TestRealAgentParksAtPlanLimit(t *testing.T) {
	need(t)
	var a agent
	for _, x := range agents {
		if x.name == "claude" {
			a = x
		}
	}
	exe, _ := a.installed(t)
	until := time.Now().Add(3 * time.Hour).UTC().Truncate(time.Second)
	script := filepath.Join(t.TempDir(), "limit.json")
	writeFile(t, script, fmt.Sprintf(`{"limit": {"until": %q, "window": "five_hour"}, "turns": [{"text": "`+scriptedText+`"}]}`, until.Format(time.RFC3339)))
	w := newWorld(t, a, exe, "plan-limit", script)
	env := w.env[:0]
	for _, e := range w.env {
		if !strings.HasPrefix(e, "ANTHROPIC_API_KEY=") { // a subscriber has no API key
			env = append(env, e)
		}
	}
	w.env = append(env, "CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-plan-test", "CLAUDE_CODE_MAX_RETRIES=0")
	o := w.run("-o", "json", "Say hello.")
	var res struct {
		Status    string `json:"status"`
		SessionID string `json:"session_id"`
		Parked    *struct {
			Kind     string    `json:"kind"`
			ResetsAt time.Time `json:"resets_at"`
			Source   string    `json:"source"`
			Session  string    `json:"session"`
			Account  struct {
				Agent string   `json:"agent"`
				From  []string `json:"from"`
			} `json:"account"`
		} `json:"parked"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &res); err != nil {
		t.Fatalf("exit %d, stdout not JSON: %v\n%s", o.code, err, tail(o.stdout, 2000))
	}
	if o.code != 75 || res.Status != "parked" || res.Parked == nil || res.Parked.Session != res.SessionID || res.SessionID == "" {
		t.Fatalf("exit %d, status %s, parked %+v; want 75, parked\n%s", o.code, res.Status, res.Parked, tail(o.stdout, 2000))
	}
	p := res.Parked
	// The adapter passes on the CLI's words, which name the minute.
	if p.Kind != "usage_limit" || p.Source != "acp_error" || !p.ResetsAt.Equal(until.Truncate(time.Minute)) {
		t.Errorf("parked %s from %s resetting %v; want usage_limit from the adapter's error resetting %v", p.Kind, p.Source, p.ResetsAt, until.Truncate(time.Minute))
	}
	if p.Account.Agent != "claude" || strings.Join(p.Account.From, ",") != "$CLAUDE_CODE_OAUTH_TOKEN" {
		t.Errorf("account %+v, want claude's, from its OAuth token", p.Account)
	}
}
