package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/e2e/internal/auditlog"
	"github.com/tai-dev/tai/e2e/internal/build"
)

// Some agents end the turn normally once their retries of a 429 ran out,
// with their report of it as the whole message (codex-acp 2.6.0, Copilot
// CLI 1.0.102; quota/testdata has their real transcripts): tai parks the
// run as at any limit. A model's answer that only talks about 429s is an
// answer. The built-in agent says each text and ends its turn; default
// sandbox, no --dir, a user-like HOME.
func TestAgentsLimitReportParks(t *testing.T) {
	tests := []struct {
		name, text string
		code       int
		status     string
	}{
		{"codex's report", "exceeded retry limit, last status: 429 Too Many Requests", 75, "parked"},
		{"copilot's report", "Error: Failed to get response from the AI model; retried 5 times (total retry wait time: 5.43 seconds) Last error: 429 Rate limit exceeded.", 75, "parked"},
		{"an answer about 429", "HTTP 429 Too Many Requests means a rate limit: back off and retry.", 0, "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			ws := filepath.Join(tmp, "work")
			if err := os.Mkdir(ws, 0o700); err != nil {
				t.Fatal(err)
			}
			text, _ := json.Marshal(tt.text)
			s := filepath.Join(tmp, "report.yaml")
			if err := os.WriteFile(s, []byte("steps:\n  - text: "+string(text)+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			auditPath := filepath.Join(tmp, "audit.jsonl")
			o := build.Run(t, taiBin, ws, userEnv(t, tmp),
				"run", "--agent-cmd", taiBin+" agent builtin --script "+s, "--no-notify", "-o", "json", "--audit", auditPath, "go")
			var r parkedResult
			if err := json.Unmarshal([]byte(o.Stdout), &r); err != nil {
				t.Fatalf("exit %d, stdout not JSON (%v):\n%s\n%s", o.Code, err, o.Stdout, o.Stderr)
			}
			if o.Code != tt.code || r.Status != tt.status {
				t.Fatalf("exit %d, status %s; want %d %s\n%s", o.Code, r.Status, tt.code, tt.status, o.Stdout)
			}
			_, parked := auditlog.First(auditlog.Read(t, auditPath), audit.KindRunParked)
			if tt.status != "parked" {
				if r.Parked != nil || parked {
					t.Errorf("an answer parked the run: %+v", r.Parked)
				}
				return
			}
			if p := r.Parked; p == nil || p.Source != "final_message" || p.Kind != "rate_limit" || p.Session != r.SessionID || r.SessionID == "" {
				t.Errorf("parked = %+v, want a rate_limit read from the final message, session %s", p, r.SessionID)
			}
			if !parked {
				t.Error("no run.parked entry in the audit log")
			}
		})
	}
}

// An agent that says it retries a request refused at a 429 and then
// waits in silence (codex-acp 2.6.0 waits what the 429's Retry-After
// announced, hours at a usage limit; the built-in agent sends codex's
// notice and waits an hour) is cancelled after tai's grace (30 s) and the
// run parks, its session kept. Default sandbox, no --dir, a user-like
// HOME; the test takes the grace, the agent would take the hour.
func TestAgentRetryingALimitInSilenceParks(t *testing.T) {
	tmp := t.TempDir()
	ws := filepath.Join(tmp, "work")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	s := filepath.Join(tmp, "retry.yaml")
	script := `steps:
  - extension: {update: {sessionUpdate: session_info_update, _meta: {codex: {error: {message: "Reconnecting... 1/5", codexErrorInfo: {responseStreamDisconnected: {httpStatusCode: 429}}, additionalDetails: "exceeded retry limit, last status: 429 Too Many Requests", willRetry: true}}}}}
  - delay: 3600
`
	if err := os.WriteFile(s, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	auditPath := filepath.Join(tmp, "audit.jsonl")
	o := build.Run(t, taiBin, ws, userEnv(t, tmp),
		"run", "--agent-cmd", taiBin+" agent builtin --script "+s, "--no-notify", "-o", "json", "--audit", auditPath, "go")
	var r parkedResult
	if err := json.Unmarshal([]byte(o.Stdout), &r); err != nil {
		t.Fatalf("exit %d, stdout not JSON (%v):\n%s\n%s", o.Code, err, o.Stdout, o.Stderr)
	}
	if o.Code != 75 || r.Status != "parked" || r.Parked == nil || r.Parked.Source != "retry_notice" || r.Parked.Session != r.SessionID || r.SessionID == "" {
		t.Fatalf("exit %d, status %s, parked %+v; want 75, parked from the retry notice\n%s", o.Code, r.Status, r.Parked, o.Stdout)
	}
	if _, ok := auditlog.First(auditlog.Read(t, auditPath), audit.KindRunParked); !ok {
		t.Error("no run.parked entry in the audit log")
	}
}
