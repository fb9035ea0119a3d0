// Package fleet_test runs the real tai binary's fleet and worktree commands
// on real git repositories, with the built-in agent.
package fleet_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tai-dev/tai/e2e/internal/auditlog"
	"github.com/tai-dev/tai/e2e/internal/build"
	"github.com/tai-dev/tai/e2e/internal/killgit"
	"github.com/tai-dev/tai/sandbox"
)

var (
	taiBin   string
	stateDir string
)

func TestMain(m *testing.M) {
	build.Main(m, "tai-e2e-fleet-", func(_ string, bins []string) { taiBin = bins[0] }, build.Tai)
}

// gitRepo makes a repository, and a fresh state directory for the test's
// fleet runs (tests do not run in parallel).
func gitRepo(t *testing.T) string {
	t.Helper()
	stateDir = t.TempDir()
	dir := t.TempDir()
	for _, a := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "T"}} {
		git(t, dir, a...)
	}
	write(t, filepath.Join(dir, "README"), "hi\n")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "init")
	return dir
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tai runs tai as a user would, under the default sandbox. A test whose
// agents report to it through files or FIFOs outside their worktrees
// gives them that directory the way a user would: --sandbox-write DIR.
func tai(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command(taiBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+stateDir, "NO_COLOR=1")
	return cmd
}

