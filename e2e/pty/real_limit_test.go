package pty

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/driver/pty"
	"github.com/tai-dev/tai/e2e/internal/auditlog"
)

// The Claude Code TUI on the PTY driver at its account's limit, as a user
// runs it: the preset's own package (claude on PATH, no --agent-cmd), the
// default sandbox, no --dir, the throw-away user-like HOME. The model
// server answers Anthropic's 429 rate_limit_error; with
// CLAUDE_CODE_MAX_RETRIES=0 the TUI does not back off by itself and shows
// "● API Error: Request rejected (429) · <message>" as the turn's last
// row, which the profile reads as the limit. Without --wait-quota the run
// parks (exit 75) with the reset, the account and the session; with it,
// tai waits for the reset the message names ("try again in 2s"), types
// the continue prompt into the same live TUI, and the turn finishes.
//
// The GitHub Copilot TUI retries the 429 five times by itself, then shows
// "✗ Failed to get response from the AI model; … Last error: 429 …": it
// parks too.
func TestRealTUILimit(t *testing.T) {
	for _, tc := range []struct {
		agent        string
		name, script string
		args         []string
		code         int
		status       string
		message      string
		resumes      int
		// plan: a Claude plan's account (an OAuth token, no API key) at its
		// 5-hour window (the model server's unified limiter headers):
		// "⎿ You've hit your 5-hour limit · resets 11:11am (UTC)", and
		// Claude's own offer to continue at the reset, which tai cancels
		// (Esc) so that only the run resumes, within its bounds.
		plan bool
		kind string
	}{
		{agent: "claude", name: "parks", script: "limit-park.json", code: 75, status: "parked", kind: "rate_limit"},
		{agent: "claude", name: "plan parks", script: "limit-plan-park.json", code: 75, status: "parked", plan: true, kind: "usage_limit"},
		{agent: "claude", name: "plan wait-quota resumes, not claude itself", script: "limit-plan-resume.json", args: []string{"--wait-quota=10m"},
			status: "ok", message: "Hello from the scripted model.", resumes: 1, plan: true},
		{agent: "claude", name: "wait-quota resumes the live session", script: "limit-resume.json", args: []string{"--wait-quota=10m"}, status: "ok",
			message: "Hello from the scripted model.", resumes: 1},
		{agent: "copilot", name: "parks", script: "limit-park.json", code: 75, status: "parked", kind: "rate_limit"},
		// The codex TUI as its preset starts it (codex on PATH).
		{agent: "codex", name: "parks", script: "limit-park-short.json", code: 75, status: "parked", kind: "rate_limit"},
	} {
		t.Run(tc.agent+" "+tc.name, func(t *testing.T) {
			a := realAgents[tc.agent]
			st := a.start(t, "../../../e2e/pty/testdata/"+tc.script)
			env := onPath(st.Env, filepath.Dir(st.Exe))
			if tc.plan {
				env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "ANTHROPIC_API_KEY=") })
				env = append(env, "CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-plan-test")
			}
			auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
			// The TUI's output, to see what it drew after the limit.
			recPath := filepath.Join(t.TempDir(), "tui.rec")
			env = append(env, "TAI_PTY_RECORD="+recPath)
			// --allow other: the TUI's trust dialog for the throw-away
			// repo is a tool call of kind other; the outcome is the limit's.
			args := append([]string{"run", "--agent", tc.agent, "--driver", "pty", "--allow", "other", "-o", "json", "--audit", auditPath}, tc.args...)
			o := tai(t, st.Repo, env, append(args, "Say hello.")...)
			var r struct {
				result
				SessionID string `json:"session_id"`
				Parked    *struct {
					Kind     string    `json:"kind"`
					ResetsAt time.Time `json:"resets_at"`
					Source   string    `json:"source"`
					Message  string    `json:"message"`
					Reason   string    `json:"reason"`
					Session  string    `json:"session"`
					Account  struct {
						Agent string `json:"agent"`
					} `json:"account"`
				} `json:"parked"`
			}
			if err := json.Unmarshal([]byte(o.stdout), &r); err != nil {
				t.Fatalf("exit %d, stdout not JSON (%v):\n%s\nstderr:\n%s", o.code, err, o.stdout, o.stderr)
			}
			if o.code != tc.code || r.Status != tc.status {
				t.Fatalf("exit %d status %q error %q; want %d %q\nstderr:\n%s\nlast screen:\n%s", o.code, r.Status, r.Error, tc.code, tc.status, o.stderr, finalScreen(t, auditPath))
			}
			entries := auditlog.Read(t, auditPath)
			count := map[string]int{}
			for _, e := range entries {
				count[e.Kind]++
			}
			if tc.status == "parked" {
				p := r.Parked
				if p == nil || p.Source != "screen" || p.Kind != tc.kind || p.Session == "" || p.Session != r.SessionID || p.Account.Agent != tc.agent ||
					!tc.plan && !strings.Contains(p.Message, "429") {
					t.Fatalf("parked %+v (session %q); want the TUI's 429 read from the screen, its account, the session", p, r.SessionID)
				}
				// The plan's reset is an hour away, shown to the minute.
				if tc.plan && (p.ResetsAt.Before(time.Now().Add(58*time.Minute)) || p.ResetsAt.After(time.Now().Add(62*time.Minute))) {
					t.Errorf("parked resets at %v; want the hour the limiter announced", p.ResetsAt)
				}
				// A PTY session dies with its TUI: the reason must not
				// offer tai run --resume.
				if strings.Contains(p.Reason, "--resume") || !strings.Contains(p.Reason, "cannot resume its session") {
					t.Errorf("parked reason %q; want it to say the session cannot be resumed", p.Reason)
				}
			}
			if tc.message != "" && r.Message != tc.message {
				t.Errorf("message %q, want %q\nlast screen:\n%s", r.Message, tc.message, finalScreen(t, auditPath))
			}
			if tc.plan && tc.resumes > 0 && !drew(t, recPath, "Automatic continue cancelled") {
				t.Errorf("claude's own continue at the reset was not cancelled (its screens are in %s)", recPath)
			}
			// The same session: one TUI process, the continue prompt typed
			// into it after the wait.
			if count["quota.wait"] != tc.resumes || count["quota.resume"] != tc.resumes || count["process.start"] != 1 || count["prompt"] != 1+tc.resumes {
				t.Errorf("audit log: %d quota.wait, %d quota.resume, %d process.start, %d prompt; want %d, %d, 1, %d",
					count["quota.wait"], count["quota.resume"], count["process.start"], count["prompt"], tc.resumes, tc.resumes, 1+tc.resumes)
			}
			checkNoLeftovers(t, st.Repo)
		})
	}
}

