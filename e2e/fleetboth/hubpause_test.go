package fleetboth_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/e2e/internal/auditlog"
	"github.com/tai-dev/tai/e2e/internal/build"
	"github.com/tai-dev/tai/e2e/internal/userenv"
	"github.com/tai-dev/tai/fleet"
)

// hubRun is a run submitted to the coordinating hub of a user's machine
// (tai hub --coordinate, its default store and token), one worker with its
// default directory, followed with tai fleet logs -f.
type hubRun struct {
	t    *testing.T
	u    *userenv.User
	url  string
	run  string
	repo string
	logs *userenv.Daemon
}

// submitToHub starts the hub and a worker, submits plan.yaml of the
// repository's files (given the hub's URL; --detach: nobody follows it at
// a terminal) and follows its events.
func submitToHub(t *testing.T, run string, files func(url string) map[string]string, workerArgs ...string) *hubRun {
	u := userenv.New(t, taiBin, natsServer)
	hub := userenv.Start(t, u.Command(u.Home, "tai", "hub", "--coordinate", "--listen", "127.0.0.1:0"))
	url := hub.Line(t)
	if !strings.HasPrefix(url, "nats://127.0.0.1:") {
		t.Fatalf("tai hub's first line is not its URL: %q\n%s", url, hub.Stderr.String())
	}
	u.Worker(url, "w1", workerArgs...)
	repo := u.Repo("proj", files(url))
	if o := build.Run(t, taiBin, repo, u.Env, "fleet", "run", "--nats", url, "--detach", "--run-id", run, "plan.yaml"); o.Code != 0 || strings.TrimSpace(o.Stdout) != run {
		t.Fatalf("tai fleet run --detach: exit %d\n%s\n%s", o.Code, o.Stdout, o.Stderr)
	}
	logs := userenv.Start(t, u.Command(repo, "tai", "fleet", "logs", run, "--nats", url, "-f", "-o", "json"))
	return &hubRun{t: t, u: u, url: url, run: run, repo: repo, logs: logs}
}

// event is the next event the run's follower shows; ok false at its end.
func (h *hubRun) event() (ev parkEvent, ok bool) {
	for {
		l, err := h.logs.Stdout.ReadString('\n')
		if err != nil {
			return parkEvent{}, false
		}
		if json.Unmarshal([]byte(l), &ev) == nil && ev.Event != "" {
			h.t.Logf("event: %s %s %s", ev.Event, ev.Task, ev.Detail)
			return ev, true
		}
	}
}

// until reads events until want says one is it.
func (h *hubRun) until(what string, want func(parkEvent) bool) {
	h.t.Helper()
	for {
		ev, ok := h.event()
		if !ok {
			st := build.Run(h.t, taiBin, h.repo, h.u.Env, "fleet", "status", h.run, "--nats", h.url)
			h.t.Fatalf("the run's events ended before %s; fleet status:\n%s%s", what, st.Stdout, st.Stderr)
		}
		if want(ev) {
			return
		}
	}
}

// hands are the run's hands by hand in its audit log on the hub's host.
func (h *hubRun) hands() []string {
	var hands []string
	for _, e := range auditlog.Read(h.t, h.u.State("fleet", h.run, "audit.jsonl")) {
		if e.Kind != audit.KindFeedHand {
			continue
		}
		var d struct{ Action, Via, Client string }
		if err := json.Unmarshal(e.Data, &d); err != nil {
			h.t.Fatal(err)
		}
		hands = append(hands, d.Action+" via "+d.Via+" by "+d.Client)
	}
	return hands
}

