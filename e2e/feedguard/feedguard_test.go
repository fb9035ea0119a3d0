// Package feedguard_test checks through the real tai that a human's
// channels answer no agent: a hostile agent under the default sandbox
// tries its own run's live feed and another live run's, tai's feed secret,
// stopping tai, and an abstract Unix socket outside its sandbox.
package feedguard_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/e2e/internal/auditlog"
	"github.com/tai-dev/tai/e2e/internal/build"
	"github.com/tai-dev/tai/feed"
	"github.com/tai-dev/tai/sandbox"
)

var taiBin, probeBin string

func TestMain(m *testing.M) {
	build.Main(m, "tai-e2e-feedguard-", func(_ string, bins []string) { taiBin, probeBin = bins[0], bins[1] },
		build.Tai, "github.com/tai-dev/tai/e2e/internal/feedprobe")
}

// secretValue is a token given to the victim run with -e: its audit log
// redacts it, and so must its feed.
const secretValue = "s3cr3t-feedguard-0123456789"

type probeReport struct {
	Sockets     []string          `json:"sockets"`
	Secret      string            `json:"secret"`
	SecretErr   string            `json:"secret_err"`
	Requests    map[string]int    `json:"requests"`
	Answered    []string          `json:"answered"`
	Errors      map[string]string `json:"errors"`
	TaiPid      int               `json:"tai_pid"`
	StopErr     string            `json:"stop_err"`
	AbstractErr string            `json:"abstract_err"`
}

type runResult struct {
	ExitCode    int    `json:"exit_code"`
	Error       string `json:"error"`
	Audit       string `json:"audit"`
	Permissions []struct {
		DecidedBy string `json:"decided_by"`
		Via       string `json:"via"`
	}
	Sandbox struct {
		ProcessesHidden bool `json:"processes_hidden"`
	} `json:"sandbox"`
}

