package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/policy"
)

// At a usage limit the run waits on the injected clock for as long as the
// agent said (or backs off when it did not), then resumes the same
// session; no real time passes.
func TestQuotaWaitsOnTheClockThenResumes(t *testing.T) {
	start := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name, limit string
		wait        time.Duration
	}{
		{"reset given", `{resets_at: "2026-12-07T12:00:00Z", times: 1}`, 2 * time.Hour},
		{"no reset: backoff", `{message: "Rate limit reached", times: 1}`, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			clk := quartz.NewMock(t)
			clk.Set(start).MustWait(ctx)
			trap := clk.Trap().NewTimer("runner", "quota-wait")
			defer trap.Close()
			argv, env := agent(t, "steps:\n  - limit: "+tt.limit+"\n  - text: done\n")
			type out struct {
				res Result
				err error
			}
			done := make(chan out, 1)
			go func() {
				res, err := Run(context.Background(), Options{
					Agent: "limited", Argv: argv, Env: env, Cwd: t.TempDir(),
					Prompt:  []driver.Content{driver.TextContent("go")},
					Decider: policy.New(policy.ApproveAll, policy.NonInteractiveDeny, nil),
					Clock:   clk, LateWindow: time.Hour,
					Quota: QuotaOptions{Wait: 3 * time.Hour},
				})
				done <- out{res, err}
			}()
			call := trap.MustWait(ctx)
			if call.Duration != tt.wait {
				t.Errorf("waits %s, want %s", call.Duration, tt.wait)
			}
			call.MustRelease(ctx)
			clk.Advance(tt.wait).MustWait(ctx)
			o := <-done
			if o.err != nil || o.res.Status != "ok" || o.res.Message != "done" || o.res.Parked != nil {
				t.Fatalf("result %+v err %v", o.res, o.err)
			}
		})
	}
}

// An agent that dies while the run waits for its limit to reset is
// started again at the reset: it takes its session back with its own
// resume (the built-in agent's session/resume) when it still has it, else
// a new session is told the task and what was done so far (the
// workspace's diff and new files). The result and the audit log say
// which. The wait is on the injected clock: no real time passes.
func TestQuotaRelaunchesAnAgentThatDied(t *testing.T) {
	start := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		forget bool // the agent loses the session as it exits
		want   Resumed
	}{
		{"its own session back", false, ResumedResume},
		{"a new session told what was done", true, ResumedNewSession},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			clk := quartz.NewMock(t)
			clk.Set(start).MustWait(ctx)
			trap := clk.Trap().NewTimer("runner", "quota-wait")
			defer trap.Close()
			ws := gitRepo(t)
			limit := fmt.Sprintf(`{resets_at: "2026-12-07T11:00:00Z", times: 1, exit: true, forget: %v}`, tt.forget)
			argv, env := agent(t, "steps:\n  - write: {path: notes.txt, content: \"half done\\n\"}\n  - limit: "+limit+"\n  - text: done\n")
			env = append(env, "TAI_RUNNER_STATE="+t.TempDir())
			logPath := filepath.Join(t.TempDir(), "audit.jsonl")
			log, err := audit.Open(logPath, audit.Options{Run: "r"})
			if err != nil {
				t.Fatal(err)
			}
			type out struct {
				res Result
				err error
			}
			done := make(chan out, 1)
			go func() {
				res, err := Run(context.Background(), Options{
					Agent: "limited", Argv: argv, Env: env, Cwd: ws,
					Prompt:  []driver.Content{driver.TextContent("write the notes")},
					Decider: policy.New(policy.ApproveAll, policy.NonInteractiveDeny, nil),
					Clock:   clk, LateWindow: time.Hour, Audit: log,
					Quota: QuotaOptions{Wait: 3 * time.Hour},
				})
				done <- out{res, err}
			}()
			call := trap.MustWait(ctx)
			if call.Duration != time.Hour {
				t.Errorf("waits %s, want 1h", call.Duration)
			}
			call.MustRelease(ctx)
			clk.Advance(time.Hour).MustWait(ctx)
			o := <-done
			_ = log.Close()
			if o.err != nil || o.res.Status != "ok" || o.res.Message != "done" || o.res.Resumed != tt.want {
				t.Fatalf("result %+v err %v; want ok, done, resumed %s", o.res, o.err, tt.want)
			}
			entries := readAudit(t, logPath)
			relaunch, ok := firstOf(entries, audit.KindQuotaRelaunch)
			if !ok || !strings.Contains(string(relaunch.Data), `"resumed":"`+string(tt.want)+`"`) {
				t.Fatalf("quota.relaunch entry %s", relaunch.Data)
			}
			var prompts []audit.Entry
			for _, e := range entries {
				if e.Kind == audit.KindPrompt {
					prompts = append(prompts, e)
				}
			}
			first, last := prompts[0], prompts[len(prompts)-1]
			if tt.forget {
				// A new session, given the task and the new file.
				if last.Session == first.Session || last.Session != o.res.SessionID ||
					!strings.Contains(string(last.Data), "write the notes") || !strings.Contains(string(last.Data), "notes.txt") {
					t.Errorf("the new session's prompt %s (session %s, first %s)", last.Data, last.Session, first.Session)
				}
				return
			}
			// Every prompt to the one session, the last the continue prompt.
			for _, e := range prompts {
				if e.Session != first.Session || o.res.SessionID != first.Session {
					t.Errorf("a prompt went to %s, not %s", e.Session, first.Session)
				}
			}
			if !strings.Contains(string(last.Data), "has reset. Continue") {
				t.Errorf("last prompt %s, want the continue prompt", last.Data)
			}
		})
	}
}