func runTai(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := tai(dir, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

type summary struct {
	Status   string         `json:"status"`
	ExitCode int            `json:"exit_code"`
	Target   string         `json:"target"`
	Audit    string         `json:"audit"`
	Counts   map[string]int `json:"counts"`
	Tasks    []struct {
		ID            string   `json:"id"`
		Status        string   `json:"status"`
		Attempts      int      `json:"attempts"`
		Branch        string   `json:"branch"`
		ConflictFiles []string `json:"conflict_files"`
	} `json:"tasks"`
}

// A 20-task DAG (a binary tree of dependencies plus joins), 4 at a time,
// each task writing its own file through the built-in agent: all merged
// into the target in dependency order; JSON summary and JUnit for CI.
func TestTwentyTaskDAG(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	var plan strings.Builder
	// policy approve: all: the tasks write files, which the default approve-reads denies.
	plan.WriteString("name: twenty\npolicy: {approve: all}\nconcurrency: 4\nbudget: {tokens: 100000, turns: 40}\ntasks:\n")
	for i := range 20 {
		write(t, filepath.Join(pd, fmt.Sprintf("t%02d.yaml", i)), fmt.Sprintf(
			"steps:\n  - text: \"task %02d\"\n  - write: {path: f%02d.txt, content: \"file %02d\\n\"}\n  - usage: {used: 50, size: 1000}\n", i, i, i))
		fmt.Fprintf(&plan, "  - id: t%02d\n    script: t%02d.yaml\n", i, i)
		var deps []string
		if i > 0 {
			deps = append(deps, fmt.Sprintf("t%02d", (i-1)/2))
		}
		if i >= 15 {
			deps = append(deps, fmt.Sprintf("t%02d", i-5))
		}
		if len(deps) > 0 {
			fmt.Fprintf(&plan, "    depends_on: [%s]\n    prompt: \"after {{ .Tasks.%s.Diff }}\"\n", strings.Join(deps, ", "), deps[0])
		} else {
			plan.WriteString("    prompt: root\n")
		}
	}
	write(t, filepath.Join(pd, "plan.yaml"), plan.String())
	junit := filepath.Join(pd, "fleet.xml")
	out, errOut, code := runTai(t, repo, "fleet", "run", "--run-id", "dag20", "-C", repo, "--output", "json", "--junit", junit, filepath.Join(pd, "plan.yaml"))
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var s summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if s.Counts["merged"] != 20 || s.Status != "done" {
		t.Fatalf("summary %+v", s)
	}
	files := git(t, repo, "ls-tree", "--name-only", s.Target)
	if n := strings.Count(files, ".txt"); n != 20 {
		t.Fatalf("%d files on %s:\n%s", n, s.Target, files)
	}
	// Each task's commit comes after its dependencies' on the target.
	pos := map[string]int{}
	for i, l := range strings.Fields(git(t, repo, "log", "--reverse", "--format=%(trailers:key=Tai-Fleet-Task,valueonly)", s.Target)) {
		pos[l] = i
	}
	for i := 1; i < 20; i++ {
		if pos[fmt.Sprintf("t%02d", i)] < pos[fmt.Sprintf("t%02d", (i-1)/2)] {
			t.Fatalf("t%02d merged before its dependency", i)
		}
	}
	if st := git(t, repo, "status", "--porcelain"); st != "" {
		t.Fatalf("user's checkout changed: %s", st)
	}
	// JUnit XML is well-formed and counts every task.
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var suite struct {
		XMLName  xml.Name `xml:"testsuite"`
		Tests    int      `xml:"tests,attr"`
		Failures int      `xml:"failures,attr"`
		Cases    []struct {
			Name string `xml:"name,attr"`
		} `xml:"testcase"`
	}
	if err := xml.Unmarshal(b, &suite); err != nil || suite.Tests != 20 || suite.Failures != 0 || len(suite.Cases) != 20 {
		t.Fatalf("junit: %v %+v", err, suite)
	}
	if o, e, c := runTai(t, repo, "audit", "verify", s.Audit); c != 0 || strings.Contains(o, "no run.end") {
		t.Fatalf("audit verify: %s %s", o, e)
	}
	// Everything is merged, and the run removed its worktrees and
	// branches: nothing is left for gc, nothing with a stale owner.
	o, _, c := runTai(t, repo, "worktree", "list")
	if c != 0 || strings.Contains(o, "dag20") {
		t.Fatalf("worktrees left after a successful run:\n%s", o)
	}
	if br := git(t, repo, "branch", "--list", "tai/dag20/*"); br != "" {
		t.Fatalf("branches left: %s", br)
	}
}

// kill -9 in the middle, then resume: no finished task runs again, no
// worktree or branch is lost.
func TestKill9ThenResume(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	counts := t.TempDir()
	var plan strings.Builder
	// policy approve: all: the tasks write files, which the default approve-reads denies.
	plan.WriteString("name: kill\npolicy: {approve: all}\nconcurrency: 6\ntasks:\n")
	for i := range 5 {
		id := fmt.Sprintf("q%d", i)
		write(t, filepath.Join(pd, id+".yaml"), fmt.Sprintf(
			"steps:\n  - run: {command: sh, args: [\"-c\", \"echo x >> %s/%s\"]}\n  - write: {path: %s.txt, content: \"%s\\n\"}\n  - text: done\n", counts, id, id, id))
		fmt.Fprintf(&plan, "  - {id: %s, script: %s.yaml, prompt: go}\n", id, id)
	}
	// slow: the first time it writes, then works "forever"; the second time it finishes.
	// It tells the test it has done its partial work through a FIFO
	// (blocking, so no sleeping or polling).
	fifo := filepath.Join(counts, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(pd, "hang.yaml"), fmt.Sprintf("steps:\n  - write: {path: slow-partial.txt, content: \"partial\\n\"}\n  - run: {command: sh, args: [\"-c\", \"echo x >> %s/slow; echo ready > %s\"]}\n  - delay: 3600\n", counts, fifo))
	write(t, filepath.Join(pd, "finish.yaml"), fmt.Sprintf("steps:\n  - run: {command: sh, args: [\"-c\", \"echo x >> %s/slow\"]}\n  - write: {path: slow.txt, content: \"slow\\n\"}\n  - text: done\n", counts))
	write(t, filepath.Join(pd, "last.yaml"), "steps:\n  - write: {path: last.txt, content: \"last\\n\"}\n")
	marker := filepath.Join(counts, "slow-started")
	fmt.Fprintf(&plan, "  - id: slow\n    agent_cmd: \"sh -c 'if [ -e %s ]; then exec %s agent builtin --script %s; else touch %s; exec %s agent builtin --script %s; fi'\"\n    prompt: go\n  - {id: last, script: last.yaml, prompt: \"after {{ .Tasks.slow.Message }}\", depends_on: [slow, q1]}\n",
		marker, taiBin, filepath.Join(pd, "finish.yaml"), marker, taiBin, filepath.Join(pd, "hang.yaml"))
	write(t, filepath.Join(pd, "plan.yaml"), plan.String())

	// The agents count their runs, and slow says it is ready through a
	// FIFO, in counts: given to them as a user would, a write root.
	cmd := tai(repo, "fleet", "run", "--run-id", "kill9", "-C", repo, "--sandbox-write", counts, filepath.Join(pd, "plan.yaml"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A file, not a pipe: agents that outlive the kill hold their stderr
	// open, and Wait would wait for them.
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait (by reading its progress, no sleeping) until the five quick
	// tasks are merged and slow is working.
	merged, slowStarted := 0, false
	var seen []string
	sc := bufio.NewScanner(stdout)
	for (merged < 5 || !slowStarted) && sc.Scan() {
		seen = append(seen, sc.Text())
		f := strings.Fields(sc.Text())
		if len(f) >= 3 && f[2] == "merged" {
			merged++
		}
		if len(f) >= 3 && f[1] == "slow" && f[2] == "started" {
			slowStarted = true
		}
	}
	if merged < 5 || !slowStarted {
		_ = cmd.Wait()
		errText, _ := os.ReadFile(stderr.Name())
		t.Fatalf("run ended early: merged %d, slow started %v\nprogress:\n%s\nstderr:\n%s", merged, slowStarted, strings.Join(seen, "\n"), errText)
	}
	// slow's agent has written its partial file once it says so.
	if b, err := os.ReadFile(fifo); err != nil || strings.TrimSpace(string(b)) != "ready" {
		t.Fatalf("fifo: %q %v", b, err)
	}
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// The agents lose their stdin and go; kill the group to be sure.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)

	o, _, _ := runTai(t, repo, "fleet", "status", "kill9")
	if !strings.Contains(o, "interrupted (resume with: tai fleet resume kill9)") {
		t.Fatalf("status:\n%s", o)
	}
	out, errOut, code := runTai(t, repo, "fleet", "resume", "kill9", "--sandbox-write", counts, "--output", "json")
	if code != 0 {
		t.Fatalf("resume exit %d\n%s\n%s", code, out, errOut)
	}
	var s summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	if s.Counts["merged"] != 7 {
		t.Fatalf("counts %v", s.Counts)
	}
	for i := range 5 {
		b, _ := os.ReadFile(filepath.Join(counts, fmt.Sprintf("q%d", i)))
		if n := strings.Count(string(b), "x"); n != 1 {
			t.Fatalf("q%d ran %d times", i, n)
		}
	}
	b, _ := os.ReadFile(filepath.Join(counts, "slow"))
	if n := strings.Count(string(b), "x"); n != 2 {
		t.Fatalf("slow ran %d times, want 2 (killed, then resumed)", n)
	}
	// Its partial work from before the kill was kept in its worktree and merged.
	files := git(t, repo, "ls-tree", "--name-only", s.Target)
	for _, f := range []string{"q0.txt", "q4.txt", "slow.txt", "slow-partial.txt"} {
		if !strings.Contains(files, f) {
			t.Fatalf("%s missing on target:\n%s", f, files)
		}
	}
	// Everything merged: the successful resume removed the worktrees.
	if branches := git(t, repo, "branch", "--list", "tai/kill9/*"); branches != "" {
		t.Fatalf("branches left:\n%s", branches)
	}
	if _, err := os.Stat(filepath.Join(repo, ".tai", "worktrees", "kill9", "slow")); err == nil {
		t.Fatal("slow's worktree left behind")
	}
}

// kill -9 while tai's git works in a task's worktree: while it rebases
// the finished task onto the target (git's rebase left half-done, HEAD
// detached), while it commits the task's work (git's index lock left), or
// while it adds the task's worktree (the checkout's index lock left in the
// new gitdir). Resume undoes what the killed git left and merges, with
// every commit.
func TestKill9InGitThenResume(t *testing.T) {
	for _, c := range []struct{ sub, left string }{
		{killgit.Rebase, "rebase-merge"},
		{killgit.Add, "index.lock"},
		{killgit.WorktreeAdd, "index.lock"},
	} {
		t.Run(c.sub, func(t *testing.T) {
			repo, pd := gitRepo(t), t.TempDir()
			write(t, filepath.Join(pd, "a.yaml"), "steps:\n  - write: {path: a.txt, content: \"a\\n\"}\n  - text: done\n")
			// policy approve: all: the tasks write files, which the default approve-reads denies.
			write(t, filepath.Join(pd, "plan.yaml"), "name: mk\npolicy: {approve: all}\ntasks:\n  - {id: a, script: a.yaml, prompt: go}\n")
			// The sandbox on, as by default: tai's own git is not the agent's.
			cmd := tai(repo, "fleet", "run", "--run-id", "mk", "-C", repo, filepath.Join(pd, "plan.yaml"))
			cmd.Env = killgit.Env(t, cmd.Env, c.sub)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			out, err := os.Create(filepath.Join(t.TempDir(), "out"))
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the stand-in's sleep
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
				b, _ := os.ReadFile(out.Name())
				t.Fatalf("tai was not killed in git %s: %v\n%s", c.sub, cmd.ProcessState, b)
			}
			worktrees := filepath.Join(repo, ".git", "worktrees", "*", c.left)
			if left, _ := filepath.Glob(worktrees); len(left) != 1 {
				t.Fatalf("no %s left: %v", c.left, left)
			}

			o, e, code := runTai(t, repo, "fleet", "resume", "mk", "--output", "json")
			if code != 0 {
				t.Fatalf("resume exit %d\n%s\n%s", code, o, e)
			}
			var s summary
			if err := json.Unmarshal([]byte(o), &s); err != nil {
				t.Fatal(err)
			}
			if s.Counts["merged"] != 1 {
				t.Fatalf("counts %v", s.Counts)
			}
			if files := git(t, repo, "ls-tree", "--name-only", s.Target); !strings.Contains(files, "a.txt") {
				t.Fatalf("a.txt missing on the target:\n%s", files)
			}
			if n := taskCommits(t, repo, s.Target, "a"); n != 1 {
				t.Fatalf("a's commit is on the target %d times", n)
			}
			if left, _ := filepath.Glob(worktrees); len(left) != 0 {
				t.Fatalf("%s left: %v", c.left, left)
			}
			if st := git(t, repo, "status", "--porcelain"); st != "" {
				t.Fatalf("user's checkout changed: %s", st)
			}
		})
	}
}

// An agent (here outside the sandbox, which would keep it off the
// repository's refs) that moves its worktree's HEAD: onto a branch of its
// own with a commit there, or to a detached HEAD. Its work is brought
// back onto the task's branch and merged; HEAD moved to a line without the
// task's commits fails the task, and both lines are kept.
func TestAgentThatMovesHEAD(t *testing.T) {
	for _, c := range []struct {
		name, sh string
		merged   bool
		files    []string
	}{
		{"own branch", "git checkout -q -b mine && echo c > c.txt && git add c.txt && git -c user.name=a -c user.email=a@b commit -qm c", true, []string{"a.txt", "c.txt"}},
		{"detached", "git checkout -q --detach", true, []string{"a.txt"}},
		{"unrelated line", "git checkout -q --orphan other && git rm -rfq . && echo x > x && git add x && git -c user.name=a -c user.email=a@b commit -qm other", false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo, pd := gitRepo(t), t.TempDir()
			write(t, filepath.Join(pd, "a.yaml"), fmt.Sprintf("steps:\n  - run: {command: sh, args: [-c, %q]}\n  - write: {path: a.txt, content: \"a\\n\"}\n  - text: done\n", c.sh))
			// policy approve: all: the tasks write files, which the default approve-reads denies.
			write(t, filepath.Join(pd, "plan.yaml"), "name: mv\npolicy: {approve: all}\ntasks:\n  - {id: a, script: a.yaml, prompt: go}\n")
			// --sandbox off: what is under test is tai's answer to an agent
			// that moved HEAD, which the sandbox would not let it do (the
			// repository's refs are outside the worktree).
			o, e, code := runTai(t, repo, "fleet", "run", "--run-id", "mv", "-C", repo, "--sandbox", "off", "--output", "json", filepath.Join(pd, "plan.yaml"))
			var s summary
			if err := json.Unmarshal([]byte(o), &s); err != nil {
				t.Fatalf("%v\n%s\n%s", err, o, e)
			}
			if !c.merged {
				if code != 1 || s.Counts["failed"] != 1 || !strings.Contains(e, "does not have tai/mv/a's commits") {
					t.Fatalf("exit %d, counts %v\n%s", code, s.Counts, e)
				}
				// Both lines are kept: the agent's branch and the task's.
				git(t, repo, "rev-parse", "--verify", "other")
				git(t, repo, "rev-parse", "--verify", "tai/mv/a")
				return
			}
			if code != 0 || s.Counts["merged"] != 1 {
				t.Fatalf("exit %d, counts %v\n%s", code, s.Counts, e)
			}
			files := git(t, repo, "ls-tree", "--name-only", s.Target)
			for _, f := range c.files {
				if !strings.Contains(files, f) {
					t.Errorf("%s missing on the target:\n%s", f, files)
				}
			}
		})
	}
}

// tai killed -9 while the plan's check runs: the check's whole tree goes
// with it, a background child too (the check runs through tai's
// launcher, whose cgroup takes the tree).
func TestKill9TakesTheCheck(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	write(t, filepath.Join(pd, "a.yaml"), "steps:\n  - write: {path: a.txt, content: \"a\\n\"}\n  - text: done\n")
	cmd, cache := taiUser(t, repo, "fleet", "run", "--run-id", "ck", "-C", repo, filepath.Join(pd, "plan.yaml"))
	// The check runs confined: the confined processes' own cache (its
	// XDG_CACHE_HOME) is a place outside its worktree it may write, for the
	// FIFO.
	private := filepath.Join(cache, "tai", "sandbox")
	if err := os.MkdirAll(private, 0o700); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(private, "pid")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// policy approve: all: the tasks write files, which the default approve-reads denies; the check is the subject.
	write(t, filepath.Join(pd, "plan.yaml"), fmt.Sprintf("name: ck\npolicy: {approve: all}\ncheck: \"sleep 6017 & echo $! > %s; wait\"\ntasks:\n  - {id: a, script: a.yaml, prompt: go}\n", fifo))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }()
	// Until the check has started its child; a fleet that ends first (the
	// check could not write the FIFO) opens it itself, so the read ends.
	exited := make(chan struct{})
	go func() {
		_, _ = cmd.Process.Wait()
		close(exited)
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
	}()
	b, err := os.ReadFile(fifo)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if len(b) == 0 {
			t.Fatal("the fleet ended before its check wrote to the FIFO")
		}
	default:
	}
	// The pid the check wrote is its own PID namespace's where processes
	// are hidden: the child is found here by its command line.
	if _, err := strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
		t.Fatal(err)
	}
	// The child may not have exec'd sleep yet: looked for again, a bounded
	// number of times (no timing is asserted).
	pid := 0
	for i := 0; pid == 0 && i < 3000; i++ {
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			if c, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && string(c) == "sleep\x006017\x00" {
				pid, _ = strconv.Atoi(e.Name())
			}
		}
		if pid == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if pid == 0 {
		out, _ := exec.Command("ps", "-eo", "pid,args").Output()
		t.Fatalf("the check's child is not running:\n%s", out)
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("the check's child %d: %v", pid, err)
	}
	defer unix.Close(pidfd)
	_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL) // tai alone, not its group
	<-exited
	// The pidfd is readable once the child has exited; the minute is a
	// guard against a hang only, not a timing.
	n, err := unix.Poll([]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}, 60_000)
	if err != nil || n != 1 {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the check's child %d outlived tai (poll %d, %v)", pid, n, err)
	}
}

