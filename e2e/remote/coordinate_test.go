package remote_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// coordinatorKind starts a NATS server and a coordinator of submitted
// runs; restart kills the coordinator with kill -9 and starts it again
// on the same store.
type coordinatorKind func(e *env) (url string, restart func())

// taiHubCoordinating is tai hub --coordinate on a fixed port (so the
// workers reconnect to it after its restart).
func taiHubCoordinating(e *env) (string, func()) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	store := e.t.TempDir()
	var cmd *exec.Cmd
	start := func() string {
		// -v: the coordinator's and the server's lines are in the test's
		// log if it fails.
		cmd = e.cmd(taiBin, "-v", "hub", "--coordinate", "--listen", addr, "--store", store)
		cmd.Stderr = &prefixWriter{t: e.t, p: "hub"}
		return firstLine(e, cmd)
	}
	url := start()
	return url, func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		// The hub's nats-server, killed with it, may still hold the port
		// for a moment (on a loaded machine): the new one needs it free.
		for i := 0; ; i++ {
			l, err := net.Listen("tcp", addr)
			if err == nil {
				l.Close()
				break
			}
			if i == 3000 {
				e.t.Fatalf("%s stayed taken after the hub was killed: %v", addr, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		start()
	}
}

// debianCoordinating is Debian's nats-server with tai hub --coordinate
// --nats URL next to it.
func debianCoordinating(e *env) (string, func()) {
	url := debianHub(e)
	var cmd *exec.Cmd
	start := func() {
		cmd = e.cmd(taiBin, "hub", "--coordinate", "--nats", url)
		cmd.Stderr = &prefixWriter{t: e.t, p: "coordinator"}
		firstLine(e, cmd)
	}
	start()
	return url, func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		start()
	}
}

func firstLine(e *env, cmd *exec.Cmd) string {
	out, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	e.start(cmd)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		e.t.Fatalf("%v: %v", cmd.Args, err)
	}
	return strings.TrimSpace(line)
}

func TestHubCoordinatesSubmittedRuns(t *testing.T) {
	for name, k := range map[string]coordinatorKind{"tai-hub": taiHubCoordinating, "debian-nats-server": debianCoordinating} {
		t.Run(name, func(t *testing.T) { testHubCoordinates(t, k) })
	}
}

