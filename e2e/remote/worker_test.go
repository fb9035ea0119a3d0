package remote_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// stderrLines gives a process's stderr lines (logged too), closed at its
// end.
func stderrLines(t *testing.T, cmd *exec.Cmd, name string) <-chan string {
	t.Helper()
	out, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan string, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			t.Log(name + ": " + sc.Text())
			ch <- sc.Text()
		}
	}()
	return ch
}

// untilLine reads lines until one contains want; it returns those read.
func untilLine(ctx context.Context, t *testing.T, lines <-chan string, want string) []string {
	t.Helper()
	var got []string
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("no line with %q in:\n%s", want, strings.Join(got, "\n"))
			}
			got = append(got, l)
			if strings.Contains(l, want) {
				return got
			}
		case <-ctx.Done():
			t.Fatalf("no line with %q (the guard ran out) in:\n%s", want, strings.Join(got, "\n"))
		}
	}
}

// tai worker as the README starts it (no --dir: its directory is the data
// directory's; the default sandbox; a user's HOME) says what it is: its
// name, URL, directory, slots and agents. Stopped by SIGTERM in the middle
// of a task, it says so and what it hands back: the task's work so far
// pushed, its lease released, and it exits 0. The task is not failed: it
// goes back on the queue, and another worker, started after, finishes it
// from that work (the script finishes at once when it finds it).
func TestWorkerSaysWhatItIsAndHandsBackOnStop(t *testing.T) {
	e, home := userEnv(t)
	// --listen: a free port (4222 may be taken on the test machine).
	url := firstLine(e, e.cmd(taiBin, "hub", "--listen", "127.0.0.1:0"))
	fifo := filepath.Join(t.TempDir(), "hold")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unblock(fifo) })
	sh := fmt.Sprintf("if [ -e wip.txt ]; then rm wip.txt; echo slow > slow.txt; else echo wip > wip.txt; exec cat %s >/dev/null; fi", fifo)
	repo := planRepo(t, map[string]string{
		"slow.yaml": fmt.Sprintf("steps:\n  - run: {command: sh, args: [-c, %q]}\n  - text: done\n", sh),
		"plan.yaml": "name: stop\npolicy: {approve: all}\ntasks:\n  - {id: slow, script: slow.yaml, prompt: go}\n", // policy approve: all: the tasks write and run commands, which the default approve-reads denies.
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a guard against a hang only
	defer cancel()

	w1 := e.cmd(taiBin, "worker", "--nats", url, "--name", "w1")
	w1Lines := stderrLines(t, w1, "w1")
	e.start(w1)
	start := untilLine(ctx, t, w1Lines, "ready:")
	dir := filepath.Join(home, ".local", "share", "tai", "worker", "w1")
	for _, want := range []string{"tai worker: w1 on " + url + ", directory " + dir, "tai worker: ready: 1 slot(s) for agents builtin"} {
		if !strings.Contains(strings.Join(start, "\n"), want) {
			t.Errorf("tai worker's start lines lack %q:\n%s", want, strings.Join(start, "\n"))
		}
	}

	coord := e.cmd(taiBin, "fleet", "run", "--nats", url, "--run-id", "h", "-C", repo, filepath.Join(repo, "plan.yaml"))
	lines := pipeLines(t, coord)
	e.start(coord)
	var mu sync.Mutex
	var events []string
	coordDone := make(chan struct{})
	go func() {
		defer close(coordDone)
		for l := range lines {
			t.Log("coordinator: " + l)
			mu.Lock()
			events = append(events, l)
			mu.Unlock()
		}
	}()

	// The agent has written its work in progress when it opens the FIFO;
	// held open, the FIFO keeps it there until the worker stops it.
	opened := make(chan *os.File, 1)
	go func() {
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			opened <- f
		}
	}()
	var hold *os.File
	select {
	case hold = <-opened:
	case <-ctx.Done():
		t.Fatal("the task's agent never reached its FIFO")
	}
	defer hold.Close()
	if err := w1.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var stop []string
	for l := range w1Lines {
		stop = append(stop, l)
	}
	if err := w1.Wait(); err != nil {
		t.Errorf("tai worker after SIGTERM: %v, want exit 0", err)
	}
	said := strings.Join(stop, "\n")
	for _, want := range []string{"tai worker: stopping: handing back the 1 task(s)",
		"tai worker: handed back task slow of run h (attempt 1): lease released, work so far pushed to refs/tai/h/slow/1",
		"tai worker: stopped"} {
		if !strings.Contains(said, want) {
			t.Errorf("tai worker's stop lines lack %q:\n%s", want, said)
		}
	}

	// Another worker (its own default directory) takes it over.
	w2 := e.cmd(taiBin, "worker", "--nats", url, "--name", "w2")
	w2.Stderr = &prefixWriter{t: t, p: "w2"}
	e.start(w2)
	select {
	case <-coordDone:
	case <-ctx.Done():
		t.Fatal("the fleet did not end")
	}
	if err := coord.Wait(); err != nil {
		t.Fatalf("tai fleet run --nats: %v", err)
	}
	mu.Lock()
	all := strings.Join(events, "\n")
	mu.Unlock()
	for _, want := range []string{"worker.handback w1: stopping: attempt 1 handed back", "worker.started w2: attempt 2 on w2 from the last checkpoint",
		"merged    attempt 2 -> tai-fleet/h"} {
		if !strings.Contains(all, want) {
			t.Errorf("the coordinator's events lack %q", want)
		}
	}
	if got := git(t, repo, "show", "tai-fleet/h:slow.txt"); got != "slow" {
		t.Errorf("slow.txt on the target: %q", got)
	}
	if out := git(t, repo, "ls-tree", "--name-only", "tai-fleet/h"); strings.Contains(out, "wip") {
		t.Errorf("work in progress left in the target:\n%s", out)
	}
}
