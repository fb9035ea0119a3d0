// Package remote_test runs fleets across processes through the real tai
// binary: a hub (tai hub running go.mod's nats-server or Debian's, or
// Debian's nats-server on its own), three tai worker processes with their
// own clones and state, one killed with kill -9 mid-task, one stopped with
// SIGSTOP past its lease, and the coordinator killed and resumed.
package remote_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tai-dev/tai/e2e/internal/auditlog"
	"github.com/tai-dev/tai/e2e/internal/build"
	"github.com/tai-dev/tai/e2e/internal/killgit"
	"github.com/tai-dev/tai/sandbox"
)

// taiBin is tai; natsServer the nats-server tai hub runs (go.mod's).
var taiBin, natsServer string

func TestMain(m *testing.M) {
	build.Main(m, "tai-e2e-remote-", func(_ string, bins []string) { taiBin, natsServer = bins[0], bins[1] }, build.Tai, build.NATSServer)
}

type env struct {
	t     testing.TB
	state string   // XDG_STATE_HOME of the coordinator
	env   []string // more of every process's environment
	procs []*exec.Cmd
}

func (e *env) cmd(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = append(append(os.Environ(), "XDG_STATE_HOME="+e.state, "NO_COLOR=1", "TAI_NATS_SERVER="+natsServer), e.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// start starts a long-running process, killed (its whole group) at the end.
func (e *env) start(cmd *exec.Cmd) {
	e.t.Helper()
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.procs = append(e.procs, cmd)
	e.t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
}

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// hubKind starts a NATS server with JetStream and returns its URL.
type hubKind func(e *env) string

// taiHub is `tai hub` on a free port, running go.mod's nats-server; its
// URL is its first stdout line.
func taiHub(e *env) string { return startTaiHub(e) }

// taiHubDebian is `tai hub` running Debian's nats-server (2.9): the
// oldest server it supports, whose start-up lines it reads.
func taiHubDebian(e *env) string { return startTaiHub(e, "--nats-server", debianServer(e)) }

func startTaiHub(e *env, args ...string) string {
	cmd := e.cmd(taiBin, append([]string{"hub", "--listen", "127.0.0.1:0", "--store", e.t.TempDir()}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	e.start(cmd)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		e.t.Fatalf("tai hub: %v", err)
	}
	return strings.TrimSpace(line)
}

// debianServer is Debian's nats-server, or skips the test (fails it on CI).
func debianServer(e *env) string {
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			e.t.Fatal("nats-server is not installed but CI is set (.ci/run installs it)")
		}
		e.t.Skip("nats-server is not installed (apt-get install nats-server)")
	}
	return bin
}

// debianHub is Debian's nats-server (2.9), started as the issue says; it
// is ready when it logs so.
func debianHub(e *env) string {
	bin := debianServer(e)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := e.cmd(bin, "-js", "-sd", e.t.TempDir(), "-a", "127.0.0.1", "-p", fmt.Sprint(port))
	errOut, err := cmd.StderrPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	e.start(cmd)
	sc := bufio.NewScanner(errOut)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "Server is ready") {
			go func() { _, _ = io.Copy(io.Discard, errOut) }()
			return fmt.Sprintf("nats://127.0.0.1:%d", port)
		}
	}
	e.t.Fatalf("nats-server ended before it was ready: %v", sc.Err())
	return ""
}

func TestFleetOverNATS(t *testing.T) {
	for name, hub := range map[string]hubKind{"tai-hub": taiHub, "tai-hub-debian-server": taiHubDebian, "debian-nats-server": debianHub} {
		t.Run(name, func(t *testing.T) { testFleet(t, hub) })
	}
}

// unblock lets every reader of the FIFO at p go on (none: nothing to do).
func unblock(p string) {
	f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err == nil {
		f.Close()
	}
}

