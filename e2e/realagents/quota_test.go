package realagents

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/e2e/internal/auditlog"
)

// limitCases are the ACP agents at their account's limit: the scripted
// model answers its dialect's 429 until 2099, each agent's own retries run
// out (bounded as its users can bound them), and tai parks the run.
var limitCases = []struct {
	name  string // the subtest's name, when not the agent's
	agent string
	// retryAfter is what the 429s announce, in seconds (0: the time to
	// 2099): short, so that agents that wait what it says give up soon.
	retryAfter int
	// env bounds the agent's own retries where its settings (agents.go,
	// scenario "limit") do not.
	env []string
	// source is the signal tai reads the limit from (result parked.source).
	source string
	// resets: the agent passes the announced reset on, so the result has
	// it (about retryAfter from the run).
	resets bool
	// window makes the 429 a subscription plan's (the model server's
	// limit window): the limit clears until after the run, and the
	// result's reset is that time to the minute, as the agent words it.
	window string
	until  time.Duration
}{
	// claude-agent-acp 0.101: the CLI under it backs off for minutes
	// unless CLAUDE_CODE_MAX_RETRIES bounds it; the adapter then fails
	// session/prompt with errorKind rate_limit and the CLI's text.
	{agent: "claude", env: []string{"CLAUDE_CODE_MAX_RETRIES=0"}, source: "acp_error"},
	// codex-acp 2.6.0 retries the stream 5 times (stream_max_retries),
	// Retry-After apart, then ends the turn (end_turn) with its error as
	// the agent's message.
	{agent: "codex", retryAfter: 1, source: "final_message"},
	// With an hour's Retry-After codex-acp says "Reconnecting... 1/5"
	// (_meta.codex.error, willRetry, httpStatusCode 429) and waits the
	// hour: tai cancels the turn after its grace (30 s) and parks.
	{name: "codex-long-retry-after", agent: "codex", retryAfter: 3600, source: "retry_notice"},
	// gemini-cli 0.61 (general.maxAttempts: 2) fails session/prompt with
	// JSON-RPC code 429 and the API's message, "Suggested retry after 1s."
	{agent: "gemini", retryAfter: 1, source: "acp_error", resets: true},
	// qwen-code 0.24.4 (model.generationConfig.maxRetries: 0) tries 7
	// times, Retry-After apart, then fails session/prompt with code 429.
	{agent: "qwen", retryAfter: 1, source: "acp_error"},
	// opencode 1.18 retries, Retry-After apart, then fails session/prompt
	// with -32603 and the provider's message.
	{agent: "opencode", retryAfter: 1, source: "acp_error"},
	// Copilot CLI 1.0.102 retries 5 times, then ends the turn (end_turn)
	// with "Error: Failed to get response … Last error: 429 …".
	{agent: "copilot", retryAfter: 1, source: "final_message"},
	// With an hour's Retry-After Copilot does not retry: it ends the turn
	// at once with "Error: 429 …".
	{name: "copilot-long-retry-after", agent: "copilot", retryAfter: 3600, source: "final_message"},
	// codex-acp at a ChatGPT plan's limit (usage_limit_reached with
	// resets_at): no retry; session/prompt fails with codex's "You've hit
	// your usage limit … try again at 2:13 PM" (codexErrorInfo
	// usageLimitExceeded).
	{name: "codex-plan", agent: "codex", window: "five_hour", until: 3 * time.Hour, source: "acp_error"},
}

