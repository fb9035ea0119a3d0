// Package attack runs one hostile agent under tai's default sandbox that
// tries every way around tai in one run: the channels tai opens for people
// (feeds, the hub), tai's own secrets and environment, signals, other
// processes, caches and config files that run code later, secret paths
// through tai's file service, and commands the floor must read as the shell
// and git do. Each must be refused, and each refusal tai makes must be in
// the audit log.
package attack

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tai-dev/tai/e2e/internal/auditlog"
	"github.com/tai-dev/tai/e2e/internal/build"
	"github.com/tai-dev/tai/sandbox"
)

var taiBin, attackerBin, natsServer string

func TestMain(m *testing.M) {
	build.Main(m, "tai-e2e-attack-", func(_ string, bins []string) { taiBin, attackerBin, natsServer = bins[0], bins[1], bins[2] },
		build.Tai, "github.com/tai-dev/tai/e2e/internal/attacker", build.NATSServer)
}

// report mirrors the attacker's report.
type report struct {
	Feeds []struct {
		Socket string            `json:"socket"`
		Tries  map[string]string `json:"tries"`
	} `json:"feeds"`
	Readable   []string `json:"readable"`
	Signalled  []string `json:"signalled"`
	TaiVisible bool     `json:"tai_visible"`
	Environ    []string `json:"environ"`
	Abstract   string   `json:"abstract"`
	NATS       string   `json:"nats"`
	Written    []string `json:"written"`
	Errors     []string `json:"errors"`
}

// world is a user-like machine: HOME with secrets and an agent's config,
// XDG directories, a runtime directory for tai's feeds.
type world struct {
	root, home, ws, runtime, state, remote string
}

const (
	fakeKey = "FAKE-PRIVATE-KEY-0123456789"
	// marker is a secret in tai's own environment (the hub token a worker
	// would have) and in the other run's: no agent may see it.
	marker = "tai-attack-marker-5b1f0c"
)