func testFleet(t *testing.T, hub hubKind) {
	e := &env{t: t, state: t.TempDir()}
	url := hub(e)

	// The repository and plan. "a" and "b" block (on a FIFO) in their
	// first attempt after writing work in progress; an attempt that starts
	// from that checkpoint finishes at once. "last" waits for the test.
	repo := t.TempDir()
	fifos := t.TempDir()
	for _, a := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "T"}} {
		git(t, repo, a...)
	}
	for _, f := range []string{"a", "b", "last"} {
		if err := syscall.Mkfifo(filepath.Join(fifos, f), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unblock(filepath.Join(fifos, f)) })
	}
	files := map[string]string{"README": "hi\n"}
	// policy approve: all: the tasks write and run commands, which the default approve-reads denies.
	plan := "name: remote\npolicy: {approve: all}\ntasks:\n"
	var simple []string
	for i := range 6 {
		id := fmt.Sprintf("s%d", i)
		simple = append(simple, id)
		files[id+".yaml"] = fmt.Sprintf("steps:\n  - write: {path: %s.txt, content: \"%s\\n\"}\n  - text: done\n", id, id)
		plan += fmt.Sprintf("  - {id: %s, script: %s.yaml, prompt: %s}\n", id, id, id)
	}
	for _, id := range []string{"a", "b"} {
		sh := fmt.Sprintf("if [ -e wip-%[1]s.txt ]; then rm wip-%[1]s.txt; echo %[1]s > %[1]s.txt; else echo wip > wip-%[1]s.txt; exec cat %[2]s >/dev/null; fi", id, filepath.Join(fifos, id))
		files[id+".yaml"] = fmt.Sprintf("steps:\n  - run: {command: sh, args: [-c, %q]}\n  - text: done\n", sh)
		plan += fmt.Sprintf("  - {id: %s, script: %s.yaml, prompt: %s}\n", id, id, id)
	}
	files["last.yaml"] = fmt.Sprintf("steps:\n  - run: {command: sh, args: [-c, %q]}\n  - text: done\n", "cat "+filepath.Join(fifos, "last")+" >/dev/null; echo last > last.txt")
	plan += fmt.Sprintf("  - {id: last, script: last.yaml, prompt: last, depends_on: [a, b, %s]}\n", strings.Join(simple, ", "))
	files["plan.yaml"] = plan
	for f, c := range files {
		if err := os.WriteFile(filepath.Join(repo, f), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "init")

	workers := map[string]*exec.Cmd{}
	for i := range 3 {
		name := fmt.Sprintf("w%d", i)
		// --dir: three workers on one host, each with a directory of its
		// own (the default is TestHubIsClosedByDefault's).
		cmd := e.cmd(taiBin, "worker", "--nats", url, "--name", name, "--dir", t.TempDir(), "--lease", "2s")
		cmd.Stderr = &prefixWriter{t: t, p: name}
		e.start(cmd)
		workers[name] = cmd
	}

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute) // a guard against a hang only
	defer cancel()
	coord := e.cmd(taiBin, "fleet", "run", "--nats", url, "--lease", "2s", "--run-id", "r", "-C", repo, filepath.Join(repo, "plan.yaml"))
	lines := pipeLines(t, coord)
	e.start(coord)

	merged, started, attempt := map[string]int{}, map[string][]string{}, map[string]string{}
	// lost counts the attempts tai said it took back: a worker that saw
	// its lease go, or a late result the coordinator refused. On a busy
	// machine a live worker can miss its 2s lease; the promise is then that
	// the task runs again openly, never twice in silence, and merges once.
	lost := map[string]int{}
	// record counts what every coordinator reports. An attempt of a or b
	// that does not start from the checkpoint would block on its FIFO
	// until the guard: after a task's second start, every further one is
	// let through, to finish and fail the checks below instead.
	// a's first worker is killed at its checkpoint, whichever coordinator
	// reports it: on a busy machine it can come after the first one died.
	killedA := false
	record := func(ev event) {
		switch ev.kind {
		case "merged":
			merged[ev.task]++
			attempt[ev.task] = strings.Fields(ev.detail)[1]
		case "worker.lease.lost", "refused":
			lost[ev.task]++
		case "worker.started":
			started[ev.task] = appendNew(started[ev.task], ev.detail)
			if (ev.task == "a" || ev.task == "b") && len(started[ev.task]) == 2 {
				go letReadersThrough(ctx, filepath.Join(fifos, ev.task), -1)
			}
		case "worker.checkpoint":
			if w := strings.TrimSuffix(strings.Fields(ev.detail)[0], ":"); ev.task == "a" && len(started["a"]) == 1 && !killedA {
				killedA = true
				_ = syscall.Kill(-workers[w].Process.Pid, syscall.SIGKILL)
			}
		}
	}
	var stopped string
	refusedB := false
	for !refusedB {
		ev, ok := nextEvent(ctx, t, lines)
		if !ok {
			t.Fatal("the coordinator ended before the stopped worker's late result was refused")
		}
		record(ev)
		switch ev.kind {
		case "merged":
			if ev.task == "b" && stopped != "" {
				// b ran again elsewhere: the stopped worker goes on, past its lease.
				_ = syscall.Kill(-workers[stopped].Process.Pid, syscall.SIGCONT)
				unblock(filepath.Join(fifos, "b"))
			}
		case "worker.checkpoint":
			if ev.task == "b" && stopped == "" {
				stopped = strings.TrimSuffix(strings.Fields(ev.detail)[0], ":")
				_ = syscall.Kill(-workers[stopped].Process.Pid, syscall.SIGSTOP)
			}
		case "refused":
			if ev.task == "b" && strings.Contains(ev.detail, "attempt 1 by "+stopped) {
				refusedB = true
			}
		}
	}
	// The coordinator dies; another continues from JetStream's state.
	_ = syscall.Kill(-coord.Process.Pid, syscall.SIGKILL)
	// What it printed before it died counts: it acked those events, so the
	// next coordinator will not show them again. Read its output to the
	// end before Wait, which closes the pipe.
	for {
		ev, ok := nextEvent(ctx, t, lines)
		if !ok {
			break
		}
		record(ev)
	}
	_ = coord.Wait()
	resume := e.cmd(taiBin, "fleet", "resume", "r", "--nats", url)
	lines = pipeLines(t, resume)
	e.start(resume)
	// Every reader: an attempt of last that lost its lease to a busy
	// machine is followed by another, which must not block.
	go letReadersThrough(ctx, filepath.Join(fifos, "last"), -1)
	for {
		ev, ok := nextEvent(ctx, t, lines)
		if !ok {
			break
		}
		record(ev)
	}
	err := resume.Wait()
	if code := resume.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("tai fleet resume: exit %d (%v)", code, err)
	}

	all := append(append([]string{}, simple...), "a", "b", "last")
	for _, id := range all {
		if merged[id] != 1 {
			t.Errorf("task %s merged %d times", id, merged[id])
		}
		// No task ran twice in silence: it started once, but for the
		// killed a and the stopped b, and for an attempt tai said it took
		// back (lost); the merged attempt is the last one started.
		designed, taken := 1, lost[id]
		switch id {
		case "a":
			designed = 2 // its first worker was killed
		case "b":
			designed, taken = 2, taken-1 // its first worker was stopped, and its late result refused
		}
		// "last" may have started while no coordinator was there to see it.
		if id != "last" {
			if n := len(started[id]); n < designed || n-designed > taken {
				t.Errorf("task %s started %d times, want %d (+%d taken back): %q", id, n, designed, taken, started[id])
			}
			if want := fmt.Sprint(len(started[id])); attempt[id] != want {
				t.Errorf("task %s merged from attempt %s, want the last started, %s", id, attempt[id], want)
			}
		}
		if got := git(t, repo, "show", "tai-fleet/r:"+id+".txt"); got != id {
			t.Errorf("%s.txt on the target: %q", id, got)
		}
	}
	for _, id := range []string{"a", "b"} {
		if len(started[id]) == 2 && !strings.Contains(started[id][1], "from the last checkpoint") {
			t.Errorf("task %s's second attempt did not start from the checkpoint: %q", id, started[id][1])
		}
	}
	if n := len(strings.Split(git(t, repo, "log", "--format=%s", "main..tai-fleet/r"), "\n")); n != len(all) {
		t.Errorf("%d commits on the target, want %d", n, len(all))
	}
	if out := git(t, repo, "ls-tree", "--name-only", "tai-fleet/r"); strings.Contains(out, "wip-") {
		t.Errorf("work in progress left in the target:\n%s", out)
	}
	// fleet status reads what the coordinator mirrored.
	st := e.cmd(taiBin, "fleet", "status", "r")
	out, err := st.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "done") {
		t.Errorf("tai fleet status r: %v\n%s", err, out)
	}
}