// A conflict: exit 7, files named; the conflicting branch is kept, gc
// refuses to delete it, and allows it once squash-merged.
func TestConflictExit7AndGC(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	// Each waits for the other's worktree before it writes, so that both
	// start from the run's base whatever the machine's load: a task
	// started after the other merged would start from the merge.
	for id, other := range map[string]string{"x": "y", "y": "x"} {
		write(t, filepath.Join(pd, id+".yaml"), fmt.Sprintf("steps:\n  - run: {command: sh, args: [-c, 'until [ -d ../%s ]; do sleep 0.01; done'], ask: false}\n  - write: {path: same.txt, content: \"from %s\\n\"}\n", other, id))
	}
	// policy approve: all: the tasks write files, which the default approve-reads denies; the conflict is the subject.
	write(t, filepath.Join(pd, "plan.yaml"), "policy: {approve: all}\ntasks:\n  - {id: x, script: x.yaml, prompt: x}\n  - {id: y, script: y.yaml, prompt: y}\n")
	_, errOut, code := runTai(t, repo, "fleet", "run", "--run-id", "conf", "-C", repo, filepath.Join(pd, "plan.yaml"))
	if code != 7 || !strings.Contains(errOut, "merge conflict in same.txt") {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	// The task's line is reported as every error is: one prefix.
	if !regexp.MustCompile(`(?m)^tai: fleet: task [xy]: merge conflict in same\.txt \(branch \S+ kept\)( \(exit 7, merge_conflict\))?$`).MatchString(errOut) {
		t.Fatalf("the conflict is not reported with the one prefix:\n%s", errOut)
	}
	st, _, _ := runTai(t, repo, "fleet", "status", "conf", "--json")
	var s summary
	if err := json.Unmarshal([]byte(st), &s); err != nil {
		t.Fatal(err)
	}
	var loser string
	for _, ts := range s.Tasks {
		if ts.Status == "conflict" {
			loser = ts.ID
		}
	}
	if loser == "" {
		t.Fatalf("no conflict in %s", st)
	}
	o, _, _ := runTai(t, repo, "worktree", "gc")
	if !strings.Contains(o, "kept "+filepath.Join(repo, ".tai", "worktrees", "conf", loser)) || !strings.Contains(o, "neither merged nor pushed") {
		t.Fatalf("gc:\n%s", o)
	}
	if !strings.Contains(git(t, repo, "branch", "--list", "tai/conf/"+loser), loser) {
		t.Fatal("gc deleted unmerged work")
	}
	// The user squash-merges it into main by hand: now gc may remove it.
	git(t, repo, "merge", "-q", "--squash", "tai/conf/"+loser)
	git(t, repo, "commit", "-q", "-m", "take "+loser)
	o, _, _ = runTai(t, repo, "worktree", "gc")
	if !strings.Contains(o, "removed "+filepath.Join(repo, ".tai", "worktrees", "conf", loser)) {
		t.Fatalf("gc after squash:\n%s", o)
	}
	if git(t, repo, "branch", "--list", "tai/conf/"+loser) != "" {
		t.Fatal("squash-merged branch not removed")
	}
}

// A fleet's audit log holds every task's sessions: each entry names its
// task, `audit show --task` selects one, and the run id finds the log.
func TestAuditEntriesNameTheTask(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	for _, id := range []string{"lint", "docs"} {
		write(t, filepath.Join(pd, id+".yaml"), fmt.Sprintf("steps:\n  - text: \"%s done\"\n", id))
	}
	// policy approve: all lets the tasks run unattended; the audit entries are the subject.
	write(t, filepath.Join(pd, "plan.yaml"), "policy: {approve: all}\ntasks:\n  - {id: lint, script: lint.yaml, prompt: lint it}\n  - {id: docs, script: docs.yaml, prompt: write docs}\n")
	if _, errOut, code := runTai(t, repo, "fleet", "run", "--run-id", "tasks", "-C", repo, filepath.Join(pd, "plan.yaml")); code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	out, errOut, code := runTai(t, repo, "audit", "show", "--task", "docs", "--kind", "prompt", "tasks")
	if code != 0 || !strings.Contains(out, "docs/") || !strings.Contains(out, "write docs") || strings.Contains(out, "lint") {
		t.Fatalf("audit show --task docs: exit %d\n%s%s", code, out, errOut)
	}
	all, _, _ := runTai(t, repo, "audit", "show", "-o", "json", "--kind", "prompt", "tasks")
	if strings.Count(all, `"task":"lint"`) != 1 || strings.Count(all, `"task":"docs"`) != 1 {
		t.Fatalf("prompt entries without their task:\n%s", all)
	}
	if v, _, code := runTai(t, repo, "audit", "verify", "tasks"); code != 0 {
		t.Fatalf("verify: exit %d %s", code, v)
	}
}

// A fleet agent that may only edit files (execute denied) rewrites its
// worktree's .git to point at a gitdir it made, with core.fsmonitor set to
// a command: tai's next git call there refuses to run, the command never
// runs, and the task fails saying why.
func TestGitDirRedirectRefused(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	marker := filepath.Join(t.TempDir(), "pwned")
	write(t, filepath.Join(pd, "evil.yaml"), fmt.Sprintf(`steps:
  - write: {path: work.txt, content: "work\n"}
  - write: {path: evil/HEAD, content: "ref: refs/heads/main\n"}
  - write: {path: evil/objects/keep, content: ""}
  - write: {path: evil/refs/keep, content: ""}
  - write: {path: evil/config, content: "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch %s\n"}
  - write: {path: .git, content: "gitdir: evil\n"}
  - text: done
`, marker))
	// policy approve: all, deny execute: the writes land and git's fsmonitor may not run a command.
	write(t, filepath.Join(pd, "plan.yaml"), "policy: {approve: all, deny: [execute]}\ntasks:\n  - {id: evil, script: evil.yaml, prompt: go}\n")
	out, errOut, code := runTai(t, repo, "fleet", "run", "--run-id", "gitdir", "-C", repo, filepath.Join(pd, "plan.yaml"))
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("tai's git ran the agent's fsmonitor command\n%s\n%s", out, errOut)
	}
	// Where the file service itself refuses to write .git, the redirect
	// never happens; otherwise tai's git refuses the worktree.
	if !strings.Contains(errOut, "does not point at its registered gitdir") {
		b, _ := os.ReadFile(filepath.Join(repo, ".tai", "worktrees", "gitdir", "evil", ".git"))
		if !strings.HasPrefix(string(b), "gitdir: "+filepath.Join(repo, ".git", "worktrees")) {
			t.Fatalf("exit %d: the .git was rewritten (%q) and tai did not refuse it\n%s\n%s", code, b, out, errOut)
		}
	} else if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(git(t, repo, "ls-tree", "-r", "--name-only", "tai-fleet/gitdir"), "work.txt") {
		t.Fatal("the tampered worktree's work was merged")
	}
}