// onPath is env with dir first in its PATH: the preset finds the agent's
// own executable there, as on a machine where its package is installed.
func onPath(env []string, dir string) []string {
	out := append([]string(nil), env...)
	for i, kv := range out {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			out[i] = "PATH=" + dir + string(os.PathListSeparator) + v
			return out
		}
	}
	return append(out, "PATH="+dir)
}

// A fleet task on the Claude Code TUI (the preset's package, driver pty)
// hits its account's limit: the account parks until the reset the
// message names, and the task, whose PTY session cannot be loaded again,
// resumes in a new session told the task and the diff so far (fleet's
// ResumePrompt); it creates its file and merges. Default sandbox, no
// --dir, user-like HOME.
func TestRealClaudeFleetParksAndResumes(t *testing.T) {
	a := realAgents["claude"]
	st := a.start(t, "../../../e2e/pty/testdata/limit-fleet.json")
	env := onPath(st.Env, filepath.Dir(st.Exe))
	run(t, st.Repo, "git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "init")
	plan := filepath.Join(t.TempDir(), "plan.yaml")
	// policy approve: all: Claude's trust dialog for the task's worktree
	// is a tool call that the default approve-reads would deny.
	// stagger 1ms: the default 10s between an account's resumes is only a wait here.
	if err := os.WriteFile(plan, []byte("name: ptypark\npolicy: {approve: all}\nquota: {stagger: 1ms}\ntasks:\n"+
		"  - {id: hello, agent: claude, driver: pty, prompt: \"Create hello.txt\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := tai(t, st.Repo, env, "fleet", "run", "-o", "json", plan)
	var s struct {
		Status string         `json:"status"`
		Target string         `json:"target"`
		Audit  string         `json:"audit"`
		Counts map[string]int `json:"counts"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &s); err != nil {
		t.Fatalf("exit %d, stdout not JSON (%v):\n%s\nstderr:\n%s", o.code, err, o.stdout, o.stderr)
	}
	if o.code != 0 || s.Counts["merged"] != 1 {
		t.Fatalf("exit %d, status %s, counts %v; want 0, merged\nstderr:\n%s", o.code, s.Status, s.Counts, o.stderr)
	}
	var parked, resumed, sessions int
	var resumePrompt bool
	for _, e := range auditlog.Read(t, s.Audit) {
		switch e.Kind {
		case "fleet":
			var ev struct {
				Event, Task, Detail string
				Resumable           bool
			}
			_ = json.Unmarshal(e.Data, &ev)
			switch {
			case ev.Task == "hello" && ev.Event == "parked":
				parked++
			case ev.Task == "hello" && ev.Event == "resumed":
				resumed++
				if ev.Resumable || !strings.Contains(ev.Detail, "new session") {
					t.Errorf("resumed %+v: want a new session (a PTY session cannot be loaded)", ev)
				}
			}
		case "session.start":
			sessions++
		case "prompt":
			resumePrompt = resumePrompt || strings.Contains(string(e.Data), "A usage limit stopped an earlier session")
		}
	}
	if parked != 1 || resumed != 1 || sessions != 2 || !resumePrompt {
		t.Errorf("task parked %d, resumed %d times, %d sessions, resume prompt sent %v; want 1, 1, 2, true\nstderr:\n%s", parked, resumed, sessions, resumePrompt, o.stderr)
	}
	if files := run(t, st.Repo, "git", "ls-tree", "--name-only", s.Target); !strings.Contains(files, "hello.txt") {
		t.Errorf("hello.txt is not on the target %s:\n%s", s.Target, files)
	}
	checkNoLeftovers(t, st.Repo)
}

// run runs a command in dir and returns its output; failing, it fails the test.
func run(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// A TUI without limit rows of its own (the fake TUI: the generic shapes)
// ends its turn on its provider's refusal, "✕ [API Error: 429 Too Many
// Requests. Please try again in 1s.]": the run parks, or with
// --wait-quota waits the second and types the continue prompt into the
// same TUI. An answer that talks about a 429 and rate limits is a reply,
// not a limit (fail closed). Default sandbox, no --dir.
func TestFakeTUILimit(t *testing.T) {
	for _, tc := range []struct {
		name, prompt string
		args         []string
		code         int
		status       string
		message      string
		resumes      int
	}{
		{name: "parks", prompt: "hit the limit", code: 75, status: "parked"},
		{name: "wait-quota resumes the live session", prompt: "hit the limit", args: []string{"--wait-quota=1h"}, status: "ok",
			message: "Hello from the fake TUI.\nIt spans two lines.", resumes: 1},
		{name: "an answer about rate limits is no limit", prompt: "ratelimit-talk", status: "ok",
			message: "A 429 Too Many Requests means you hit the rate limit; try again in 2s."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
			args := append([]string{"run", "--agent-cmd", fakeBin, "--driver", "pty", "-o", "json", "--audit", auditPath}, tc.args...)
			o := tai(t, dir, os.Environ(), append(args, tc.prompt)...)
			var r struct {
				result
				Parked *struct {
					Source   string `json:"source"`
					ResetsAt string `json:"resets_at"`
				} `json:"parked"`
			}
			if err := json.Unmarshal([]byte(o.stdout), &r); err != nil {
				t.Fatalf("exit %d, stdout not JSON (%v):\n%s\nstderr:\n%s", o.code, err, o.stdout, o.stderr)
			}
			if o.code != tc.code || r.Status != tc.status || r.Message != tc.message && tc.message != "" {
				t.Fatalf("exit %d status %q message %q error %q; want %d %q %q\nstderr:\n%s", o.code, r.Status, r.Message, r.Error, tc.code, tc.status, tc.message, o.stderr)
			}
			if tc.status == "parked" && (r.Parked == nil || r.Parked.Source != "screen" || r.Parked.ResetsAt == "") {
				t.Fatalf("parked %+v; want read from the screen with the reset it names", r.Parked)
			}
			count := map[string]int{}
			for _, e := range auditlog.Read(t, auditPath) {
				count[e.Kind]++
			}
			if count["quota.wait"] != tc.resumes || count["quota.resume"] != tc.resumes || count["process.start"] != 1 {
				t.Errorf("audit log: %d quota.wait, %d quota.resume, %d process.start; want %d, %d, 1",
					count["quota.wait"], count["quota.resume"], count["process.start"], tc.resumes, tc.resumes)
			}
		})
	}
}

// drew says whether the TUI's recorded output (TAI_PTY_RECORD) drew text:
// its output with escape sequences as spaces, runs of spaces as one.
func drew(t *testing.T, recPath, text string) bool {
	t.Helper()
	f, err := os.Open(recPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunks, err := pty.ReadRecording(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, c := range chunks {
		if c.Kind == "o" {
			out = append(out, c.Data...)
		}
	}
	plain := regexp.MustCompile(`\x1b(?:\[[0-9;?<>=]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[()][0-9A-Za-z]|.)`).ReplaceAllString(string(out), " ")
	return strings.Contains(strings.Join(strings.Fields(plain), " "), text)
}