// letReadersThrough lets n readers of the FIFO p through, one after the
// other (n < 0: every reader until ctx ends): it opens the FIFO for
// writing, which waits for a reader, and closes it, which the reader
// sees as its end.
func letReadersThrough(ctx context.Context, p string, n int) {
	go func() {
		<-ctx.Done()
		// Wakes the blocking open below, whose loop then ends.
		if f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}()
	for ; n != 0 && ctx.Err() == nil; n-- {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.Close()
	}
}

type event struct{ task, kind, detail string }

// pipeLines gives the progress lines a coordinator writes on stdout.
func pipeLines(t *testing.T, cmd *exec.Cmd) <-chan string {
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &prefixWriter{t: t, p: "coordinator"}
	ch := make(chan string)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

func nextEvent(ctx context.Context, t *testing.T, lines <-chan string) (event, bool) {
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return event{}, false
			}
			t.Log(l)
			f := strings.Fields(l)
			if len(f) < 3 {
				continue
			}
			return event{task: f[1], kind: f[2], detail: strings.Join(f[3:], " ")}, true
		case <-ctx.Done():
			t.Fatal(errors.New("the fleet hung"))
		}
	}
}

// prefixWriter logs a process's stderr in the test's log.
type prefixWriter struct {
	t testing.TB
	p string
}