// gitRepo is a git work tree with one commit.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.email=t@tai.invalid", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "base"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, b)
		}
	}
	return dir
}

func readAudit(t *testing.T, path string) []audit.Entry {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []audit.Entry
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e audit.Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}

func firstOf(entries []audit.Entry, kind string) (audit.Entry, bool) {
	for _, e := range entries {
		if e.Kind == kind {
			return e, true
		}
	}
	return audit.Entry{}, false
}

// An agent that says it retries a request refused at a 429 and then waits
// in silence (codex-acp 2.6.0 waits what Retry-After announced: hours at a
// usage limit) is cancelled after the grace on the injected clock and the
// run parks; one that goes on after its notice is left alone. No real
// time passes: the agent's wait is an hour, cancelled by tai.
func TestRetryNoticeParksAfterTheGrace(t *testing.T) {
	const notice = `  - extension: {update: {sessionUpdate: session_info_update, _meta: {codex: {error: {message: "Reconnecting... 1/5", codexErrorInfo: {responseStreamDisconnected: {httpStatusCode: 429}}, additionalDetails: "exceeded retry limit, last status: 429 Too Many Requests", willRetry: true}}}}}
`
	tests := []struct {
		name, steps string
		parks       bool
	}{
		{"silent after the notice", notice + "  - delay: 3600\n", true},
		{"goes on after the notice", notice + "  - text: recovered\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			clk := quartz.NewMock(t)
			argv, env := agent(t, "steps:\n"+tt.steps)
			if !tt.parks {
				// The notice and the turn's end may reach the runner in
				// either order: the grace may start or not, and never ends.
				o, err := Run(ctx, Options{
					Agent: "retrying", Argv: argv, Env: env, Cwd: t.TempDir(),
					Prompt:  []driver.Content{driver.TextContent("go")},
					Decider: policy.New(policy.ApproveAll, policy.NonInteractiveDeny, nil),
					Clock:   clk, LateWindow: time.Millisecond,
				})
				if err != nil || o.Status != "ok" || o.Message != "recovered" {
					t.Fatalf("result %+v err %v; want ok", o, err)
				}
				return
			}
			trap := clk.Trap().NewTimer("runner", "quota-retry-grace")
			defer trap.Close()
			type out struct {
				res Result
				err error
			}
			done := make(chan out, 1)
			go func() {
				res, err := Run(context.Background(), Options{
					Agent: "retrying", Argv: argv, Env: env, Cwd: t.TempDir(),
					Prompt:  []driver.Content{driver.TextContent("go")},
					Decider: policy.New(policy.ApproveAll, policy.NonInteractiveDeny, nil),
					Clock:   clk, LateWindow: time.Millisecond,
				})
				done <- out{res, err}
			}()
			call := trap.MustWait(ctx)
			if call.Duration != DefaultRetryGrace {
				t.Errorf("grace %s, want %s", call.Duration, DefaultRetryGrace)
			}
			call.MustRelease(ctx)
			clk.Advance(DefaultRetryGrace).MustWait(ctx)
			o := <-done
			if o.res.Status != "parked" || o.res.Parked == nil || o.res.Parked.Source != "retry_notice" || o.res.Parked.Kind != "rate_limit" {
				t.Fatalf("result %+v parked %+v err %v; want parked from the retry notice", o.res, o.res.Parked, o.err)
			}
		})
	}
}