// Every ACP agent at its account's limit parks the run: exit 75, status
// parked, the limit read from what the agent emitted, its account and the
// session kept. Default sandbox, no --dir, the suite's user-like HOME.
// With -update-quota the agent's side of the turn is saved under
// quota/testdata, which quota's fixture test reads.
func TestRealAgentsParkAtLimit(t *testing.T) {
	need(t)
	for _, tc := range limitCases {
		name := tc.name
		if name == "" {
			name = tc.agent
		}
		t.Run(name, func(t *testing.T) {
			var a agent
			for _, x := range agents {
				if x.name == tc.agent {
					a = x
				}
			}
			exe, version := a.installed(t)
			limit := map[string]any{"until": "2099-01-01T00:00:00Z"}
			var until time.Time
			if tc.until > 0 {
				until = time.Now().Add(tc.until).UTC().Truncate(time.Second)
				limit["until"], limit["window"] = until.Format(time.RFC3339), tc.window
			}
			if tc.retryAfter > 0 {
				limit["retry_after"] = tc.retryAfter
			}
			b, _ := json.Marshal(map[string]any{"limit": limit, "turns": []any{map[string]string{"text": scriptedText}}})
			script := filepath.Join(t.TempDir(), "limit.json")
			writeFile(t, script, string(b))
			w := newWorld(t, a, exe, "limit", script)
			w.env = append(w.env, tc.env...)
			start := time.Now()
			o := w.run("-o", "json", "Say hello.")
			if *updateQuota {
				file := a.name + "-" + version + strings.TrimPrefix(name, a.name) + ".jsonl"
				w.writeTrace(filepath.Join("..", "..", "quota", "testdata", file), w.cleanTrace(turnOnly()))
			}
			var res struct {
				Status    string `json:"status"`
				SessionID string `json:"session_id"`
				Error     string `json:"error"`
				Parked    *struct {
					Kind     string    `json:"kind"`
					Source   string    `json:"source"`
					Session  string    `json:"session"`
					ResetsAt time.Time `json:"resets_at"`
					Account  struct {
						Agent string `json:"agent"`
					} `json:"account"`
				} `json:"parked"`
			}
			if err := json.Unmarshal([]byte(o.stdout), &res); err != nil {
				t.Fatalf("exit %d, stdout not JSON: %v\n%s", o.code, err, tail(o.stdout, 2000))
			}
			if o.code != 75 || res.Status != "parked" || res.Parked == nil || res.Parked.Session != res.SessionID || res.SessionID == "" {
				t.Fatalf("exit %d, status %s, error %q, parked %+v; want 75, parked\n%s", o.code, res.Status, res.Error, res.Parked, tail(o.stdout, 1500))
			}
			p := res.Parked
			if p.Source != tc.source || p.Account.Agent != a.name {
				t.Errorf("parked %+v, want it read from %s, for %s's account", *p, tc.source, a.name)
			}
			// The announced reset is retryAfter after the 429, itself
			// between the run's start and now.
			if tc.resets {
				lo, hi := start.Add(time.Duration(tc.retryAfter)*time.Second-time.Second), time.Now().Add(time.Duration(tc.retryAfter)*time.Second+time.Second)
				if p.ResetsAt.Before(lo) || p.ResetsAt.After(hi) {
					t.Errorf("resets_at %v, want the announced %ds after a 429 of the run (%v .. %v)", p.ResetsAt, tc.retryAfter, lo, hi)
				}
			}
			if tc.window != "" && (p.Kind != "usage_limit" || !p.ResetsAt.Equal(until.Truncate(time.Minute))) {
				t.Errorf("parked %s resetting %v; want a usage limit resetting %v, as the agent said", p.Kind, p.ResetsAt, until.Truncate(time.Minute))
			}
			w.checkNoLeftovers()
			t.Logf("%s parked (%s, %s): %s", a.name, p.Kind, p.Source, res.Error)
		})
	}
}

// turnOnly keeps what the agent said from the prompt on: its updates and
// its answer to session/prompt, without the command lists and config
// updates that do not bear on a limit.
func turnOnly() func([]byte) bool {
	prompted := false
	return func(msg []byte) bool {
		if bytes.Contains(msg, []byte(`"method":"session/prompt"`)) {
			prompted = true
		}
		if !prompted {
			return false
		}
		for _, skip := range []string{`"available_commands_update"`, `"config_option_update"`, `"current_mode_update"`, `"method":"session/close"`} {
			if bytes.Contains(msg, []byte(skip)) {
				return false
			}
		}
		return !bytes.Contains(msg, []byte(`"result":{}`))
	}
}