// Eight independent tasks at -j 2, each owning only its own file, while
// the others merge into the target: every task's diff is its own file
// (the base it records is the commit it started from), so owns: passes
// and every dependent sees only its dependency's file.
func TestIndependentTasksSeeOnlyTheirOwnDiff(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	var plan strings.Builder
	// policy approve: all: the tasks write files, which the default approve-reads denies.
	plan.WriteString("policy: {approve: all}\nconcurrency: 2\ntasks:\n")
	for i := range 8 {
		write(t, filepath.Join(pd, fmt.Sprintf("t%d.yaml", i)), fmt.Sprintf("steps:\n  - write: {path: f%d.txt, content: \"%d\\n\"}\n  - text: done %d\n", i, i, i))
		fmt.Fprintf(&plan, "  - {id: t%d, script: t%d.yaml, prompt: go, owns: [f%d.txt]}\n", i, i, i)
	}
	write(t, filepath.Join(pd, "d.yaml"), "steps:\n  - write: {path: d.txt, content: \"d\\n\"}\n")
	plan.WriteString("  - {id: d, script: d.yaml, depends_on: [t7], owns: [d.txt], prompt: \"saw {{ .Tasks.t7.Diff }}\"}\n")
	write(t, filepath.Join(pd, "plan.yaml"), plan.String())
	out, errOut, code := runTai(t, repo, "fleet", "run", "--run-id", "indep", "-C", repo, "--output", "json", filepath.Join(pd, "plan.yaml"))
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var s summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	if s.Counts["merged"] != 9 {
		t.Fatalf("counts %v", s.Counts)
	}
	b, err := os.ReadFile(s.Audit)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "saw 1 file(s) changed, +1 -0: f7.txt") {
		t.Fatal("d's prompt did not get exactly t7's diff")
	}
}