func (w *prefixWriter) Write(b []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		w.t.Log(w.p + ": " + l)
	}
	return len(b), nil
}

// A worker confines a task's agent by the task's policy, as a local fleet
// does: a path the plan denies reading stays unreadable to a script the
// policy cannot see into.
func TestWorkerSandboxHasThePlansDenyRead(t *testing.T) {
	if sandbox.ABI() < 1 {
		t.Skip("the kernel has no Landlock")
	}
	e := &env{t: t, state: t.TempDir()}
	url := taiHub(e)
	secrets := t.TempDir()
	if err := os.WriteFile(filepath.Join(secrets, "token.txt"), []byte("SECRET-4242\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sh := fmt.Sprintf("cat %s > leaked.txt 2>&1\necho ran > ran.txt\n", filepath.Join(secrets, "token.txt"))
	repo := planRepo(t, map[string]string{
		"s.yaml":    fmt.Sprintf("steps:\n  - write: {path: r.sh, content: %q}\n  - run: {command: sh, args: [r.sh]}\n  - text: done\n", sh),
		"plan.yaml": fmt.Sprintf("name: denyread\npolicy: {approve: all, deny: [\"read:%s/**\"]}\ntasks:\n  - {id: s, script: s.yaml, prompt: go}\n", secrets),
	})
	// --dir: a directory of this test's own, removed with it (the default
	// is TestHubIsClosedByDefault's).
	w := e.cmd(taiBin, "worker", "--nats", url, "--name", "w", "--dir", t.TempDir())
	w.Stderr = &prefixWriter{t: t, p: "w"}
	e.start(w)
	out, err := e.cmd(taiBin, "fleet", "run", "--nats", url, "--run-id", "d", "-C", repo, filepath.Join(repo, "plan.yaml")).CombinedOutput()
	if err != nil {
		t.Fatalf("tai fleet run: %v\n%s", err, out)
	}
	if got := git(t, repo, "show", "tai-fleet/d:ran.txt"); got != "ran" {
		t.Fatalf("the task's script did not run: %q\n%s", got, out)
	}
	if leaked := git(t, repo, "show", "tai-fleet/d:leaked.txt"); strings.Contains(leaked, "SECRET-4242") {
		t.Fatalf("the task's script read a path its plan's policy denies: %q\n%s", leaked, out)
	}
}

// appendNew appends a start once: a coordinator killed between showing a
// worker's event and acking it leaves the next one to show it again.
func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// The coordinator is killed in the middle of a merge: in git's rebase
// (left half-done in its merge worktree), or in the git worktree add that
// makes that worktree (the checkout's index lock left in the new gitdir,
// as found under load in TestFleetOverNATS). A resumed coordinator undoes
// it and merges.
func TestCoordinatorKilledInAMergeResumes(t *testing.T) {
	for _, c := range []struct{ sub, left string }{
		{killgit.Rebase, "rebase-merge"},
		{killgit.WorktreeAdd, "index.lock"},
	} {
		t.Run(c.sub, func(t *testing.T) { testCoordinatorKilledInGit(t, c.sub, c.left) })
	}
}

func testCoordinatorKilledInGit(t *testing.T, sub, left string) {
	e := &env{t: t, state: t.TempDir()}
	url := taiHub(e)
	repo := planRepo(t, map[string]string{
		"s.yaml":    "steps:\n  - write: {path: s.txt, content: \"s\\n\"}\n  - text: done\n",
		"plan.yaml": "name: killmerge\npolicy: {approve: all}\ntasks:\n  - {id: s, script: s.yaml, prompt: go}\n", // policy approve: all: the tasks write and run commands, which the default approve-reads denies.
	})
	// --dir: a directory of this test's own, removed with it (the default
	// is TestHubIsClosedByDefault's).
	w := e.cmd(taiBin, "worker", "--nats", url, "--name", "w", "--dir", t.TempDir())
	w.Stderr = &prefixWriter{t: t, p: "w"}
	e.start(w)

	coord := e.cmd(taiBin, "fleet", "run", "--nats", url, "--run-id", "k", "-C", repo, filepath.Join(repo, "plan.yaml"))
	coord.Env = killgit.Env(t, coord.Env, sub)
	out, _ := coord.CombinedOutput()
	_ = syscall.Kill(-coord.Process.Pid, syscall.SIGKILL) // the stand-in's sleep
	if ws, ok := coord.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the coordinator was not killed in git %s: %v\n%s", sub, coord.ProcessState, out)
	}
	glob := filepath.Join(repo, ".git", "worktrees", "*", left)
	if found, _ := filepath.Glob(glob); len(found) != 1 {
		t.Fatalf("no %s left: %v\n%s", left, found, out)
	}

	out, err := e.cmd(taiBin, "fleet", "resume", "k", "--nats", url).CombinedOutput()
	if err != nil {
		t.Fatalf("tai fleet resume: %v\n%s", err, out)
	}
	if got := git(t, repo, "show", "tai-fleet/k:s.txt"); got != "s" {
		t.Fatalf("s.txt on the target: %q\n%s", got, out)
	}
	if found, _ := filepath.Glob(glob); len(found) != 0 {
		t.Fatalf("%s left: %v", left, found)
	}
}

// planRepo makes a repository on main whose one commit holds files (a
// plan and its scripts).
func planRepo(t testing.TB, files map[string]string) string {
	t.Helper()
	repo := t.TempDir()
	for _, a := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "T"}} {
		git(t, repo, a...)
	}
	for f, c := range files {
		if err := os.WriteFile(filepath.Join(repo, f), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "init")
	return repo
}