// A run the hub coordinates (submitted with --detach) is paused and
// released by hand: tai fleet pause RUN --nats URL, through the hub, parks
// its running task (its worker stops it and hands it back parked) and
// launches nothing more (the task waiting for the one slot is not
// launched: its account is parked); tai fleet pause RUN on the hub's host
// goes through the run's live feed there; tai fleet resume RUN --nats URL
// releases it: the task resumes its own session and both merge. The hub's
// audit log of the run records each hand and who asked.
// Default sandbox, no --dir, user-like HOME; nothing waits on a clock.
func TestHubRunPausedAndReleasedByHand(t *testing.T) {
	dir := t.TempDir()
	gate := filepath.Join(dir, "go")
	files := map[string]string{
		// concurrency 1: the task that waits for the running one's slot
		// must not get it when the pause frees it. stagger 1ms: the default
		// 10s between resumes would make the test wait. policy approve:
		// all: the tasks write files and run a command, which approve-reads
		// denies.
		"plan.yaml": "name: hubpause\nconcurrency: 1\nquota: {stagger: 1ms}\npolicy: {approve: all}\ntasks:\n" +
			"  - {id: t1, script: t1.yaml, prompt: \"task t1\"}\n  - {id: t2, script: t2.yaml, prompt: \"task t2\"}\n",
	}
	started := make(chan string, 2)
	for _, id := range []string{"t1", "t2"} {
		// Each task, in its agent's command, says it runs through its
		// named pipe, then waits until the test lets it go; once let go,
		// it goes on at once.
		fifo := filepath.Join(dir, "started-"+id)
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		files[id+".yaml"] = fmt.Sprintf("steps:\n  - text: working\n  - run: {command: sh, args: [-c, '[ -e %[1]s ] || { echo %[2]s > %[3]s; until [ -e %[1]s ]; do sleep 0.05; done; }']}\n"+
			"  - write: {path: %[2]s.txt, content: \"%[2]s\\n\"}\n  - text: done\n", gate, id, fifo)
		go func() {
			if b, err := os.ReadFile(fifo); err == nil { // blocks until the agent writes
				started <- strings.TrimSpace(string(b))
			}
		}()
		t.Cleanup(func() {
			// The reader of a task that never said it ran is let go.
			if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		})
	}
	// --sandbox-write: the agents write the test's named pipes, outside
	// their worktrees.
	h := submitToHub(t, "hubpause", func(string) map[string]string { return files }, sandboxWrite(dir)...)
	running := <-started
	waiting := map[string]string{"t1": "t2", "t2": "t1"}[running]

	asked := time.Now() // for the log only: how long a pause through the hub takes here
	o := build.Run(t, taiBin, h.repo, h.u.Env, "fleet", "pause", h.run, "--nats", h.url)
	if o.Code != 0 || !strings.Contains(o.Stdout, "park at once") {
		t.Fatalf("tai fleet pause --nats: exit %d\n%s\n%s", o.Code, o.Stdout, o.Stderr)
	}
	t.Logf("tai fleet pause --nats answered in %v", time.Since(asked))
	parked, held := false, false
	h.until(running+" parked and "+waiting+" held", func(ev parkEvent) bool {
		switch {
		case ev.Event == "parked" && ev.Task == running && strings.HasPrefix(ev.Detail, "parked with its account"):
			parked = true
		case ev.Event == "parked" && ev.Task == waiting && strings.HasPrefix(ev.Detail, "not launched"):
			held = true
		case ev.Event == "offered" && ev.Task == waiting:
			t.Errorf("%s offered while the run is paused: %s", waiting, ev.Detail)
		}
		return parked && held
	})
	t.Logf("%s handed back parked %v after the pause was asked", running, time.Since(asked))

	// Let go before the release: the resumed tasks go on at once.
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// On the hub's host the run's live feed there takes a hand too (the
	// entry tai hub --serve's page takes): paused already, it stays so.
	o = build.Run(t, taiBin, h.repo, h.u.Env, "fleet", "pause", h.run)
	if o.Code != 0 || !strings.Contains(o.Stdout, "park at once") {
		t.Fatalf("tai fleet pause on the hub's host: exit %d\n%s\n%s", o.Code, o.Stdout, o.Stderr)
	}
	o = build.Run(t, taiBin, h.repo, h.u.Env, "fleet", "resume", h.run, "--nats", h.url)
	if o.Code != 0 || !strings.Contains(o.Stdout, "resume now") {
		t.Fatalf("tai fleet resume --nats: exit %d\n%s\n%s", o.Code, o.Stdout, o.Stderr)
	}
	resumed := false
	h.until("the run's end", func(ev parkEvent) bool {
		if ev.Event == "resumed" && ev.Task == running {
			resumed = true
			if !strings.Contains(ev.Detail, "in its own session") {
				t.Errorf("%s resumed: %s", running, ev.Detail)
			}
		}
		return ev.Event == "run.end" && ev.Task == ""
	})
	if !resumed {
		t.Errorf("%s never resumed", running)
	}
	st := fleetState(t, h.u, h.run)
	for _, id := range []string{"t1", "t2"} {
		if ts := st.Tasks[id]; ts == nil || ts.Status != fleet.StatusMerged {
			t.Errorf("%s: %+v", id, ts)
		}
	}
	hands := h.hands()
	if len(hands) != 3 || !strings.HasPrefix(hands[0], "pause via terminal by tai fleet pause on ") || !strings.Contains(hands[0], "through "+h.url) ||
		hands[1] != "pause via terminal by " || !strings.HasPrefix(hands[2], "release via terminal by tai fleet resume on ") {
		t.Errorf("the run's audit log records hands %q, want the pause through the hub, the one through the feed, the release through the hub", hands)
	}
}