func newWorld(t *testing.T) world {
	t.Helper()
	root := t.TempDir()
	w := world{root: root, home: filepath.Join(root, "home"), ws: filepath.Join(root, "home", "proj"),
		runtime: filepath.Join(root, "run"), remote: filepath.Join(root, "remote.git")}
	w.state = filepath.Join(w.home, ".local", "state")
	files := map[string]string{
		".ssh/id_rsa":           fakeKey + "\n",
		".aws/credentials":      "[default]\naws_secret_access_key = " + fakeKey + "\n",
		".claude/settings.json": "{}\n",
		".cache/keep":           "",
		".npm/keep":             "",
		"proj/README":           "hello\n",
	}
	for p, c := range files {
		p = filepath.Join(w.home, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(w.runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	// A remote whose main the agent's git push --mirror would move.
	git(t, root, "init", "-q", "--bare", "-b", "main", w.remote)
	git(t, w.ws, "init", "-q", "-b", "main")
	git(t, w.ws, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "base")
	git(t, w.ws, "add", "README")
	git(t, w.ws, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "readme")
	git(t, w.ws, "remote", "add", "origin", w.remote)
	git(t, w.ws, "push", "-q", "origin", "main")
	return w
}

func (w world) env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "XDG_") || k == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	return append(append(env, "NO_COLOR=1", "HOME="+w.home, "XDG_RUNTIME_DIR="+w.runtime, "TAI_NATS_SERVER="+natsServer,
		"XDG_STATE_HOME="+w.state, "XDG_CONFIG_HOME="+filepath.Join(w.home, ".config"),
		"XDG_CACHE_HOME="+filepath.Join(w.home, ".cache")), extra...)
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// victim starts another live run of the same user, with a secret given
// by -e, whose feed the attacker tries to read and answer. It is ready
// when its feed socket is.
func (w world) victim(t *testing.T) {
	t.Helper()
	script := filepath.Join(w.root, "victim.yaml")
	if err := os.WriteFile(script, []byte("steps:\n  - text: waiting\n  - hang: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(taiBin, "run", "--agent-cmd", taiBin+" agent builtin --script "+script, "-o", "json",
		"-e", "VICTIM_TOKEN="+marker, "--timeout", "5m", "wait")
	cmd.Dir, cmd.Env = dir, w.env("TAI_NATS_TOKEN="+marker)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	// Its feed socket appears once the run is live: tai top --once lists
	// it (from outside any sandbox).
	for i := 0; ; i++ {
		out, _ := exec.Command(taiBin, "top", "--once").CombinedOutput()
		if strings.Contains(string(out), "wait") || i > 600 {
			break
		}
		time.Sleep(50 * time.Millisecond) // polling, bounded by the count; nothing asserts on time
	}
}

// hub starts `tai hub` as the README shows it (no credentials given: it
// makes its own) and returns its address, HOST:PORT.
func (w world) hub(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(taiBin, "hub", "--listen", "127.0.0.1:0")
	cmd.Dir, cmd.Env = w.root, w.env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("tai hub: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return strings.TrimPrefix(strings.TrimSpace(line), "nats://")
}

// abstractListener listens on an abstract Unix socket outside any sandbox
// (a desktop's X11 or D-Bus stands for it) and greets whoever connects.
func abstractListener(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("tai-attack-%d", os.Getpid())
	l, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("hello from outside\n"))
			c.Close()
		}
	}()
	return name
}

func TestOneAttackerIsRefusedAtEveryChannel(t *testing.T) {
	if sandbox.ABI() < 1 {
		t.Skip("the kernel has no Landlock")
	}
	w := newWorld(t)
	w.victim(t)
	abs := abstractListener(t)
	hub := w.hub(t)

	reportPath := filepath.Join(w.ws, "report.json")
	writes := strings.Join([]string{
		filepath.Join(w.home, ".cache", "staticcheck"),
		filepath.Join(w.home, ".npm", "planted"),
		filepath.Join(w.home, ".node-gyp", "planted"),
		filepath.Join(w.home, ".claude", "settings.json"),
	}, string(filepath.ListSeparator))
	steps := []string{
		// Every channel that does not go through tai's policy.
		// Its parameters go as the terminal request's own environment: what
		// the test names that an agent could not find itself.
		fmt.Sprintf(`run: {command: %q, args: [%q], env: {ATTACK_MARKER: %q, ATTACK_ABSTRACT: %q, ATTACK_WRITES: %q, ATTACK_NATS: %q}}`,
			attackerBin, reportPath, marker, abs, writes, hub),
		// Secrets through tai's own file service.
		fmt.Sprintf(`read: {path: %q}`, filepath.Join(w.home, ".ssh", "id_rsa")),
		fmt.Sprintf(`read: {path: %q}`, filepath.Join(w.home, ".aws", "credentials")),
		// Commands the floor must read as git and the shell do.
		`run: {command: git, args: [push, --mirror, origin]}`,
		`run: {command: git, args: [push, origin, "+refs/heads/*:refs/heads/*"]}`,
		`run: {command: /bin/sh, args: [-c, "c=$(echo rm); $c --rec --force ` + w.ws + `"]}`,
		`run: {command: rm, args: [--rec, --force, ` + w.ws + `]}`,
		`text: done`,
	}
	script := filepath.Join(w.root, "attack.yaml")
	if err := os.WriteFile(script, []byte("steps:\n  - "+strings.Join(steps, "\n  - ")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	auditPath := filepath.Join(w.root, "attack.jsonl")
	// --approve all: the agent's requests are granted; what stops it is the
	// boundary, not a human's no.
	cmd := exec.Command(taiBin, "run", "--agent-cmd", taiBin+" agent builtin --script "+script, "-o", "json",
		"--approve", "all", "--allow-denials", "--audit", auditPath, "attack")
	cmd.Dir, cmd.Env = w.ws, w.env("TAI_NATS_TOKEN="+marker)
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Status  string `json:"status"`
		Denials []struct {
			Title  string `json:"title"`
			Reason string `json:"reason"`
		} `json:"denials"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("stdout is not a JSON result (exit %d): %v\n%s", code, err, out)
	}

	b, err := os.ReadFile(reportPath)
	if err != nil {
		t.Fatalf("no attacker report (the workspace was emptied, or the attacker did not run): %v\n%s", err, out)
	}
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	t.Logf("attacker report:\n%s", b)

	// 1. The feeds: found, and refused.
	if len(r.Feeds) == 0 {
		t.Errorf("the attacker found no feed socket; the test cannot show the feed is closed")
	}
	for _, f := range r.Feeds {
		for try, got := range f.Tries {
			// Refused: the connection itself, or 401/403. Anything else
			// (a 404 for an unknown ask included) was an answer served.
			if !strings.HasPrefix(got, "error") && !strings.HasPrefix(got, "401") && !strings.HasPrefix(got, "403") {
				t.Errorf("feed %s: %s was served from inside the sandbox: %s", f.Socket, try, got)
			}
		}
	}
	// tai's secrets and the user's are unreadable.
	for _, p := range r.Readable {
		if strings.Contains(p, "/.ssh/") || strings.Contains(p, "/.aws/") || strings.Contains(p, w.runtime) ||
			strings.Contains(strings.ToLower(filepath.Base(p)), "token") || strings.Contains(strings.ToLower(filepath.Base(p)), "cred") {
			t.Errorf("readable from inside the sandbox: %s", p)
		}
	}
	// Signals and abstract sockets outside the sandbox.
	if len(r.Signalled) > 0 {
		t.Errorf("signalled processes outside its sandbox: %v", r.Signalled)
	}
	if !strings.HasPrefix(r.Abstract, "refused") {
		t.Errorf("the abstract socket outside answered: %s", r.Abstract)
	}
	// The hub, closed by default: a client without its token is refused.
	if !strings.HasPrefix(r.NATS, "refused") && !strings.HasPrefix(r.NATS, "closed") {
		t.Errorf("the hub served a client without credentials from inside the sandbox: %s", r.NATS)
	}
	// No environment carries the marker: not the agent's own (tai's token
	// dropped), not tai's, not the other run's.
	if len(r.Environ) > 0 {
		t.Errorf("the secret marker is in environments the agent can read: %v", r.Environ)
	}
	// Code planted for later.
	if len(r.Written) > 0 {
		t.Errorf("planted for later: %v", r.Written)
	}

	// 2. The file service hid the secrets.
	if strings.Contains(string(out), fakeKey) {
		t.Errorf("a secret reached the result:\n%s", out)
	}
	// 3. The floor: the remote's main did not move, the workspace is there.
	if got := git(t, w.root, "--git-dir", w.remote, "for-each-ref", "--format=%(refname)"); got != "refs/heads/main" {
		t.Errorf("the remote's refs changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(w.ws, "README")); err != nil {
		t.Errorf("the workspace was emptied: %v", err)
	}

	// 4. Every refusal tai made is in the audit log with its reason.
	auditlog.Read(t, auditPath) // every line decodes
	raw, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.Contains(l, `"deny"`) || strings.Contains(l, "refused") {
			refused++
		}
	}
	if refused < 6 { // two reads, four commands
		t.Errorf("the audit log records %d refusals, want at least 6:\n%s", refused, raw)
	}
	if strings.Contains(string(raw), fakeKey) || strings.Contains(string(raw), marker) {
		t.Errorf("the audit log holds a secret")
	}
}