// A task's agent on a worker (default sandbox, a user's HOME) points its
// worktree's .git at a gitdir of its own whose config runs a command
// (core.fsmonitor): the worker's git (checkpoint, final commit) refuses
// the worktree, the command never runs, and the task fails saying why,
// in the fleet's audit log too.
func TestWorkerRefusesARedirectedGitDir(t *testing.T) {
	home := t.TempDir()
	e := &env{t: t, state: t.TempDir(), env: []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache")}}
	url := taiHub(e)
	marker := filepath.Join(t.TempDir(), "pwned")
	sh := fmt.Sprintf("mkdir -p evil/objects evil/refs && echo 'ref: refs/heads/main' > evil/HEAD && "+
		"printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = touch %s\\n' > evil/config && echo 'gitdir: evil' > .git", marker)
	repo := planRepo(t, map[string]string{
		"s.yaml":    fmt.Sprintf("steps:\n  - write: {path: work.txt, content: \"work\\n\"}\n  - run: {command: sh, args: [-c, %q]}\n  - text: done\n", sh),
		"plan.yaml": "name: gitdir\npolicy: {approve: all}\ntasks:\n  - {id: s, script: s.yaml, prompt: go}\n", // policy approve: all: the tasks write and run commands, which the default approve-reads denies; the redirected git dir is the subject.
	})
	// --dir: a directory of this test's own, removed with it (the default
	// is TestHubIsClosedByDefault's).
	w := e.cmd(taiBin, "worker", "--nats", url, "--name", "w", "--dir", t.TempDir())
	w.Stderr = &prefixWriter{t: t, p: "w"}
	e.start(w)
	cmd := e.cmd(taiBin, "fleet", "run", "--nats", url, "--run-id", "g", "--output", "json", "-C", repo, filepath.Join(repo, "plan.yaml"))
	var o, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &errb
	err := cmd.Run()
	if _, serr := os.Stat(marker); serr == nil {
		t.Fatalf("the worker's git ran the agent's fsmonitor command\n%s", errb.String())
	}
	if err == nil || !strings.Contains(errb.String(), "does not point at its registered gitdir") {
		t.Fatalf("%v, want the task failed naming the redirect\n%s", err, errb.String())
	}
	var s struct {
		Audit string `json:"audit"`
	}
	if err := json.Unmarshal([]byte(o.String()), &s); err != nil {
		t.Fatalf("%v\n%s", err, o.String())
	}
	found := false
	for _, en := range auditlog.Read(t, s.Audit) {
		found = found || strings.Contains(string(en.Data), "does not point at its registered gitdir")
	}
	if !found {
		t.Fatal("the refusal is not in the fleet's audit log")
	}
}