// Two fleets started together on one new target: both succeed, their
// merges take turns, and the target has the work of both.
func TestTwoFleetsOneNewTarget(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	for _, f := range []string{"a", "b"} {
		write(t, filepath.Join(pd, f+".yaml"), fmt.Sprintf("steps:\n  - write: {path: %s.txt, content: \"%s\\n\"}\n", f, f))
		// policy approve: all: the tasks write files, which the default approve-reads denies.
		write(t, filepath.Join(pd, f+"-plan.yaml"), fmt.Sprintf("target: shared-target\npolicy: {approve: all}\ntasks:\n  - {id: %s1, script: %s.yaml, prompt: go}\n", f, f))
	}
	cmds := map[string]*exec.Cmd{}
	outs := map[string]*bytes.Buffer{}
	for _, f := range []string{"a", "b"} {
		cmd := tai(repo, "fleet", "run", "--run-id", "two-"+f, "-C", repo, filepath.Join(pd, f+"-plan.yaml"))
		var o bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &o
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[f], outs[f] = cmd, &o
	}
	for f, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("fleet %s: %v\n%s", f, err, outs[f])
		}
	}
	files := git(t, repo, "ls-tree", "--name-only", "shared-target")
	if !strings.Contains(files, "a.txt") || !strings.Contains(files, "b.txt") {
		t.Fatalf("target:\n%s", files)
	}
}

