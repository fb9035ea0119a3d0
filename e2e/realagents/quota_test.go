package realagents

import (
	"encoding/json"
	"path/filepath"
	"testing"
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