// claude-agent-acp (the claude preset) meets its account's limit and its
// own session goes on after the reset. The model answers Anthropic's 429
// to the turn once (times: 1, so the resume finds it cleared on a machine
// of any speed; tooled: the adapter's title request, sent alongside, is
// not the one refused), its message announcing the reset a few seconds
// away; the
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
	script := `{"limit": {"times": 1, "tooled": true, "retry_after": 3, "message": "Usage limit reached; try again in 3 seconds."}, "turns": [{"text": "` + done + `"}], "default": {"text": "` + done + `"}}`
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

// qwen-code 0.24.4 and opencode 1.18 at a 429 whose Retry-After is an
// hour away: each waits the hour before its next attempt (qwen's 7 and
// opencode's 5 retries each wait what Retry-After says, up to 2^31-1 ms;
// opencode's AI SDK first tries 4 times in seconds), and says nothing over
// ACP meanwhile, so tai cannot see the limit: Ctrl-C ends the run
// interrupted, not parked. The model saw those requests and no more;
// nothing came from the agent between the prompt and the cancel. (qwen's
// settings, scenario "limit", set model.generationConfig.maxRetries: 0,
// which bounds only its rounds of retries after those 7, not this wait.)
// Default sandbox, no --dir, the suite's user-like HOME.
func TestAgentsWaitOutALongRetryAfterSilently(t *testing.T) {
	need(t)
	for _, tc := range []struct {
		agent    string
		requests int // before the wait
	}{{"qwen", 1}, {"opencode", 4}} {
		t.Run(tc.agent, func(t *testing.T) {
			var a agent
			for _, x := range agents {
				if x.name == tc.agent {
					a = x
				}
			}
			exe, _ := a.installed(t)
			script := filepath.Join(t.TempDir(), "limit.json")
			writeFile(t, script, `{"limit": {"until": "2099-01-01T00:00:00Z", "retry_after": 3600}, "turns": [{"text": "`+scriptedText+`"}]}`)
			w := newWorld(t, a, exe, "limit", script)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd, out, errb := w.command(ctx, "-o", "json", "Say hello.")
			if err := cmd.Start(); err != nil {
				t.Fatalf("starting tai: %v", err)
			}
			exited := make(chan struct{})
			var waitErr error
			go func() { waitErr = cmd.Wait(); close(exited) }()
			if !waitFor(exited, func() bool { return len(w.modelLog()) >= tc.requests }) {
				_ = cmd.Process.Kill()
				<-exited
				w.finish(waitErr, out, errb)
				t.Fatalf("%s never made %d requests", a.name, tc.requests)
			}
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatalf("SIGINT: %v", err)
			}
			<-exited
			o := w.finish(waitErr, out, errb)
			r := w.jsonResult(o)
			if o.code != 130 || r.Status != "interrupted" {
				t.Fatalf("exit %d, status %s, error %q; want 130 interrupted (%s gave up on its own?)", o.code, r.Status, r.Error, a.name)
			}
			if n := len(w.modelLog()); n != tc.requests {
				t.Errorf("the model saw %d requests, want %d: %s waits the announced hour before its next", n, tc.requests, a.name)
			}
			// Nothing from the agent between the prompt and tai's cancel
			// but its list of commands.
			prompted := false
			for _, line := range strings.Split(readFile(t, w.trace), "\n") {
				switch {
				case strings.Contains(line, `"method":"session/prompt"`):
					prompted = true
				case strings.Contains(line, `"method":"session/cancel"`):
					prompted = false
				case prompted && strings.Contains(line, `"dir":"in"`) && !strings.Contains(line, `"available_commands_update"`):
					t.Errorf("%s said something while it waited: %.300s", a.name, line)
				}
			}
			w.checkNoLeftovers()
		})
	}
}