// A plan's problems are found when it is loaded: exit 2 with the file and
// line, before any worktree is made.
func TestPlanCheckedBeforeAnythingRuns(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	write(t, filepath.Join(pd, "ok.yaml"), "steps:\n  - text: ok\n")
	plan := filepath.Join(pd, "plan.yaml")
	// policy: approve: all is a valid policy; the task's bad policy (approve: sometimes) is the subject.
	write(t, plan, "policy: {approve: all}\ntasks:\n  - {id: ok, script: ok.yaml, prompt: go}\n  - {id: agent, agent: nosuch, prompt: go}\n  - {id: script, script: missing.yaml, prompt: go}\n  - id: pol\n    prompt: go\n    policy: {approve: sometimes}\n")
	_, errOut, code := runTai(t, repo, "fleet", "run", "--run-id", "bad", "-C", repo, plan)
	if code != 2 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for _, w := range []string{plan + `:4: task "agent": unknown agent "nosuch"`, plan + `:5: task "script": script:`, plan + `:8: task "pol": policy:`} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(repo, ".tai")); err == nil {
		t.Fatal("a worktree was made for a plan that does not load")
	}
	// Run from outside any repository (a fleet runs in the current
	// directory's): -C is named.
	other := t.TempDir()
	// policy approve: all: a valid plan; running outside a repository is the subject.
	write(t, filepath.Join(other, "plan.yaml"), "policy: {approve: all}\ntasks:\n  - {id: a, prompt: go}\n")
	_, errOut, code = runTai(t, other, "fleet", "run", filepath.Join(other, "plan.yaml"))
	if code != 2 || !strings.Contains(errOut, "-C") {
		t.Fatalf("exit %d, want 2 mentioning -C:\n%s", code, errOut)
	}
}

// A task's unknown driver is refused when the plan loads (exit 2, naming
// the task and the drivers), not when that task comes to run.
func TestPlanUnknownDriverRefusedAtLoad(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	plan := filepath.Join(pd, "plan.yaml")
	write(t, plan, "tasks:\n  - {id: first, prompt: go}\n  - {id: later, prompt: go, depends_on: [first], driver: telepathy}\n")
	_, errOut, code := runTai(t, repo, "fleet", "run", "--run-id", "drv", "-C", repo, plan)
	if code != 2 {
		t.Fatalf("exit %d, want 2\n%s", code, errOut)
	}
	if w := plan + `:3: task "later": unknown driver "telepathy" (drivers: acp, stream-json, pty, a2a)`; !strings.Contains(errOut, w) {
		t.Errorf("stderr lacks %q:\n%s", w, errOut)
	}
	if _, err := os.Stat(filepath.Join(repo, ".tai")); err == nil {
		t.Fatal("a worktree was made for a plan that does not load")
	}
}

// `tai fleet plan "goal"` works with its default agent, and the plan it
// saves runs.
func TestFleetPlanDefaultAgent(t *testing.T) {
	repo := gitRepo(t)
	out := filepath.Join(t.TempDir(), "plan.yaml")
	o, e, code := runTai(t, repo, "fleet", "plan", "--out", out, "add a greeting")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, o, e)
	}
	b, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(b), "add a greeting") {
		t.Fatalf("plan: %v\n%s", err, b)
	}
}