// A run submitted with --detach is scheduled, run and merged by the hub's
// coordinator; killed with kill -9 mid-run, the coordinator restarted on
// the same store finishes it. fleet status, list and logs --nats read it
// from any host, per task as for a local run.
func testHubCoordinates(t *testing.T, kind coordinatorKind) {
	e := &env{t: t, state: t.TempDir()}
	url, restart := kind(e)

	repo, fifos := t.TempDir(), t.TempDir()
	for _, a := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "T"}} {
		git(t, repo, a...)
	}
	gate := filepath.Join(fifos, "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unblock(gate) })
	files := map[string]string{
		"gate.yaml":  fmt.Sprintf("steps:\n  - run: {command: sh, args: [-c, %q]}\n  - text: gate passed\n", "cat "+gate+" >/dev/null; echo gate > gate.txt"),
		"after.yaml": "steps:\n  - write: {path: after.txt, content: \"after\\n\"}\n  - text: after done\n",
		// policy approve: all: the tasks write and run commands, which the default approve-reads denies.
		"plan.yaml": `name: hub
policy: {approve: all}
tasks:
  - {id: s0, script: s0.yaml, prompt: s0}
  - {id: s1, script: s1.yaml, prompt: s1}
  - {id: gate, script: gate.yaml, prompt: gate}
  - {id: after, script: after.yaml, prompt: "after {{ .Tasks.gate.Diff }}", depends_on: [gate, s0]}
`,
	}
	for _, id := range []string{"s0", "s1"} {
		files[id+".yaml"] = fmt.Sprintf("steps:\n  - write: {path: %s.txt, content: \"%s\\n\"}\n  - text: wrote %s\n", id, id, id)
	}
	for f, c := range files {
		if err := os.WriteFile(filepath.Join(repo, f), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "init")
	for i := range 2 {
		name := fmt.Sprintf("w%d", i)
		// --dir: two workers on one host, each with a directory of its
		// own (the default is TestHubIsClosedByDefault's).
		cmd := e.cmd(taiBin, "worker", "--nats", url, "--name", name, "--dir", t.TempDir())
		cmd.Stderr = &prefixWriter{t: t, p: name}
		e.start(cmd)
	}

	sub := e.cmd(taiBin, "fleet", "run", "--nats", url, "--detach", "--lease", "3s", "--run-id", "h", "-C", repo, filepath.Join(repo, "plan.yaml"))
	out, err := sub.Output()
	if err != nil || strings.TrimSpace(string(out)) != "h" {
		t.Fatalf("tai fleet run --detach: %v, stdout %q", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute) // a guard against a hang only
	defer cancel()
	// Follow until the gate task runs on a worker, then kill the coordinator.
	follow := func() (*exec.Cmd, <-chan map[string]string) {
		cmd := e.cmd(taiBin, "fleet", "logs", "h", "--nats", url, "-f", "-o", "json")
		lines := pipeLines(t, cmd)
		e.start(cmd)
		ch := make(chan map[string]string)
		go func() {
			defer close(ch)
			for l := range lines {
				var fr map[string]any
				if json.Unmarshal([]byte(l), &fr) != nil {
					continue
				}
				m := map[string]string{}
				for k, v := range fr {
					if s, ok := v.(string); ok {
						m[k] = s
					}
				}
				ch <- m
			}
		}()
		return cmd, ch
	}
	stage := "waiting for the gate task to start"
	next := func(ch <-chan map[string]string) (map[string]string, bool) {
		select {
		case fr, ok := <-ch:
			return fr, ok
		case <-ctx.Done():
			status, _ := e.cmd(taiBin, "fleet", "status", "h", "--nats", url).CombinedOutput()
			t.Fatalf("the run hung %s; fleet status:\n%s", stage, status)
			return nil, false
		}
	}
	f1, ch := follow()
	for {
		fr, ok := next(ch)
		if !ok {
			t.Fatal("fleet logs -f ended before the gate task started")
		}
		if fr["event"] == "worker.started" && fr["task"] == "gate" {
			break
		}
	}
	_ = syscall.Kill(-f1.Process.Pid, syscall.SIGKILL)
	stage = "restarting the coordinator"
	restart()
	stage = "after the coordinator's restart, until the run's end"
	// The gate attempt may have lost its lease while the hub was down (3s):
	// its next attempt blocks on the gate again.
	go letReadersThrough(ctx, gate, -1)
	f2, ch := follow()
	ended := false
	for {
		fr, ok := next(ch)
		if !ok {
			break
		}
		if fr["event"] == "run.end" {
			ended = true
		}
	}
	if err := f2.Wait(); err != nil || !ended {
		t.Fatalf("fleet logs -f: %v, saw the run's end: %v", err, ended)
	}

	run := func(args ...string) string {
		out, err := e.cmd(taiBin, args...).CombinedOutput()
		if err != nil {
			t.Errorf("tai %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	tree := git(t, repo, "ls-tree", "--name-only", "tai-fleet/h")
	for _, id := range []string{"s0", "s1", "gate", "after"} {
		if !strings.Contains(tree, id+".txt") {
			t.Fatalf("%s.txt is not on the target:\n%s\n%s\n%s\n%s", id, git(t, repo, "log", "--stat", "--format=%h %p %s", "tai-fleet/h"),
				git(t, repo, "for-each-ref"), run("fleet", "status", "h", "--nats", url), run("fleet", "logs", "h", "--nats", url))
		}
	}
	if out := run("fleet", "status", "h", "--nats", url); !strings.Contains(out, "fleet h: done") || strings.Count(out, "merged") < 4 {
		t.Errorf("fleet status --nats:\n%s", out)
	}
	if out := run("fleet", "list", "--nats", url); !strings.Contains(out, "h ") || !strings.Contains(out, "4 merged") {
		t.Errorf("fleet list --nats:\n%s", out)
	}
	// The per-task logs have the workers' session frames, as a local run's.
	logs := run("fleet", "logs", "h", "--nats", url)
	for _, want := range []string{"s0           agent: wrote s0", "gate         agent: gate passed", "after        merged"} {
		if !strings.Contains(logs, want) {
			t.Errorf("fleet logs --nats lacks %q:\n%s", want, logs)
		}
	}
	one := run("fleet", "logs", "h", "s1", "--nats", url)
	if !strings.Contains(one, "s1           agent: wrote s1") || strings.Contains(one, "s0 ") {
		t.Errorf("fleet logs h s1 --nats:\n%s", one)
	}
	// On the coordinator's host, the run's directory is a local run's.
	if local := run("fleet", "logs", "h", "after"); !strings.Contains(local, "after        agent: after done") {
		t.Errorf("fleet logs h after (the hub's host):\n%s", local)
	}
	if local := run("fleet", "logs", "h"); !strings.Contains(local, "fleet        result: done") {
		t.Errorf("fleet logs h after (the hub's host):\n%s", local)
	}
	if local := run("fleet", "status", "h"); !strings.Contains(local, "fleet h: done") {
		t.Errorf("fleet status h (the hub's host):\n%s", local)
	}

	// Submitted without --detach, the run is followed to its end and its
	// exit code is the run's.
	// policy approve: all: the tasks write and run commands, which the default approve-reads denies.
	files2 := "name: hub2\npolicy: {approve: all}\ntasks:\n  - {id: s0, script: s0.yaml, prompt: again}\n"
	if err := os.WriteFile(filepath.Join(repo, "plan2.yaml"), []byte(files2), 0o644); err != nil {
		t.Fatal(err)
	}
	sub = e.cmd(taiBin, "fleet", "run", "--nats", url, "--submit", "--run-id", "h2", "-C", repo, filepath.Join(repo, "plan2.yaml"))
	sub.Stderr = &prefixWriter{t: t, p: "submit"}
	out, err = sub.Output()
	if err != nil || !strings.Contains(string(out), "fleet h2: done (exit 0)") {
		t.Errorf("tai fleet run --submit: %v\n%s", err, out)
	}
}