// An agent of a run the hub coordinates, in the default sandbox, cannot
// pause or release its own run: not through the hub (tai fleet pause/resume
// RUN --nats URL: the hub's token is out of its reach), nor through the
// run's live feed on the hub's host. Its commands fail, nothing parks, no
// hand is recorded, and the run merges.
func TestHubRunAgentCannotPauseItsOwnRun(t *testing.T) {
	try := func(name, args string) string {
		return fmt.Sprintf("tai %s >%s.out 2>&1; echo \"exit $?\" >>%s.out; ", args, name, name)
	}
	// The agent's shell runs tai (on its PATH, as on the user's) with the
	// hub's URL.
	cmds := try("pause", "fleet pause hubatk --nats $URL") + try("resume", "fleet resume hubatk --nats $URL") + try("local", "fleet pause hubatk")
	h := submitToHub(t, "hubatk", func(url string) map[string]string {
		return map[string]string{
			"atk.yaml": fmt.Sprintf("steps:\n  - run: {command: sh, args: [-c, %q]}\n  - text: done\n", "URL="+url+"; "+cmds),
			// policy approve: all: the task runs commands and writes, which
			// approve-reads denies.
			"plan.yaml": "name: hubatk\npolicy: {approve: all}\ntasks:\n  - {id: atk, script: atk.yaml, prompt: \"task atk\"}\n",
		}
	})
	h.until("the run's end", func(ev parkEvent) bool {
		if ev.Event == "parked" || ev.Event == "resumed" {
			t.Errorf("the agent's hand went through: %s %s %s", ev.Event, ev.Task, ev.Detail)
		}
		return ev.Event == "run.end" && ev.Task == ""
	})
	st := fleetState(t, h.u, h.run)
	if ts := st.Tasks["atk"]; ts == nil || ts.Status != fleet.StatusMerged {
		t.Fatalf("atk: %+v", ts)
	}
	for _, name := range []string{"pause", "resume", "local"} {
		out := h.u.Git(h.repo, "show", st.Target+":"+name+".out")
		if !strings.Contains(out, "exit ") || strings.Contains(out, "exit 0") {
			t.Errorf("the agent's tai fleet %s: %s", name, out)
		}
		t.Logf("%s: %s", name, out)
	}
	if hands := h.hands(); len(hands) != 0 {
		t.Errorf("the run's audit log records hands %q, want none", hands)
	}
}