// The same redirect planted from outside while the agent works (whatever
// the file service allows): tai's next git call in the worktree refuses,
// naming why, and the planted command never runs.
func TestGitDirRedirectPlantedRefused(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	tmp := t.TempDir()
	marker, fifo := filepath.Join(tmp, "pwned"), filepath.Join(tmp, "go-on")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(pd, "w.yaml"), fmt.Sprintf("steps:\n  - write: {path: work.txt, content: \"work\\n\"}\n  - run: {command: cat, args: [%q]}\n  - text: done\n", fifo))
	// policy approve: all: the tasks write files, which the default approve-reads denies.
	write(t, filepath.Join(pd, "plan.yaml"), "policy: {approve: all}\ntasks:\n  - {id: w, script: w.yaml, prompt: go}\n")
	cmd := tai(repo, "fleet", "run", "--run-id", "planted", "-C", repo, filepath.Join(pd, "plan.yaml"))
	var o bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &o
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The agent blocks on the FIFO after writing work.txt: plant, then
	// let it finish. Opening the FIFO for writing waits for the agent.
	wt := filepath.Join(repo, ".tai", "worktrees", "planted", "w")
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	evil := filepath.Join(wt, "evil")
	for _, d := range []string{"objects", "refs"} {
		if err := os.MkdirAll(filepath.Join(evil, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(evil, "HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(evil, "config"), "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch "+marker+"\n")
	write(t, filepath.Join(wt, ".git"), "gitdir: evil\n")
	_, _ = f.WriteString("go\n")
	_ = f.Close()
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(o.String(), "does not point at its registered gitdir") {
		t.Fatalf("%v, want exit 1 naming the redirect\n%s", err, o.String())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("tai's git ran the planted fsmonitor command")
	}
}

// A fleet task's agent runs under the sandbox by default: a command it runs
// cannot write outside its worktree, and the task's own write lands.
func TestFleetTasksAreSandboxed(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	outside := filepath.Join(t.TempDir(), "escaped.txt")
	write(t, filepath.Join(pd, "s.yaml"), fmt.Sprintf("steps:\n  - write: {path: in.txt, content: \"in\\n\"}\n  - run: {command: sh, args: [\"-c\", \"echo x > %s\"]}\n  - text: done\n", outside))
	// policy approve: all: the tasks write files, which the default approve-reads denies; the sandbox is the subject.
	write(t, filepath.Join(pd, "plan.yaml"), "policy: {approve: all}\ntasks:\n  - {id: s, script: s.yaml, prompt: go}\n")
	cmd := tai(repo, "fleet", "run", "--run-id", "sandboxed", "-C", repo, filepath.Join(pd, "plan.yaml"))
	out, _ := cmd.CombinedOutput()
	if _, err := os.Stat(outside); err == nil {
		t.Fatalf("a fleet task's command wrote outside its worktree\n%s", out)
	}
	if !strings.Contains(git(t, repo, "ls-tree", "-r", "--name-only", "tai-fleet/sandboxed"), "in.txt") {
		t.Fatalf("the task's own write was not merged\n%s", out)
	}
}

// A plan's policy that denies reading a path reaches the kernel: a task's
// agent reads it through a command the policy cannot see into (a script
// that cats it), and Landlock refuses the read. Before the fleet built its
// sandbox from the task's policy, only tai's own reads were refused.
func TestFleetPolicyDenyReadReachesTheSandbox(t *testing.T) {
	if sandbox.ABI() < 1 {
		t.Skip("the kernel has no Landlock")
	}
	repo, pd := gitRepo(t), t.TempDir()
	secrets := t.TempDir()
	write(t, filepath.Join(secrets, "token.txt"), "SECRET-4242\n")
	script := fmt.Sprintf("cat %s > leaked.txt 2>&1\necho ran > ran.txt\n", filepath.Join(secrets, "token.txt"))
	steps, _ := json.Marshal(script)
	write(t, filepath.Join(pd, "s.yaml"), fmt.Sprintf("steps:\n  - write: {path: r.sh, content: %s}\n  - run: {command: sh, args: [r.sh]}\n  - text: done\n", steps))
	write(t, filepath.Join(pd, "plan.yaml"), fmt.Sprintf("policy: {approve: all, deny: [\"read:%s/**\"]}\ntasks:\n  - {id: s, script: s.yaml, prompt: go}\n", secrets))
	out, _ := tai(repo, "fleet", "run", "--run-id", "denyread", "-C", repo, filepath.Join(pd, "plan.yaml")).CombinedOutput()
	if got := git(t, repo, "show", "tai-fleet/denyread:ran.txt"); !strings.Contains(got, "ran") {
		t.Fatalf("the task's script did not run: %q\n%s", got, out)
	}
	if leaked := git(t, repo, "show", "tai-fleet/denyread:leaked.txt"); strings.Contains(leaked, "SECRET-4242") {
		t.Fatalf("the task's script read a path its plan's policy denies: %q\n%s", leaked, out)
	}
}

// taiUser runs tai as a user would: the default sandbox (no --sandbox
// flag), a HOME and XDG directories of the test's own. It returns the
// command and that HOME's cache directory.
func taiUser(t *testing.T, dir string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	home := t.TempDir()
	cache := filepath.Join(home, ".cache")
	if err := os.MkdirAll(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(taiBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_CACHE_HOME="+cache,
		"XDG_STATE_HOME="+stateDir, "NO_COLOR=1")
	return cmd, cache
}

// The plan's check runs what the agents wrote: an agent that rewrites the
// check's script (check: sh check.sh) to write outside its worktree has
// the write refused by the sandbox the check runs in, by default, and the
// audit log says how the check was confined. check_sandbox: off runs it
// unconfined, as the plan asks, with a warning.
func TestCheckRunsConfined(t *testing.T) {
	if sandbox.ABI() < 1 {
		t.Skip("the kernel has no Landlock")
	}
	for _, c := range []struct {
		name, extra string
		escaped     bool
	}{
		{"default", "", false},
		{"check_sandbox off", "check_sandbox: off\n", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo, pd := gitRepo(t), t.TempDir()
			write(t, filepath.Join(repo, "check.sh"), "test -f a.txt\n")
			git(t, repo, "add", "check.sh")
			git(t, repo, "commit", "-q", "-m", "check")
			marker := filepath.Join(t.TempDir(), "escaped")
			evil, _ := json.Marshal(fmt.Sprintf("echo pwned > %s\n", marker))
			write(t, filepath.Join(pd, "a.yaml"), fmt.Sprintf("steps:\n  - write: {path: a.txt, content: \"a\\n\"}\n  - write: {path: check.sh, content: %s}\n  - text: done\n", evil))
			// policy approve: all: the tasks write files, which the default approve-reads denies; the check's confinement is the subject.
			write(t, filepath.Join(pd, "plan.yaml"), "name: ck\npolicy: {approve: all}\ncheck: sh check.sh\n"+c.extra+"tasks:\n  - {id: a, script: a.yaml, prompt: go}\n")
			cmd, _ := taiUser(t, repo, "fleet", "run", "--run-id", "ck", "-C", repo, "--output", "json", filepath.Join(pd, "plan.yaml"))
			var o, e bytes.Buffer
			cmd.Stdout, cmd.Stderr = &o, &e
			_ = cmd.Run()
			code := cmd.ProcessState.ExitCode()
			var s summary
			if err := json.Unmarshal(o.Bytes(), &s); err != nil {
				t.Fatalf("%v\n%s\n%s", err, o.String(), e.String())
			}
			_, err := os.Stat(marker)
			if escaped := err == nil; escaped != c.escaped {
				t.Fatalf("the rewritten check wrote outside the worktree: %v, want %v (exit %d)\n%s", escaped, c.escaped, code, e.String())
			}
			var check map[string]any
			warned := false
			for _, en := range auditlog.Read(t, s.Audit) {
				var d map[string]any
				_ = json.Unmarshal(en.Data, &d)
				switch d["event"] {
				case "check":
					check = d
				case "warning":
					warned = warned || strings.Contains(fmt.Sprint(d["detail"]), "check_sandbox: off")
				}
			}
			if check == nil {
				t.Fatalf("no check entry in the audit log\n%s", e.String())
			}
			enabled := check["sandbox"].(map[string]any)["enabled"] == true
			if c.escaped {
				if code != 0 || enabled || !warned || !strings.Contains(e.String(), "check_sandbox: off") {
					t.Fatalf("exit %d, sandbox %v, warned %v in the audit log\n%s", code, check["sandbox"], warned, e.String())
				}
				return
			}
			// The check failed (its write refused), so the task did.
			if code != 1 || !enabled || s.Counts["failed"] != 1 || warned {
				t.Fatalf("exit %d, counts %v, sandbox %v\n%s", code, s.Counts, check["sandbox"], e.String())
			}
		})
	}
}

// As TestGitDirRedirectRefused, under the default sandbox and a user's
// HOME, the agent's command doing the rewrite (the sandbox lets it write
// its worktree's .git): the gitdir it points at has an fsmonitor and a
// hook that would write outside. tai's git refuses the worktree, neither
// runs, and the audit log has the refusal.
func TestGitDirRedirectRefusedSandboxed(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	marker := filepath.Join(t.TempDir(), "pwned")
	sh := fmt.Sprintf("mkdir -p evil/objects evil/refs evil/hooks && echo 'ref: refs/heads/main' > evil/HEAD && "+
		"printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = touch %s\\n' > evil/config && "+
		"printf '#!/bin/sh\\ntouch %s\\n' > evil/hooks/post-commit && chmod +x evil/hooks/post-commit && echo 'gitdir: evil' > .git", marker, marker)
	write(t, filepath.Join(pd, "s.yaml"), fmt.Sprintf("steps:\n  - write: {path: work.txt, content: \"work\\n\"}\n  - run: {command: sh, args: [-c, %q]}\n  - text: done\n", sh))
	// policy approve: all: the tasks write files, which the default approve-reads denies.
	write(t, filepath.Join(pd, "plan.yaml"), "policy: {approve: all}\ntasks:\n  - {id: s, script: s.yaml, prompt: go}\n")
	cmd, _ := taiUser(t, repo, "fleet", "run", "--run-id", "gd", "-C", repo, "--output", "json", filepath.Join(pd, "plan.yaml"))
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	_ = cmd.Run()
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("tai's git ran the agent's gitdir's command\n%s", e.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(e.String(), "does not point at its registered gitdir") {
		t.Fatalf("exit %d, want 1 naming the redirect\n%s", code, e.String())
	}
	var s summary
	if err := json.Unmarshal(o.Bytes(), &s); err != nil {
		t.Fatalf("%v\n%s", err, o.String())
	}
	found := false
	for _, en := range auditlog.Read(t, s.Audit) {
		found = found || strings.Contains(string(en.Data), "does not point at its registered gitdir")
	}
	if !found {
		t.Fatal("the refusal is not in the audit log")
	}
}

// A plan without a policy: runs under the default (approve-reads) with
// nobody to answer: the task's write is denied, nothing lands on the
// target, and the task fails naming the fix, the plan's policy:.
func TestFleetDefaultPolicyNamesTheFix(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	write(t, filepath.Join(pd, "w.yaml"), "steps:\n  - write: {path: w.txt, content: \"w\\n\"}\n  - text: done\n")
	write(t, filepath.Join(pd, "plan.yaml"), "tasks:\n  - {id: w, script: w.yaml, prompt: add w}\n")
	out, errOut, code := runTai(t, repo, "fleet", "run", "--run-id", "dflt", "-C", repo, "--output", "json", filepath.Join(pd, "plan.yaml"))
	var sum struct {
		Tasks []struct {
			ID, Status, Reason string
			ExitCode           int `json:"exit_code"`
		}
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("exit %d, not JSON: %v\n%s%s", code, err, out, errOut)
	}
	if code != 1 || len(sum.Tasks) != 1 || sum.Tasks[0].Status != "failed" || sum.Tasks[0].ExitCode != 5 ||
		!strings.Contains(sum.Tasks[0].Reason, "the plan's or the task's policy:") {
		t.Fatalf("exit %d, tasks %+v; want 1 and w failed (5) naming the plan's policy:\n%s", code, sum.Tasks, errOut)
	}
	if _, err := exec.Command("git", "-C", repo, "cat-file", "-e", "tai-fleet/dflt:w.txt").CombinedOutput(); err == nil {
		t.Fatal("the denied write landed on the target")
	}
	// The audit log has the denial, decided by the default policy.
	a, _, _ := runTai(t, repo, "audit", "show", "-o", "json", "--kind", "permission.decision", "dflt")
	if !strings.Contains(a, `"decision":"deny"`) || !strings.Contains(a, `"decided_by":"default"`) || !strings.Contains(a, "approve-reads") {
		t.Fatalf("no denial by the default policy in the audit log:\n%s", a)
	}
}

// TestAgentThatMovesHEAD's agent under the default sandbox: the
// repository's refs and HEAD are outside its worktree, so its git
// checkout is refused, the repository keeps no branch of the agent's, and
// the task's own write is merged.
func TestAgentCannotMoveHEADUnderTheSandbox(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	write(t, filepath.Join(pd, "a.yaml"), "steps:\n  - run: {command: sh, args: [-c, \"git checkout -q -b mine 2> err.txt\"]}\n  - write: {path: a.txt, content: \"a\\n\"}\n  - text: done\n")
	// policy approve: all: the task writes and runs git; the sandbox is the subject.
	write(t, filepath.Join(pd, "plan.yaml"), "name: mv\npolicy: {approve: all}\ntasks:\n  - {id: a, script: a.yaml, prompt: go}\n")
	o, e, code := runTai(t, repo, "fleet", "run", "--run-id", "mvs", "-C", repo, "--output", "json", filepath.Join(pd, "plan.yaml"))
	var s summary
	if err := json.Unmarshal([]byte(o), &s); err != nil {
		t.Fatalf("%v\n%s\n%s", err, o, e)
	}
	if code != 0 || s.Counts["merged"] != 1 {
		t.Fatalf("exit %d, counts %v\n%s", code, s.Counts, e)
	}
	if b := git(t, repo, "branch", "--list", "mine"); b != "" {
		t.Fatalf("the agent made a branch in the repository: %q", b)
	}
	// err.txt, committed with the task's work, is git's refusal.
	if msg := git(t, repo, "show", s.Target+":err.txt"); !strings.Contains(msg, "Permission denied") {
		t.Fatalf("git checkout in the sandbox said %q, want a refusal", msg)
	}
	if files := git(t, repo, "ls-tree", "--name-only", s.Target); !strings.Contains(files, "a.txt") {
		t.Fatalf("a.txt missing on the target:\n%s", files)
	}
}
