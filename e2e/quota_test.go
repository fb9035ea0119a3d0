package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/e2e/internal/auditlog"
	"github.com/tai-dev/tai/e2e/internal/build"
)

// parkedResult is the part of the JSON result a parked run adds.
type parkedResult struct {
	Status    string `json:"status"`
	ExitCode  int    `json:"exit_code"`
	SessionID string `json:"session_id"`
	Resumable bool   `json:"resumable"`
	Message   string `json:"message"`
	Parked    *struct {
		Kind     string    `json:"kind"`
		ResetsAt time.Time `json:"resets_at"`
		Source   string    `json:"source"`
		Session  string    `json:"session"`
		Resumes  int       `json:"resumes"`
		Reason   string    `json:"reason"`
		Account  struct {
			Agent string   `json:"agent"`
			ID    string   `json:"id"`
			From  []string `json:"from"`
		} `json:"account"`
	} `json:"parked"`
}

// A turn that ends on the agent's usage limit (the built-in agent fails
// the prompt as claude-agent-acp does) parks the run instead of failing
// it: exit 75, status parked with the reset time, the account (a hash of
// its credentials, never the value) and the session to resume, the same
// in the audit log. --wait-quota (or the policy's quota = "wait") waits
// for the reset, resumes the same session with a continue prompt and goes
// on, within its duration and a number of resumes. Every run has the
// default sandbox, no --dir and a user-like HOME; the resets are in the
// past or hours away, so no test waits on a clock.
func TestUsageLimitParksAndWaitQuotaResumes(t *testing.T) {
	const secret = "sk-ant-quota-test-secret-value"
	past := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	later := time.Now().Add(3 * time.Hour).UTC().Truncate(time.Second)
	tests := []struct {
		name   string
		limit  string // the script's limit step
		flags  []string
		policy string // policy.toml in the user's config directory ("" = none)
		code   int
		status string
		// resumes is the number of quota.resume entries; reason is a part
		// of the parked reason (parked runs).
		resumes int
		reason  string
	}{
		{name: "parks at the limit", limit: `{resets_at: "` + later.Format(time.RFC3339) + `"}`,
			code: 75, status: "parked", reason: "without --wait-quota the run parks: resume it with tai run --resume builtin-"},
		{name: "wait-quota resumes the same session", limit: `{resets_at: "` + past.Format(time.RFC3339) + `", times: 1}`,
			flags: []string{"--wait-quota=1h"}, code: 0, status: "ok", resumes: 1},
		{name: "the policy's quota = wait resumes too", limit: `{resets_at: "` + past.Format(time.RFC3339) + `", times: 1}`,
			policy: "quota = \"wait\"\n", code: 0, status: "ok", resumes: 1},
		{name: "a reset past --wait-quota parks at once", limit: `{resets_at: "` + later.Format(time.RFC3339) + `"}`,
			flags: []string{"--wait-quota=1h"}, code: 75, status: "parked", reason: "past what --wait-quota=1h0m0s leaves"},
		{name: "the resumes run out", limit: `{resets_at: "` + past.Format(time.RFC3339) + `"}`,
			flags: []string{"--wait-quota", "--max-resumes", "2"}, code: 75, status: "parked", resumes: 2, reason: "already resumed 2 time(s)"},
		{name: "quota_resumes bounds the policy's wait", limit: `{resets_at: "` + past.Format(time.RFC3339) + `"}`,
			policy: "quota = \"wait\"\nquota_resumes = 1\n", code: 75, status: "parked", resumes: 1, reason: "already resumed 1 time(s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			ws := filepath.Join(tmp, "work")
			if err := os.Mkdir(ws, 0o700); err != nil {
				t.Fatal(err)
			}
			s := filepath.Join(tmp, "limit.yaml")
			if err := os.WriteFile(s, []byte("steps:\n  - text: \"working \"\n  - limit: "+tt.limit+"\n  - text: done\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			env := append(userEnv(t, tmp), "TAI_BUILTIN_ACCOUNT="+secret)
			if tt.policy != "" {
				// The user's own policy file, where tai looks by default.
				dir := filepath.Join(tmp, "home", ".config", "tai")
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "policy.toml"), []byte(tt.policy), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			auditPath := filepath.Join(tmp, "audit.jsonl")
			args := append([]string{"run", "--agent-cmd", taiBin + " agent builtin --script " + s, "--no-notify", "-o", "json", "--audit", auditPath}, tt.flags...)
			o := build.Run(t, taiBin, ws, env, append(args, "go")...)
			var r parkedResult
			if err := json.Unmarshal([]byte(o.Stdout), &r); err != nil {
				t.Fatalf("exit %d, stdout not JSON (%v):\n%s\n%s", o.Code, err, o.Stdout, o.Stderr)
			}
			if o.Code != tt.code || r.ExitCode != tt.code || r.Status != tt.status {
				t.Fatalf("exit %d, result %d %s; want %d %s\n%s\n%s", o.Code, r.ExitCode, r.Status, tt.code, tt.status, o.Stdout, o.Stderr)
			}
			log, _ := os.ReadFile(auditPath)
			if strings.Contains(o.Stdout, secret) || strings.Contains(string(log), secret) {
				t.Fatal("the credential's value is in the result or the audit log")
			}
			entries := auditlog.Read(t, auditPath)
			if got := count(entries, audit.KindQuotaResume); got != tt.resumes {
				t.Errorf("%d quota.resume entries, want %d", got, tt.resumes)
			}
			// Every prompt went to the one session: the same session resumed.
			for _, e := range entries {
				if e.Kind == audit.KindPrompt && e.Session != r.SessionID {
					t.Errorf("a prompt went to session %s, not %s", e.Session, r.SessionID)
				}
			}
			if tt.status == "ok" {
				if r.Parked != nil || !strings.Contains(r.Message, "done") {
					t.Errorf("the resumed run did not finish its turn: %+v", r)
				}
				if !strings.Contains(string(log), "has reset. Continue the task") {
					t.Error("no continue prompt in the audit log")
				}
				return
			}
			p := r.Parked
			if p == nil {
				t.Fatalf("no parked details: %s", o.Stdout)
			}
			if p.Kind == "" || p.Source != "acp_error" || p.Session != r.SessionID || r.SessionID == "" || !r.Resumable ||
				p.Resumes != tt.resumes || !strings.Contains(p.Reason, tt.reason) {
				t.Errorf("parked = %+v (session %s, resumable %v)", *p, r.SessionID, r.Resumable)
			}
			if want := later; tt.resumes == 0 && !p.ResetsAt.Equal(want) {
				t.Errorf("resets_at = %v, want %v", p.ResetsAt, want)
			}
			if p.Account.Agent != "builtin" || !strings.HasPrefix(p.Account.ID, "sha256:") || strings.Join(p.Account.From, ",") != "$TAI_BUILTIN_ACCOUNT" {
				t.Errorf("account = %+v", p.Account)
			}
			if _, ok := auditlog.First(entries, audit.KindRunParked); !ok {
				t.Error("no run.parked entry in the audit log")
			}
			end, _ := auditlog.First(entries, audit.KindRunEnd)
			if !strings.Contains(string(end.Data), `"status":"parked"`) || !strings.Contains(string(end.Data), `"resets_at"`) {
				t.Errorf("run.end = %s", end.Data)
			}
		})
	}
}

func count(entries []audit.Entry, kind string) int {
	n := 0
	for _, e := range entries {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// A negative --wait-quota or --max-resumes is a usage error (exit 2)
// naming them, before any agent starts. User-like HOME, default sandbox.
func TestWaitQuotaBadValues(t *testing.T) {
	for _, flag := range []string{"--wait-quota=-1h", "--max-resumes=-1"} {
		t.Run(flag, func(t *testing.T) {
			tmp := t.TempDir()
			o := build.Run(t, taiBin, tmp, userEnv(t, tmp), "run", "--agent", "builtin", "--no-notify", flag, "hi")
			if o.Code != 2 || !strings.Contains(o.Stderr, "--wait-quota and --max-resumes must not be negative") {
				t.Fatalf("exit %d\n%s", o.Code, o.Stderr)
			}
		})
	}
}

// tai run --wait-quota when the agent died while the run waited for its
// limit to reset (the built-in agent's limit step with exit: true answers
// the prompt with the limit, then exits): at the reset tai starts the
// agent again and takes its session back with the agent's own resume
// (session/resume), or, when the agent no longer has it (forget: true), a
// new session is given the task and what was done so far (the
// workspace's git diff and new files). The result's resumed and the audit
// log's quota.relaunch say which. Default sandbox, no --dir, a user-like
// HOME; the reset is in the past, so no test waits on a clock.
func TestWaitQuotaRelaunchesAnAgentThatDied(t *testing.T) {
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	tests := []struct {
		name    string
		forget  bool
		resumed string
	}{
		{"its own session back", false, "session/resume"},
		{"a new session told what was done", true, "new_session"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			ws := filepath.Join(tmp, "work")
			if err := os.Mkdir(ws, 0o700); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"init", "-q"}, {"-c", "user.email=t@tai.invalid", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "base"}} {
				cmd := exec.Command("git", args...)
				cmd.Dir = ws
				if b, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, b)
				}
			}
			s := filepath.Join(tmp, "limit.yaml")
			script := fmt.Sprintf("steps:\n  - write: {path: notes.txt, content: \"half done\\n\"}\n  - limit: {resets_at: %q, times: 1, exit: true, forget: %v}\n  - text: done\n", past, tt.forget)
			if err := os.WriteFile(s, []byte(script), 0o600); err != nil {
				t.Fatal(err)
			}
			auditPath := filepath.Join(tmp, "audit.jsonl")
			// --approve all: the agent's write before the limit must land;
			// it is the work a new session is told of.
			o := build.Run(t, taiBin, ws, userEnv(t, tmp), "run", "--agent-cmd", taiBin+" agent builtin --script "+s, "--approve", "all",
				"--no-notify", "-o", "json", "--audit", auditPath, "--wait-quota=1h", "write the notes")
			var r struct {
				parkedResult
				Resumed string `json:"resumed"`
			}
			if err := json.Unmarshal([]byte(o.Stdout), &r); err != nil {
				t.Fatalf("exit %d, stdout not JSON (%v):\n%s\n%s", o.Code, err, o.Stdout, o.Stderr)
			}
			if o.Code != 0 || r.Status != "ok" || !strings.Contains(r.Message, "done") || r.Resumed != tt.resumed {
				t.Fatalf("exit %d, status %s, message %q, resumed %q; want 0 ok done, resumed %s\n%s\n%s", o.Code, r.Status, r.Message, r.Resumed, tt.resumed, o.Stdout, o.Stderr)
			}
			entries := auditlog.Read(t, auditPath)
			if e, ok := auditlog.First(entries, audit.KindQuotaRelaunch); !ok || !strings.Contains(string(e.Data), `"resumed":"`+tt.resumed+`"`) {
				t.Errorf("quota.relaunch entry %s", e.Data)
			}
			if n := count(entries, audit.KindProcessStart); n != 2 {
				t.Errorf("%d process.start entries, want 2 (the agent started again)", n)
			}
			var prompts []audit.Entry
			for _, e := range entries {
				if e.Kind == audit.KindPrompt {
					prompts = append(prompts, e)
				}
			}
			first, last := prompts[0], prompts[len(prompts)-1]
			if last.Session != r.SessionID {
				t.Errorf("the last prompt went to %s, the result names %s", last.Session, r.SessionID)
			}
			if !tt.forget {
				for _, e := range prompts {
					if e.Session != first.Session {
						t.Errorf("a prompt went to session %s, not %s", e.Session, first.Session)
					}
				}
				return
			}
			if last.Session == first.Session || !strings.Contains(string(last.Data), "write the notes") || !strings.Contains(string(last.Data), "notes.txt") {
				t.Errorf("the new session's prompt (session %s, the first's %s): %s", last.Session, first.Session, last.Data)
			}
		})
	}
}