// A pause by hand outlives the hub: a run the hub coordinates is paused
// through it (tai fleet pause RUN --nats URL), then the hub (its
// nats-server with it) is killed with kill -9 and started again on its
// default store: its coordinator adopts the run again with the pause kept
// (its parks are in the run's state in the KV; no clock or resume ends a
// pause by hand), and only tai fleet resume RUN --nats URL releases it:
// the task resumes its own session and merges. Default sandbox, no --dir,
// user-like HOME.
func TestHubRunPauseOutlivesTheHub(t *testing.T) {
	u := userenv.New(t, taiBin, natsServer)
	// A fixed port: the worker and the clients reach the restarted hub
	// where they reached the first.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	url := "nats://" + addr
	startHub := func() *userenv.Daemon {
		d := userenv.Start(t, u.Command(u.Home, "tai", "hub", "--coordinate", "--listen", addr))
		if got := d.Line(t); got != url {
			t.Fatalf("tai hub's first line %q, want %s\n%s", got, url, d.Stderr.String())
		}
		return d
	}
	hub := startHub()
	dir := t.TempDir()
	gate, fifo := filepath.Join(dir, "go"), filepath.Join(dir, "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	go func() {
		if _, err := os.ReadFile(fifo); err == nil { // blocks until the agent writes
			close(started)
		}
	}()
	t.Cleanup(func() {
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	// --sandbox-write: the agent writes the test's named pipe, outside its
	// worktree.
	u.Worker(url, "w1", sandboxWrite(dir)...)
	repo := u.Repo("proj", map[string]string{
		// The task says it runs through the named pipe, then waits until the
		// test lets it go; once let go, it goes on at once.
		"t1.yaml": fmt.Sprintf("steps:\n  - text: working\n  - run: {command: sh, args: [-c, '[ -e %[1]s ] || { echo t1 > %[2]s; until [ -e %[1]s ]; do sleep 0.05; done; }']}\n"+
			"  - write: {path: t1.txt, content: \"t1\\n\"}\n  - text: done\n", gate, fifo),
		// policy approve: all: the task writes a file and runs a command,
		// which approve-reads denies.
		"plan.yaml": "name: hubkeep\npolicy: {approve: all}\ntasks:\n  - {id: t1, script: t1.yaml, prompt: \"task t1\"}\n",
	})
	const run = "hubkeep"
	if o := build.Run(t, taiBin, repo, u.Env, "fleet", "run", "--nats", url, "--detach", "--run-id", run, "plan.yaml"); o.Code != 0 {
		t.Fatalf("tai fleet run --detach: exit %d\n%s\n%s", o.Code, o.Stdout, o.Stderr)
	}
	<-started
	if o := build.Run(t, taiBin, repo, u.Env, "fleet", "pause", run, "--nats", url); o.Code != 0 {
		t.Fatalf("tai fleet pause --nats: exit %d\n%s\n%s", o.Code, o.Stdout, o.Stderr)
	}
	follow := func() *hubRun {
		return &hubRun{t: t, u: u, url: url, run: run, repo: repo, logs: userenv.Start(t, u.Command(repo, "tai", "fleet", "logs", run, "--nats", url, "-f", "-o", "json"))}
	}
	h := follow()
	h.until("t1 parked", func(ev parkEvent) bool {
		return ev.Event == "parked" && ev.Task == "t1" && strings.HasPrefix(ev.Detail, "parked with its account")
	})
	_ = h.logs.Stop()

	_ = syscall.Kill(-hub.Cmd.Process.Pid, syscall.SIGKILL)
	_ = hub.Wait()
	// Its nats-server, killed with it, may hold the port a moment longer.
	for i := 0; ; i++ {
		l, err := net.Listen("tcp", addr)
		if err == nil {
			l.Close()
			break
		}
		if i == 3000 {
			t.Fatalf("%s stayed taken after the hub was killed: %v", addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	startHub()
	h = follow()
	starts := 0 // the follower replays the run from its start: the second run.start is the restarted hub's
	h.until("the pause kept by the restarted hub", func(ev parkEvent) bool {
		if ev.Event == "run.start" {
			starts++
		}
		if starts == 2 && (ev.Event == "offered" || ev.Event == "resumed") {
			t.Fatalf("the restarted hub released the pause by itself: %s %s %s", ev.Event, ev.Task, ev.Detail)
		}
		return ev.Event == "parked" && ev.Task == "" && strings.Contains(ev.Detail, "by hand") && strings.Contains(ev.Detail, "kept from before its coordinator stopped")
	})
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if o := build.Run(t, taiBin, repo, u.Env, "fleet", "resume", run, "--nats", url); o.Code != 0 || !strings.Contains(o.Stdout, "resume now") {
		t.Fatalf("tai fleet resume --nats: exit %d\n%s\n%s", o.Code, o.Stdout, o.Stderr)
	}
	resumed := false
	h.until("the run's end", func(ev parkEvent) bool {
		if ev.Event == "resumed" && ev.Task == "t1" && strings.Contains(ev.Detail, "in its own session") {
			resumed = true
		}
		return ev.Event == "run.end" && ev.Task == ""
	})
	if !resumed {
		t.Error("t1 did not resume its own session")
	}
	if ts := fleetState(t, u, run).Tasks["t1"]; ts == nil || ts.Status != fleet.StatusMerged {
		t.Errorf("t1: %+v", ts)
	}
}