// A victim run waits on an ask at its terminal. An attacker run, default
// sandbox, user-like HOME, no --dir, runs feedprobe as its agent's
// command: every request on its own feed and on the victim's is refused
// (403) and recorded in that run's audit log; the feed secret is
// unreadable; where Landlock has scopes, SIGSTOP of tai and the abstract
// socket the test listens on are refused. From outside, tai top --once and
// a feed client still work, the victim's ask is answered through its feed,
// and its frames carry the -e token redacted.
func TestAgentCannotUseTheFeeds(t *testing.T) {
	if sandbox.ABI() < 1 {
		t.Skip("the kernel has no Landlock")
	}
	root := t.TempDir()
	home, ws, rt := filepath.Join(root, "home"), filepath.Join(root, "ws"), filepath.Join(root, "rt")
	for _, d := range []string{home, ws} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "NO_COLOR=1", "HOME="+home, "XDG_RUNTIME_DIR="+rt,
		"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"), "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// An abstract socket outside every sandbox (a desktop's D-Bus).
	name := abstractName(t)
	ln, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var reached atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			reached.Add(1)
			c.Close()
		}
	}()

	// The victim: one ask, with the token in it, waiting at its terminal.
	victimScript := writeFile(t, root, "victim.yaml", fmt.Sprintf(
		"steps:\n  - permission: {title: \"deploy %[1]s\", kind: execute, command: \"deploy --token %[1]s\"}\n  - text: \"done\"\n", secretValue))
	victimOut := filepath.Join(root, "victim.json")
	// --approve ask: the victim waits at its question with the token in it.
	victim := exec.CommandContext(ctx, taiBin, "run", "--agent-cmd", taiBin+" agent builtin --script "+victimScript,
		"-e", "DEPLOY_TOKEN="+secretValue, "--approve", "ask", "--no-notify", "--listen", "127.0.0.1:0", "-o", "json", "go")
	victim.Dir, victim.Env = ws, env
	resf, err := os.Create(victimOut)
	if err != nil {
		t.Fatal(err)
	}
	defer resf.Close()
	victim.Stdout = resf
	tty, err := pty.Start(victim)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var screen build.Buffer
	go func() { _, _ = io.Copy(&screen, tty) }()

	// Its --listen address and token, which the probe is given as if they
	// had leaked: the peer check alone must refuse it.
	var addr, tok string
	for deadline := time.Now().Add(time.Minute); addr == ""; {
		s := screen.String()
		if i := strings.Index(s, "on http://"); i >= 0 && strings.Contains(s[i:], ")") {
			line := s[i+len("on http://"):]
			line = line[:strings.IndexByte(line, ')')]
			addr, tok, _ = strings.Cut(line, " (Authorization: Bearer ")
		}
		if time.Now().After(deadline) {
			t.Fatalf("no --listen line:\n%s", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
	dir := filepath.Join(rt, "tai")
	var ep feed.Endpoint
	for deadline := time.Now().Add(time.Minute); ; {
		if eps, _ := feed.List(dir); len(eps) == 1 {
			ep = eps[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no feed socket in %s; terminal:\n%s", dir, screen.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	c := feed.Dial(ep.Path)
	defer c.Close()
	var askID string
	var frames strings.Builder
	errStop := errors.New("stop")
	_, err = c.Events(ctx, 0, func(ev feed.Event) error {
		frames.Write(ev.Data)
		frames.WriteByte('\n')
		var f struct {
			Type string
			Ask  struct{ ID string }
		}
		if json.Unmarshal(ev.Data, &f) == nil && f.Type == feed.FrameAskOpened {
			askID = f.Ask.ID
			return errStop
		}
		return nil
	})
	if !errors.Is(err, errStop) {
		t.Fatalf("the victim's feed: %v; terminal:\n%s", err, screen.String())
	}
	st, err := c.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stJSON, _ := json.Marshal(st)
	for what, s := range map[string]string{"frames": frames.String(), "state": string(stJSON)} {
		if strings.Contains(s, secretValue) || !strings.Contains(s, "[REDACTED]") {
			t.Errorf("the feed's %s carry the -e token unredacted:\n%s", what, s)
		}
	}

	tc := feed.DialTCP(addr, tok)
	defer tc.Close()
	if _, err := tc.State(ctx); err != nil {
		t.Fatalf("the victim's TCP feed, from outside with its token: %v", err)
	}

	// tai top, outside every sandbox, sees the victim's ask.
	top := build.Run(t, taiBin, ws, env, "top", "--once", "--width", "200")
	if top.Code != 0 || !strings.Contains(top.Stdout, "deploy") {
		t.Fatalf("tai top --once: exit %d\n%s\n%s", top.Code, top.Stdout, top.Stderr)
	}

	// The attacker: its agent's one command is the probe.
	report := filepath.Join(ws, "probe.json")
	attackerScript := writeFile(t, root, "attacker.yaml", fmt.Sprintf(
		"steps:\n  - run: {command: %q, args: [%q, %q, %q, %q]}\n  - text: \"probed\"\n", probeBin, report, name, addr, tok))
	// --approve all: the attacker's probe command must run.
	att := build.Run(t, taiBin, ws, env, "run", "--agent-cmd", taiBin+" agent builtin --script "+attackerScript,
		"--approve", "all", "-o", "json", "go")
	var ar runResult
	if err := json.Unmarshal([]byte(att.Stdout), &ar); err != nil || ar.ExitCode != 0 {
		t.Fatalf("the attacker's run: exit %d (%v)\n%s\n%s", att.Code, err, att.Stdout, att.Stderr)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("the probe left no report: %v\n%s", err, att.Stderr)
	}
	var pr probeReport
	if err := json.Unmarshal(b, &pr); err != nil {
		t.Fatal(err)
	}
	t.Logf("probe: %s", b)
	if len(pr.Sockets) != 2 || len(pr.Requests) < 3*3 {
		t.Fatalf("the probe did not find and try both runs' feeds: %s", b)
	}
	for req, code := range pr.Requests {
		if code != 403 {
			t.Errorf("%s: %d, want 403", req, code)
		}
	}
	if len(pr.Answered) > 0 || pr.Secret != "" || pr.SecretErr == "" {
		t.Errorf("the probe answered %v, read the secret %q (%s)", pr.Answered, pr.Secret, pr.SecretErr)
	}
	if sandbox.ABI() >= sandbox.ScopesABI {
		// Where processes are hidden (a PID namespace of the agent's own),
		// tai is not even among the probe's ancestors: nothing to signal.
		// The scope itself is TestScopesRefuseSignalsOut's (sandbox).
		switch {
		case ar.Sandbox.ProcessesHidden && pr.TaiPid <= 1 && strings.Contains(pr.StopErr, "not found"):
		case !strings.Contains(pr.StopErr, "operation not permitted"):
			t.Errorf("SIGSTOP of tai (pid %d): %q, want EPERM (processes hidden: %v)", pr.TaiPid, pr.StopErr, ar.Sandbox.ProcessesHidden)
		}
		if pr.AbstractErr == "" || reached.Load() != 0 {
			t.Errorf("the probe reached the abstract socket (%q, %d connections)", pr.AbstractErr, reached.Load())
		}
	}

	// Outside, the victim's ask is still the human's to answer.
	if err := c.Answer(ctx, askID, "once", "feed"); err != nil {
		t.Fatalf("answering the victim's ask from outside: %v", err)
	}
	_ = victim.Wait()
	data, _ := os.ReadFile(victimOut)
	var vr runResult
	if err := json.Unmarshal(data, &vr); err != nil {
		t.Fatalf("victim result: %v\n%s\n%s", err, data, screen.String())
	}
	if vr.ExitCode != 0 || len(vr.Permissions) != 1 || vr.Permissions[0].Via != "feed" || vr.Permissions[0].DecidedBy != "human" {
		t.Fatalf("victim result %s", data)
	}

	// Each run's audit log records the requests refused on its feed.
	for who, path := range map[string]string{"victim": vr.Audit, "attacker": ar.Audit} {
		n := 0
		for _, e := range auditlog.Read(t, path) {
			if e.Kind != audit.KindFeedRefused {
				continue
			}
			var ref feed.Refusal
			if err := json.Unmarshal(e.Data, &ref); err != nil || !strings.Contains(ref.Reason, "sandbox") {
				t.Errorf("%s: refusal %s (%v)", who, e.Data, err)
			}
			n++
		}
		if n < 3 {
			t.Errorf("%s's audit log records %d refusals, want at least 3", who, n)
		}
	}
}

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func abstractName(t *testing.T) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "tai-feedguard-" + hex.EncodeToString(b)
}

// A fleet's task whose agent (default sandbox, user-like HOME, no --dir)
// runs feedprobe tries to pause and release its own fleet through the
// fleet's live feed: both are refused (403) and recorded in the fleet's
// audit log with the sandbox as the reason; no hand reaches the fleet
// (no feed.hand entry, no park by hand) and the task merges.
func TestAgentCannotPauseItsFleet(t *testing.T) {
	if sandbox.ABI() < 1 {
		t.Skip("the kernel has no Landlock")
	}
	root := t.TempDir()
	home, repo, rt, state := filepath.Join(root, "home"), filepath.Join(root, "repo"), filepath.Join(root, "rt"), filepath.Join(root, "state")
	for _, d := range []string{home, repo} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "NO_COLOR=1", "HOME="+home, "XDG_RUNTIME_DIR="+rt, "XDG_STATE_HOME="+state,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_CACHE_HOME="+filepath.Join(home, ".cache"))
	for _, a := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "T"},
		{"commit", "-q", "--allow-empty", "-m", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, a...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", a, err, out)
		}
	}
	pd := filepath.Join(root, "plan")
	if err := os.MkdirAll(pd, 0o755); err != nil {
		t.Fatal(err)
	}
	// The report goes into the task's worktree, merged with its branch.
	writeFile(t, pd, "probe.yaml", fmt.Sprintf("steps:\n  - run: {command: %q, args: [probe.json, %q]}\n  - text: \"probed\"\n",
		probeBin, abstractName(t)))
	// policy approve: all: the probe's command must run.
	plan := writeFile(t, pd, "plan.yaml", "name: pauseprobe\npolicy: {approve: all}\ntasks:\n  - {id: probe, script: probe.yaml, prompt: probe}\n")
	res := build.Run(t, taiBin, repo, env, "fleet", "run", "--run-id", "pauseprobe", "-o", "json", plan)
	var sum struct {
		Target string `json:"target"`
		Audit  string `json:"audit"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &sum); err != nil || res.Code != 0 {
		t.Fatalf("fleet run: exit %d (%v)\n%s\n%s", res.Code, err, res.Stdout, res.Stderr)
	}
	out, err := exec.Command("git", "-C", repo, "show", sum.Target+":probe.json").Output()
	if err != nil {
		t.Fatalf("the probe's report on %s: %v", sum.Target, err)
	}
	var pr probeReport
	if err := json.Unmarshal(out, &pr); err != nil {
		t.Fatal(err)
	}
	t.Logf("probe: %s", out)
	for _, p := range []string{"/pause", "/release"} {
		if code, ok := pr.Requests["pauseprobe.sock POST "+p]; !ok || code != 403 {
			t.Errorf("POST %s on its fleet's feed: %d (tried: %v), want 403", p, code, ok)
		}
	}
	refused := map[string]bool{}
	for _, e := range auditlog.Read(t, sum.Audit) {
		switch e.Kind {
		case audit.KindFeedHand:
			t.Errorf("a hand reached the fleet: %s", e.Data)
		case audit.KindFeedRefused:
			var ref feed.Refusal
			if err := json.Unmarshal(e.Data, &ref); err == nil && strings.Contains(ref.Reason, "sandbox") {
				refused[ref.Path] = true
			}
		case audit.KindFleet:
			if strings.Contains(string(e.Data), "by hand") {
				t.Errorf("the fleet parked by hand: %s", e.Data)
			}
		}
	}
	if !refused["/pause"] || !refused["/release"] {
		t.Errorf("the fleet's audit log records refusals of %v, want /pause and /release", refused)
	}
}
