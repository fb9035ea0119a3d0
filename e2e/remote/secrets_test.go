package remote_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/tai-dev/tai/e2e/internal/build"
	"github.com/tai-dev/tai/remote"
	"github.com/tai-dev/tai/sandbox"
)

// userEnv is a world with a user-like HOME (state, config and cache where
// a user's are) and nothing of tai's secrets in the environment.
func userEnv(t testing.TB) (*env, string) {
	home := t.TempDir()
	state := filepath.Join(home, ".local", "state")
	return &env{t: t, state: state, env: []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"), "TAI_NATS_TOKEN=", "TAI_NATS_CREDS="}}, home
}

// tryHub is a shell script for an agent: it tries to read the hub's token
// (Landlock lets it list the names in the directory, as it does on every
// way to a hidden path, but not read them) and to list the hub's runs with tai itself (which would find the token
// as any client on this host does), leaving the evidence in the workspace.
func tryHub(secrets, url string) string {
	return fmt.Sprintf("cat %[1]s/* > leak.txt 2>&1; ls %[1]s >> leak.txt 2>&1\n"+
		"%[2]s fleet list --nats %[3]s > list.txt 2>&1; echo $? > list-code.txt\n", secrets, taiBin, url)
}

// tai hub with no flags serves only clients that present the token it
// made: a connection without it is refused; this host's worker and fleet
// run (no flags) find it and run a plan; an agent, of a tai run and of
// that fleet's task, both in the default sandbox, can neither read the
// token nor reach the hub with tai's own client. --insecure serves open
// and warns.
func TestHubIsClosedByDefault(t *testing.T) {
	if sandbox.ABI() < 1 {
		t.Skip("the kernel has no Landlock: the token file is hidden by it")
	}
	e, home := userEnv(t)
	// --listen: a free port (4222 may be taken on the test machine).
	url := firstLine(e, e.cmd(taiBin, "hub", "--listen", "127.0.0.1:0"))
	secrets := filepath.Join(e.state, "tai", "secrets")
	token, err := os.ReadFile(filepath.Join(secrets, "nats-token"))
	if err != nil || len(strings.TrimSpace(string(token))) < 32 {
		t.Fatalf("the hub's token: %q, %v", token, err)
	}
	if nc, err := remote.Connect(url, "", "", "no token"); !errors.Is(err, nats.ErrAuthorization) {
		if nc != nil {
			nc.Close()
		}
		t.Fatalf("a client without the token: %v, want an authorization violation", err)
	}

	// An ordinary tai run's agent, in the default sandbox.
	ws := filepath.Join(home, "proj")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	scr := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(scr, []byte(fmt.Sprintf("steps:\n  - run: {command: /bin/sh, args: [-c, %q]}\n  - text: done\n", tryHub(secrets, url))), 0o644); err != nil {
		t.Fatal(err)
	}
	// --approve all: the probe command must run.
	run := e.cmd(taiBin, "run", "--agent-cmd", taiBin+" agent builtin --script "+scr, "--approve", "all", "-o", "json", "go")
	run.Dir = ws
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("tai run: %v\n%s", err, out)
	}
	read := func(dir, f string) string {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		return strings.TrimSpace(string(b))
	}
	if leak := read(ws, "leak.txt"); strings.Contains(leak, strings.TrimSpace(string(token))) || !strings.Contains(leak, "Permission denied") {
		t.Errorf("the agent read the hub's secrets: %q", leak)
	}
	if code := read(ws, "list-code.txt"); code == "0" || code == "" {
		t.Errorf("the agent reached the hub (exit %q): %s", code, read(ws, "list.txt"))
	}

	// This host's worker and fleet run find the token; their task's agent
	// does not.
	repo := planRepo(t, map[string]string{
		"s.yaml":    fmt.Sprintf("steps:\n  - write: {path: r.sh, content: %q}\n  - run: {command: sh, args: [r.sh]}\n  - text: done\n", tryHub(secrets, url)),
		"plan.yaml": "name: closed\npolicy: {approve: all}\ntasks:\n  - {id: s, script: s.yaml, prompt: go}\n", // policy approve: all: the tasks write and run commands, which the default approve-reads denies.
	})
	// The worker as the README starts it: no --dir (its worktrees then go
	// to the data directory, which its agents may write, not tai's state).
	w := e.cmd(taiBin, "worker", "--nats", url, "--name", "w")
	w.Stderr = &prefixWriter{t: t, p: "w"}
	e.start(w)
	out, err := e.cmd(taiBin, "fleet", "run", "--nats", url, "--run-id", "c", "-C", repo, filepath.Join(repo, "plan.yaml")).CombinedOutput()
	if err != nil {
		t.Fatalf("tai fleet run --nats (no token flags): %v\n%s", err, out)
	}
	if leak := git(t, repo, "show", "tai-fleet/c:leak.txt"); strings.Contains(leak, strings.TrimSpace(string(token))) || !strings.Contains(leak, "Permission denied") {
		t.Errorf("the task's agent read the hub's secrets: %q", leak)
	}
	if code := git(t, repo, "show", "tai-fleet/c:list-code.txt"); code == "0" {
		t.Errorf("the task's agent reached the hub: %s", git(t, repo, "show", "tai-fleet/c:list.txt"))
	}
	if out, err := e.cmd(taiBin, "fleet", "status", "c", "--nats", url).CombinedOutput(); err != nil {
		t.Errorf("tai fleet status --nats (no token flags): %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(home, ".local", "share", "tai", "worker", "w", "state", "audit", "c")); err != nil {
		t.Errorf("the worker's task audit logs are not in its default directory: %v", err)
	}

	// --insecure: open, with a warning.
	var stderr build.Buffer
	open := e.cmd(taiBin, "hub", "--insecure", "--listen", "127.0.0.1:0", "--store", t.TempDir())
	open.Stderr = &stderr
	openURL := firstLine(e, open)
	if !strings.Contains(stderr.String(), "WARNING: --insecure") {
		t.Errorf("tai hub --insecure did not warn:\n%s", stderr.String())
	}
	nc, err := remote.Connect(openURL, "", "", "no token")
	if err != nil {
		t.Fatalf("tai hub --insecure refused a client: %v", err)
	}
	nc.Close()
}

// A worker given the hub's token in its environment (TAI_NATS_TOKEN) does
// not hand it (nor TAI_NATS_SERVER, which e.cmd sets) to its agents: the
// task's agent, run by the worker in the default sandbox, sees neither
// those variables nor the token, while an ordinary variable reaches it.
func TestWorkerAgentEnvLacksTaisSecrets(t *testing.T) {
	e, _ := userEnv(t)
	const secret = "hub-token-0123456789abcdef"
	e.env = append(e.env, "TAI_NATS_TOKEN="+secret, "KEEP_ME=kept-42")
	url := firstLine(e, e.cmd(taiBin, "hub", "--listen", "127.0.0.1:0"))
	repo := planRepo(t, map[string]string{
		"s.yaml":    "steps:\n  - run: {command: sh, args: [-c, \"env > env.txt\"]}\n  - text: done\n",
		"plan.yaml": "name: env\npolicy: {approve: all}\ntasks:\n  - {id: s, script: s.yaml, prompt: go}\n", // policy approve: all: the tasks write and run commands, which the default approve-reads denies.
	})
	// --dir: the test reads the task's audit log there.
	wdir := t.TempDir()
	w := e.cmd(taiBin, "worker", "--nats", url, "--name", "w", "--dir", wdir)
	w.Stderr = &prefixWriter{t: t, p: "w"}
	e.start(w)
	out, err := e.cmd(taiBin, "fleet", "run", "--nats", url, "--run-id", "env", "-C", repo, filepath.Join(repo, "plan.yaml")).CombinedOutput()
	if err != nil {
		t.Fatalf("tai fleet run: %v\n%s", err, out)
	}
	got := git(t, repo, "show", "tai-fleet/env:env.txt")
	if strings.Contains(got, secret) || strings.Contains(got, "TAI_NATS_") {
		t.Errorf("the agent's environment carries tai's secrets:\n%s", got)
	}
	if !strings.Contains(got, "KEEP_ME=kept-42") {
		t.Errorf("the agent's environment lost an ordinary variable:\n%s", got)
	}
	// The task's audit log says what was withheld, never the value.
	logs, _ := filepath.Glob(filepath.Join(wdir, "state", "audit", "env", "*.jsonl"))
	if len(logs) == 0 {
		t.Fatalf("no task audit log in %s", wdir)
	}
	b, _ := os.ReadFile(logs[0])
	first, _, _ := strings.Cut(string(b), "\n")
	_, withheld, _ := strings.Cut(first, `"env_withheld":{"names":[`)
	names, _, _ := strings.Cut(withheld, "]")
	if !strings.Contains(names, `"TAI_NATS_TOKEN"`) || !strings.Contains(names, `"TAI_NATS_SERVER"`) || strings.Contains(string(b), secret) {
		t.Errorf("the task's audit log does not record what was withheld (or holds the token):\n%s", b)
	}
}
