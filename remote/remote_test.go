package remote

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/quartz"
	"go.uber.org/goleak"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/builtin"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/fleet"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/quota"
)

// TestMain doubles as the built-in agent: workers launch
// `<this test binary> agent builtin --script F`.
func TestMain(m *testing.M) {
	if len(os.Args) >= 3 && os.Args[1] == "agent" && os.Args[2] == "builtin" {
		opts := builtin.Options{}
		if len(os.Args) == 5 && os.Args[3] == "--script" {
			s, err := builtin.LoadScript(os.Args[4])
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			opts.Script = s
		}
		if err := builtin.Serve(context.Background(), os.Stdin, os.Stdout, opts); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "tai-remote-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The hub runs nats-server as a program of its own: the one go.mod
	// pins, built here (the build cache keeps it).
	natsServer = filepath.Join(dir, "nats-server")
	build := exec.Command("go", "build", "-o", natsServer, "github.com/nats-io/nats-server/v2")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building nats-server:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// natsServer is the nats-server program the tests' hubs run.
var natsServer string

func testLogger() *slog.Logger {
	if os.Getenv("TAI_REMOTE_DEBUG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func sh(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// dagRepo makes a repository with a plan of n tasks: task i writes fNN.txt
// and depends on task i-3, so three run at once.
func dagRepo(t testing.TB, n int) (string, *fleet.Plan) {
	t.Helper()
	dir := t.TempDir()
	sh(t, dir, "git", "init", "-q", "-b", "main")
	sh(t, dir, "git", "config", "user.email", "t@example.com")
	sh(t, dir, "git", "config", "user.name", "T")
	var plan strings.Builder
	plan.WriteString("name: dag\npolicy: {approve: all}\nconcurrency: 3\ntasks:\n")
	for i := range n {
		id := fmt.Sprintf("t%02d", i)
		script := fmt.Sprintf("steps:\n  - write: {path: f%02d.txt, content: \"task %d\\n\"}\n  - text: \"wrote f%02d.txt\"\n", i, i, i)
		if err := os.WriteFile(filepath.Join(dir, id+".yaml"), []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&plan, "  - {id: %s, script: %s.yaml, prompt: \"do %s\"", id, id, id)
		if i >= 3 {
			fmt.Fprintf(&plan, ", depends_on: [t%02d]", i-3)
		}
		plan.WriteString("}\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(plan.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sh(t, dir, "git", "add", "-A")
	sh(t, dir, "git", "commit", "-q", "-m", "init")
	p, err := fleet.LoadPlan(filepath.Join(dir, "plan.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, p
}

type testHub struct {
	hub *Hub
	url string
}

func startHub(t testing.TB) *testHub {
	t.Helper()
	h, err := StartHub(context.Background(), HubOptions{Listen: "127.0.0.1:0", Store: t.TempDir(), Server: natsServer})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return &testHub{hub: h, url: h.URL()}
}

func openBus(t testing.TB, url, name string) *Bus {
	t.Helper()
	nc, err := Connect(url, "", "", name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	b, err := Open(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// startWorkers runs n workers as goroutines, each with its own
// connection, clones and state; the returned stop waits for them.
func startWorkers(t testing.TB, url string, n int, lease time.Duration) func() {
	t.Helper()
	return startWorkersFor(t, url, n, lease, nil)
}

// startWorkersFor runs n workers of the given agents (nil: builtin).
func startWorkersFor(t testing.TB, url string, n int, lease time.Duration, agents []string) func() {
	t.Helper()
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = t.TempDir()
	}
	return startWorkersIn(t, url, lease, agents, dirs...)
}

// startWorkersIn runs a worker in each of dirs (clones/, state/).
func startWorkersIn(t testing.TB, url string, lease time.Duration, agents []string, dirs ...string) func() {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i, dir := range dirs {
		b := openBus(t, url, fmt.Sprintf("w%d", i))
		wg.Go(func() {
			err := RunWorker(ctx, WorkerOptions{Bus: b, Name: fmt.Sprintf("w%d", i), Agents: agents, Clones: filepath.Join(dir, "clones"), State: filepath.Join(dir, "state"),
				Lease: lease, Exe: exe, Logger: testLogger()})
			if err != nil {
				t.Errorf("worker %d: %v", i, err)
			}
		})
	}
	return func() { cancel(); wg.Wait() }
}

func TestDAGOnThreeWorkers(t *testing.T) {
	h := startHub(t)
	repo, plan := dagRepo(t, 20)
	// A merge worktree half made by a coordinator killed in git worktree
	// add (registered, on no branch) is made again.
	sh(t, repo, "git", "worktree", "add", "-q", "--detach", filepath.Join(repo, ".tai", "worktrees", "dag", "t05"), "HEAD")
	// A coordinator killed in the update-ref of a task's branch leaves the
	// ref's lock: the next one merges the task all the same.
	if err := os.MkdirAll(filepath.Join(repo, ".git", "refs", "heads", "tai", "dag"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, ".git", "refs", "heads", "tai", "dag", "t07.lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	stop := startWorkers(t, h.url, 3, 5*time.Second)
	defer stop()
	b := openBus(t, h.url, "coordinator")
	runDir := t.TempDir()
	log, err := audit.Open(filepath.Join(runDir, "audit.jsonl"), audit.Options{Run: "dag"})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	var mu sync.Mutex
	merged := map[string]int{}
	workers := map[string]bool{}
	st, err := Coordinate(context.Background(), CoordinatorOptions{Bus: b, Plan: plan, RunID: "dag", Dir: runDir, Lease: 5 * time.Second, Audit: log, Logger: testLogger(),
		Progress: func(ev fleet.Event) {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case ev.Kind == "merged":
				merged[ev.Task]++
			case ev.Kind == "worker.started":
				workers[strings.SplitN(ev.Detail, ":", 2)[0]] = true
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if st.ExitCode != 0 {
		t.Fatalf("exit %d: %+v", st.ExitCode, st.Tasks)
	}
	for i := range 20 {
		id := fmt.Sprintf("t%02d", i)
		if merged[id] != 1 {
			t.Errorf("task %s merged %d times", id, merged[id])
		}
		if got := st.Tasks[id].Status; got != fleet.StatusMerged {
			t.Errorf("task %s is %s: %s", id, got, st.Tasks[id].Reason)
		}
		if got := sh(t, repo, "git", "show", "tai-fleet/dag:"+fmt.Sprintf("f%02d.txt", i)); got != fmt.Sprintf("task %d", i) {
			t.Errorf("f%02d.txt in the target: %q", i, got)
		}
	}
	if n := strings.Count(sh(t, repo, "git", "log", "--format=%s", "main..tai-fleet/dag"), "\n") + 1; n != 20 {
		t.Errorf("%d commits on the target, want 20", n)
	}
	if len(workers) < 2 {
		t.Errorf("tasks ran on %v only", workers)
	}
	// Each task's state mirrors what JetStream recorded.
	saved, err := fleet.LoadState(runDir)
	if err != nil || saved.Status != "done" {
		t.Fatalf("state.json: %v %+v", err, saved)
	}
}

// settleCoordinator is a coordinator of run "r" on b with just what
// settle needs: an audit log, progress, a result channel for each of ids,
// and the tasks' state.
func settleCoordinator(t *testing.T, b *Bus, progress func(fleet.Event), ids []string, tasks map[string]*fleet.TaskState) *coordinator {
	t.Helper()
	log, err := audit.Open(filepath.Join(t.TempDir(), "audit.jsonl"), audit.Options{Run: "r"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	results := map[string]chan Lease{}
	for _, id := range ids {
		results[id] = make(chan Lease, 1)
	}
	if tasks == nil {
		tasks = map[string]*fleet.TaskState{}
	}
	c := &coordinator{o: CoordinatorOptions{RunID: "r", Audit: log, Progress: progress}, bus: b, results: results,
		e: &fakeEngine{tasks: tasks, progress: progress}}
	c.clock, c.log = quartz.NewReal(), slog.New(slog.DiscardHandler)
	return c
}

// fakeEngine stands in for the fleet run settle reports to: the tasks'
// state, and its events to progress.
type fakeEngine struct {
	mu       sync.Mutex
	tasks    map[string]*fleet.TaskState
	progress func(fleet.Event)
}

func (e *fakeEngine) Task(id string) fleet.TaskState {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t := e.tasks[id]; t != nil {
		return *t
	}
	return fleet.TaskState{ID: id}
}

func (e *fakeEngine) SetTask(id string, fn func(*fleet.TaskState)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.tasks[id] == nil {
		e.tasks[id] = &fleet.TaskState{ID: id}
	}
	fn(e.tasks[id])
}

func (e *fakeEngine) Emit(kind fleet.EventKind, task, detail string, data map[string]any) {
	e.EmitAt(time.Now(), kind, task, detail, data)
}

func (e *fakeEngine) EmitAt(t time.Time, kind fleet.EventKind, task, detail string, _ map[string]any) {
	if e.progress != nil {
		e.progress(fleet.Event{Time: t, Kind: kind, Task: task, Detail: detail})
	}
}

func (e *fakeEngine) Prompt(context.Context, *fleet.Task) (string, error) { return "", nil }

func (e *fakeEngine) Park(context.Context, string, *quota.Limit, *fleet.TaskPark) error { return nil }

func (e *fakeEngine) EnterTurn(_ string, _ context.CancelCauseFunc, start func()) func() {
	start()
	return func() {}
}

// A result from an attempt that lost its lease is refused, whatever the
// server did with its ack; the holder's result is accepted once.
func TestFenceOnAttempt(t *testing.T) {
	h := startHub(t)
	b := openBus(t, h.url, "fence")
	ctx := context.Background()
	var events []string
	c := settleCoordinator(t, b, func(ev fleet.Event) { events = append(events, string(ev.Kind)) }, []string{"x"}, nil)
	// Worker A had attempt 1; its lease ran out and worker B took attempt 2.
	if _, err := b.PutLease(ctx, "r", "x", Lease{State: LeaseClaimed, Worker: "B", Attempt: 2, Deadline: time.Now().Add(time.Hour)}, 0); err != nil {
		t.Fatal(err)
	}
	done := fleet.TaskOutcome{Status: fleet.StatusFailed, Reason: "x"}
	tests := []struct {
		name   string
		r      ResultMsg
		events []string
		state  LeaseState
	}{
		{"stale attempt", ResultMsg{Run: "r", Task: "x", Attempt: 1, Worker: "A", Outcome: done}, []string{"refused"}, LeaseClaimed},
		{"right attempt, wrong worker", ResultMsg{Run: "r", Task: "x", Attempt: 2, Worker: "A", Outcome: done}, []string{"refused"}, LeaseClaimed},
		{"holder that reports it lost the lease", ResultMsg{Run: "r", Task: "x", Attempt: 2, Worker: "B", Outcome: done, Lost: true}, []string{"refused"}, LeaseClaimed},
		{"holder", ResultMsg{Run: "r", Task: "x", Attempt: 2, Worker: "B", Outcome: done}, []string{"accepted"}, LeaseFinal},
		{"holder again (redelivered)", ResultMsg{Run: "r", Task: "x", Attempt: 2, Worker: "B", Outcome: done}, nil, LeaseFinal},
		{"stale after settling", ResultMsg{Run: "r", Task: "x", Attempt: 1, Worker: "A", Outcome: done}, []string{"refused"}, LeaseFinal},
	}
	for _, tt := range tests {
		events = nil
		if err := c.settle(ctx, tt.r); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		l, _, err := b.GetLease(ctx, "r", "x")
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(events) != fmt.Sprint(tt.events) || l.State != tt.state {
			t.Errorf("%s: events %v, lease %s; want %v, %s", tt.name, events, l.State, tt.events, tt.state)
		}
	}
	if got := len(c.results["x"]); got != 1 {
		t.Errorf("%d results handed to the task, want 1", got)
	}
}

// An acceptance whose reply was lost (a timeout) still landed: the
// result, redelivered, finds its lease settled, and is handed to the task
// that waits for it, once; a task no longer waiting is not handed it.
func TestSettleHandsOnAnAcceptanceWhoseReplyWasLost(t *testing.T) {
	h := startHub(t)
	b := openBus(t, h.url, "lostreply")
	ctx := context.Background()
	var events []string
	c := settleCoordinator(t, b, func(ev fleet.Event) { events = append(events, string(ev.Kind)+" "+ev.Task) }, []string{"x", "y"},
		map[string]*fleet.TaskState{"x": {ID: "x", Status: fleet.StatusRunning}, "y": {ID: "y", Status: fleet.StatusDone}})
	for _, id := range []string{"x", "y"} {
		if _, err := b.PutLease(ctx, "r", id, Lease{State: LeaseAccepted, Worker: "B", Attempt: 2, Status: fleet.StatusDone}, 0); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		for _, id := range []string{"x", "y"} {
			if err := c.settle(ctx, ResultMsg{Run: "r", Task: id, Attempt: 2, Worker: "B", Outcome: fleet.TaskOutcome{Status: fleet.StatusDone}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if fmt.Sprint(events) != "[accepted x]" {
		t.Errorf("events %q, want x accepted once", events)
	}
	select {
	case l := <-c.results["x"]:
		if l.State != LeaseAccepted || l.Attempt != 2 {
			t.Errorf("x was handed %+v", l)
		}
	default:
		t.Error("x was not handed its result")
	}
	if n := len(c.results["y"]); n != 0 {
		t.Errorf("y, done already, was handed %d results", n)
	}
}

// A hub restarted on the same store keeps its streams, queued tasks and
// leases.
func TestHubRestartKeepsState(t *testing.T) {
	store := t.TempDir()
	ctx := context.Background()
	h, err := StartHub(ctx, HubOptions{Listen: "127.0.0.1:0", Store: store, Server: natsServer})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := Connect(h.URL(), "", "", "t")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	subj := taskSubject("builtin", "r", "x")
	if _, err := b.PutLease(ctx, "r", "x", Lease{State: LeaseClaimed, Worker: "w", Attempt: 3}, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(ctx, subj, TaskMsg{Run: "r", Task: "x"}); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	h.Close()

	h, err = StartHub(ctx, HubOptions{Listen: "127.0.0.1:0", Store: store, Server: natsServer})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	b = openBus(t, h.URL(), "t2")
	l, _, err := b.GetLease(ctx, "r", "x")
	if err != nil || l.Attempt != 3 || l.Worker != "w" {
		t.Fatalf("lease after restart: %+v %v", l, err)
	}
	if _, err := b.Tasks.GetLastMsgForSubject(ctx, subj); err != nil {
		t.Fatalf("queued task after restart: %v", err)
	}
}

// A message over the cap is refused before it is sent.
func TestMessageCap(t *testing.T) {
	h := startHub(t)
	b := openBus(t, h.url, "cap")
	err := b.Publish(context.Background(), resultSubject("r"), ResultMsg{Outcome: fleet.TaskOutcome{Message: strings.Repeat("x", MaxMessage)}})
	if err == nil || !strings.Contains(err.Error(), "cap") {
		t.Fatalf("got %v, want the cap named", err)
	}
}

// A hub with a token refuses clients without it.
func TestHubToken(t *testing.T) {
	h, err := StartHub(context.Background(), HubOptions{Listen: "127.0.0.1:0", Store: t.TempDir(), Token: "s3cret", Server: natsServer})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, tt := range []struct {
		token string
		ok    bool
	}{{"", false}, {"wrong", false}, {"s3cret", true}} {
		nc, err := Connect(h.URL(), "", tt.token, "t")
		if (err == nil) != tt.ok {
			t.Errorf("token %q: err %v, want ok=%v", tt.token, err, tt.ok)
		}
		if nc != nil {
			nc.Close()
		}
	}
}

// planRepo makes a repository holding files (plan.yaml among them; EXE in
// it is the test binary) and loads its plan.
func planRepo(t *testing.T, files map[string]string) (string, *fleet.Plan) {
	t.Helper()
	dir := t.TempDir()
	sh(t, dir, "git", "init", "-q", "-b", "main")
	sh(t, dir, "git", "config", "user.email", "t@example.com")
	sh(t, dir, "git", "config", "user.name", "T")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.ReplaceAll(c, "EXE", exe)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sh(t, dir, "git", "add", "-A")
	sh(t, dir, "git", "commit", "-q", "-m", "init")
	p, err := fleet.LoadPlan(filepath.Join(dir, "plan.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, p
}

func coordinate(t *testing.T, url string, plan *fleet.Plan, run string, mod func(o *CoordinatorOptions)) (*fleet.State, string) {
	t.Helper()
	runDir := t.TempDir()
	log, err := audit.Open(filepath.Join(runDir, "audit.jsonl"), audit.Options{Run: run})
	if err != nil {
		t.Fatal(err)
	}
	o := CoordinatorOptions{Bus: openBus(t, url, "coordinator"), Plan: plan, RunID: run, Dir: runDir, Lease: 5 * time.Second, Audit: log, Logger: testLogger()}
	if mod != nil {
		mod(&o)
	}
	st, err := Coordinate(context.Background(), o)
	_ = log.Close()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(runDir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return st, string(data)
}

// askPlan: task paint asks a question in its first session (and marks
// that it asked); its next session paints with the answer it was given.
const askAgent = "sh -c 'if [ -e asked ]; then exec \"$0\" agent builtin --script done.yaml; else exec \"$0\" agent builtin --script ask.yaml; fi' EXE"

// A remote task's question goes to the coordinator, which answers it as a
// local fleet does (the plan's answerer, then a human); the answer goes
// back to the worker's agent, which completes.
func TestRemoteQuestionIsAnswered(t *testing.T) {
	h := startHub(t)
	stop := startWorkersFor(t, h.url, 1, 5*time.Second, []string{"custom"})
	defer stop()
	files := map[string]string{
		"ask.yaml":  "steps:\n  - write: {path: asked, content: \"1\\n\"}\n  - text: \"Which colour should I use?\"\n",
		"done.yaml": "steps:\n  - write: {path: colour.txt, content: \"blue\\n\"}\n  - text: \"Painted it blue.\"\n",
	}
	tests := []struct {
		name     string
		answerer string // the plan's answerer's script; "" = none
		human    string // what the coordinator's human answers; "" = no human
		want     fleet.TaskStatus
		by       string
	}{
		{name: "the plan's answerer", answerer: "steps:\n  - text: \"Use blue.\"\n", want: fleet.StatusMerged, by: "answerer"},
		{name: "the answerer cannot, a human at the coordinator can", answerer: "steps:\n  - text: CANNOT_ANSWER\n", human: "Use blue.", want: fleet.StatusMerged, by: "human"},
		{name: "nobody can", want: fleet.StatusBlocked},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := map[string]string{"plan.yaml": "policy: {approve: all}\ntasks:\n  - {id: paint, agent_cmd: " + fmt.Sprintf("%q", askAgent) + ", prompt: paint it}\n"}
			for k, v := range files {
				fs[k] = v
			}
			if tt.answerer != "" {
				fs["answerer.yaml"] = tt.answerer
				fs["plan.yaml"] = strings.Replace(fs["plan.yaml"], "tasks:", "answerer: {script: answerer.yaml}\ntasks:", 1)
			}
			repo, plan := planRepo(t, fs)
			var asked []string
			st, auditLog := coordinate(t, h.url, plan, fmt.Sprintf("ask%d", i), func(o *CoordinatorOptions) {
				if tt.human != "" {
					o.AskHuman = func(_ context.Context, task, q string) (string, error) {
						asked = append(asked, task+": "+q)
						return tt.human, nil
					}
				}
			})
			ts := st.Tasks["paint"]
			if ts.Status != tt.want {
				t.Fatalf("paint is %s (%s), want %s", ts.Status, ts.Reason, tt.want)
			}
			if tt.want != fleet.StatusMerged {
				if !strings.Contains(ts.Reason, "Which colour should I use?") {
					t.Errorf("reason %q does not name the question", ts.Reason)
				}
				return
			}
			if got := sh(t, repo, "git", "show", fmt.Sprintf("tai-fleet/ask%d:colour.txt", i)); got != "blue" {
				t.Errorf("colour.txt in the target: %q", got)
			}
			if len(ts.Questions) != 1 || ts.Questions[0].Answer != "Use blue." || ts.Questions[0].DecidedBy != tt.by {
				t.Errorf("questions %+v", ts.Questions)
			}
			if tt.human != "" && (len(asked) != 1 || asked[0] != "paint: Which colour should I use?") {
				t.Errorf("the human was asked %q", asked)
			}
			if !strings.Contains(auditLog, `"event":"answered"`) || !strings.Contains(auditLog, `"decided_by":"`+tt.by+`"`) {
				t.Errorf("the answer is not in the coordinator's audit log:\n%s", auditLog)
			}
		})
	}
}

// A dependent of a remote task sees the task's real result in its prompt
// template: the diff of the merged attempt, its files and its patch.
func TestRemoteDependentSeesDiff(t *testing.T) {
	h := startHub(t)
	wdir := t.TempDir()
	stop := startWorkersIn(t, h.url, 5*time.Second, nil, wdir)
	defer stop()
	_, plan := planRepo(t, map[string]string{
		"a.yaml": "steps:\n  - write: {path: a.txt, content: \"alpha\\n\"}\n  - text: \"wrote a.txt\"\n",
		"b.yaml": "steps:\n  - text: \"read it\"\n",
		"plan.yaml": `policy: {approve: all}
tasks:
  - {id: a, script: a.yaml, prompt: "do a"}
  - id: b
    script: b.yaml
    depends_on: [a]
    prompt: "after {{ .Tasks.a.Message }} on {{ .Tasks.a.Branch }} ({{ .Tasks.a.Status }}): {{ .Tasks.a.Diff }}; files {{ .Tasks.a.Files }}; patch {{ .Tasks.a.Patch }}"
`})
	st, _ := coordinate(t, h.url, plan, "deps", nil)
	if st.ExitCode != 0 {
		t.Fatalf("exit %d: %+v", st.ExitCode, st.Tasks)
	}
	if d := st.Tasks["a"].Diff; d == nil || d.Summary() != "1 file(s) changed, +1 -0: a.txt" {
		t.Errorf("a's diff in the state: %+v", d)
	}
	data, err := os.ReadFile(filepath.Join(wdir, "state", "audit", "deps", "b-1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"after wrote a.txt on tai/deps/a (merged): 1 file(s) changed, +1 -0: a.txt; files [a.txt]; patch diff --git a/a.txt b/a.txt",
		`+alpha`,
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("b's prompt lacks %q:\n%s", want, data)
		}
	}
}

// stubHuman answers permission asks at the coordinator.
type stubHuman struct {
	mu     sync.Mutex
	asked  []string
	answer policy.Answer
}

func (h *stubHuman) Ask(ctx context.Context, req driver.PermissionRequest) (policy.Answer, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.asked = append(h.asked, policy.AskerOf(ctx)+": "+req.ToolCall.Title)
	return h.answer, nil
}

// A permission ask that policy sends to a human, on a remote worker, is
// put to the coordinator's human; the answer decides the agent's call.
func TestRemotePermissionAskGoesToTheCoordinator(t *testing.T) {
	h := startHub(t)
	stop := startWorkers(t, h.url, 1, 5*time.Second)
	defer stop()
	for i, tt := range []struct {
		answer policy.Answer
		want   fleet.TaskStatus
	}{{policy.AllowOnce, fleet.StatusMerged}, {policy.DenyOnce, fleet.StatusFailed}} {
		repo, plan := planRepo(t, map[string]string{
			"w.yaml":    "steps:\n  - write: {path: w.txt, content: \"w\\n\"}\n  - text: wrote w.txt\n",
			"plan.yaml": "policy: {approve: reads}\ntasks:\n  - {id: w, script: w.yaml, prompt: write}\n",
		})
		human := &stubHuman{answer: tt.answer}
		st, auditLog := coordinate(t, h.url, plan, fmt.Sprintf("perm%d", i), func(o *CoordinatorOptions) { o.Prompter = human })
		if got := st.Tasks["w"].Status; got != tt.want {
			t.Fatalf("answer %v: w is %s (%s), want %s", tt.answer, got, st.Tasks["w"].Reason, tt.want)
		}
		if len(human.asked) != 1 || !strings.HasPrefix(human.asked[0], "task w: ") || !strings.Contains(human.asked[0], "w.txt") {
			t.Errorf("the coordinator's human was asked %q", human.asked)
		}
		if !strings.Contains(auditLog, `"event":"permission.asked"`) {
			t.Errorf("the ask is not in the coordinator's audit log")
		}
		if tt.want == fleet.StatusMerged {
			if got := sh(t, repo, "git", "show", fmt.Sprintf("tai-fleet/perm%d:w.txt", i)); got != "w" {
				t.Errorf("w.txt on the target: %q", got)
			}
		}
	}
}

// A submitted run the hub's coordinator cannot coordinate (its repository
// is not on the hub's host) ends failed, with the reason on its events.
func TestServeEndsARunItCannotCoordinate(t *testing.T) {
	h := startHub(t)
	b := openBus(t, h.url, "submit")
	ctx := context.Background()
	repo, plan := planRepo(t, map[string]string{"plan.yaml": "tasks:\n  - {id: a, prompt: a}\n"})
	if _, err := Submit(ctx, b, SubmitOptions{Plan: plan, RunID: "gone", Repo: repo}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(repo); err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- Serve(sctx, ServeOptions{Bus: b, Prepare: func(rec RunRecord, o *CoordinatorOptions) (func(*fleet.State), error) {
			o.Dir = filepath.Join(t.TempDir(), rec.Run)
			log, err := audit.Open(filepath.Join(t.TempDir(), "audit.jsonl"), audit.Options{Run: rec.Run})
			o.Audit = log
			return func(*fleet.State) { _ = log.Close() }, err
		}})
	}()
	var end EventMsg
	err := Events(ctx, b, "gone", true, func(ev EventMsg) error {
		if ev.Kind == "run.end" {
			end = ev
			return ErrStop
		}
		return nil
	})
	stop()
	if serr := <-done; err != nil || serr != nil {
		t.Fatalf("events: %v, serve: %v", err, serr)
	}
	rec, _, err := LoadRun(ctx, b, "gone")
	if err != nil || rec.Finished.IsZero() || rec.Status != "failed" || !strings.Contains(end.Detail, "could not coordinate") {
		t.Fatalf("record %+v (%v), end %+v", rec, err, end)
	}
}

// A run submitted from another host (its repository is not here) is
// coordinated in a clone of where its workers push, and its target is
// pushed back there.
func TestServeCoordinatesARunFromAnotherHost(t *testing.T) {
	h := startHub(t)
	stop := startWorkers(t, h.url, 1, 5*time.Second)
	defer stop()
	b := openBus(t, h.url, "submit")
	ctx := context.Background()
	work, plan := planRepo(t, map[string]string{
		"a.yaml":    "steps:\n  - write: {path: a.txt, content: \"a\\n\"}\n  - text: wrote a\n",
		"b.yaml":    "steps:\n  - write: {path: b.txt, content: \"b\\n\"}\n  - text: wrote b\n",
		"plan.yaml": "policy: {approve: all}\ntasks:\n  - {id: a, script: a.yaml, prompt: a}\n  - {id: b, script: b.yaml, prompt: \"b after {{ .Tasks.a.Diff }}\", depends_on: [a]}\n",
	})
	origin := filepath.Join(t.TempDir(), "origin.git")
	sh(t, work, "git", "clone", "-q", "--bare", work, origin)
	if _, err := Submit(ctx, b, SubmitOptions{Plan: plan, RunID: "far", Repo: work, RepoURL: origin}); err != nil {
		t.Fatal(err)
	}
	// The submitter's repository is elsewhere: the coordinator's host has
	// only the plan's directory (the scripts), not the repository.
	sh(t, work, "rm", "-rf", ".git")
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	clones := t.TempDir()
	go func() {
		done <- Serve(sctx, ServeOptions{Bus: b, Prepare: func(rec RunRecord, o *CoordinatorOptions) (func(*fleet.State), error) {
			o.Dir, o.Clones = filepath.Join(t.TempDir(), rec.Run), clones
			log, err := audit.Open(filepath.Join(t.TempDir(), "audit.jsonl"), audit.Options{Run: rec.Run})
			o.Audit = log
			return func(*fleet.State) { _ = log.Close() }, err
		}})
	}()
	err := Events(ctx, b, "far", true, func(ev EventMsg) error {
		if ev.Kind == "run.end" {
			return ErrStop
		}
		return nil
	})
	cancel()
	if serr := <-done; err != nil || serr != nil {
		t.Fatalf("events: %v, serve: %v", err, serr)
	}
	rec, st, err := LoadRun(ctx, b, "far")
	if err != nil || rec.Status != "done" || st == nil {
		t.Fatalf("record %+v, state %+v: %v", rec, st, err)
	}
	for _, f := range []string{"a", "b"} {
		if got := sh(t, origin, "git", "show", "tai-fleet/far:"+f+".txt"); got != f {
			t.Errorf("%s.txt in origin's target: %q", f, got)
		}
	}
}
