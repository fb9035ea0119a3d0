// Package fleetboth_test runs the same fleet scenarios through the real tai
// binary with both executors: a local fleet (`tai fleet run plan.yaml`)
// and a fleet over NATS (`tai hub`, two `tai worker`s with their default
// directories, `tai fleet run --nats URL plan.yaml`), on a user's machine
// (a HOME with the XDG directories, tai on PATH), the default sandbox, no
// --dir. Each scenario checks what the README promises alike for both: a
// DAG's order and skips, owns, budgets, an agent's question, a merge
// conflict, kill -9 of the fleet's process and resume, and the plan's
// check. The agents are the built-in agent's scripts (offline).
package fleetboth_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tai-dev/tai/e2e/internal/build"
	"github.com/tai-dev/tai/e2e/internal/userenv"
	"github.com/tai-dev/tai/fleet"
)

// taiBin is tai; natsServer the nats-server tai hub runs (go.mod's), on
// the user's PATH as a user who installed it has it.
var taiBin, natsServer string

func TestMain(m *testing.M) {
	build.Main(m, "tai-e2e-fleetboth-", func(_ string, bins []string) { taiBin, natsServer = bins[0], bins[1] }, build.Tai, build.NATSServer)
}

// executor is one way a fleet's tasks run.
type executor struct {
	name string
	// start readies it on the user's machine and returns the flags that
	// send `tai fleet run` and `tai fleet resume` to it. shared, when not
	// empty, is a directory outside the worktrees the scenario's agents
	// meet in, given to them as a user would: --sandbox-write, on whatever
	// runs the agents.
	start func(t *testing.T, u *userenv.User, shared string) []string
}

var executors = []executor{
	{"local", func(_ *testing.T, _ *userenv.User, shared string) []string { return sandboxWrite(shared) }},
	{"nats", func(_ *testing.T, u *userenv.User, shared string) []string {
		url, _ := u.Hub()
		for _, name := range []string{"w1", "w2"} {
			u.Worker(url, name, sandboxWrite(shared)...)
		}
		return []string{"--nats", url}
	}},
}

func sandboxWrite(dir string) []string {
	if dir == "" {
		return nil
	}
	return []string{"--sandbox-write", dir}
}

// world is one scenario's machine with one executor.
type world struct {
	t      *testing.T
	u      *userenv.User
	ex     string
	args   []string // the executor's flags for fleet run and resume
	shared string   // the agents' meeting directory, or ""
	repo   string
}

// summary is `tai fleet run -o json`'s result.
type summary struct {
	Run      string                      `json:"run"`
	Status   string                      `json:"status"`
	ExitCode int                         `json:"exit_code"`
	Target   string                      `json:"target"`
	Tasks    []*fleet.TaskState          `json:"tasks"`
	Counts   map[fleet.TaskStatus]int    `json:"counts"`
	Error    string                      `json:"error"`
	Audit    string                      `json:"audit"`
	byID     map[string]*fleet.TaskState `json:"-"`
}

func (s summary) task(t *testing.T, id string) *fleet.TaskState {
	t.Helper()
	ts := s.byID[id]
	if ts == nil {
		t.Fatalf("no task %s in the summary %+v", id, s)
	}
	return ts
}

// statuses is every task's status, by id.
func (s summary) statuses() map[string]fleet.TaskStatus {
	m := map[string]fleet.TaskStatus{}
	for id, ts := range s.byID {
		m[id] = ts.Status
	}
	return m
}

// scenario is what both executors must do alike.
type scenario struct {
	name   string
	files  map[string]string // the repository's, plan.yaml among them
	shared bool              // the agents meet in a directory outside their worktrees
	env    []string          // the user's environment has these too (tai, its hub and workers)
	// run runs the fleet and checks it.
	run func(t *testing.T, w *world)
}

// fleetRun runs `tai fleet run -o json` on the repository's plan.yaml,
// from the repository, as run id run, and reads its result.
func (w *world) fleetRun(run string) (summary, build.Outcome) {
	w.t.Helper()
	args := append([]string{"fleet", "run", "--run-id", run, "-o", "json"}, w.args...)
	o := build.Run(w.t, taiBin, w.repo, w.u.Env, append(args, "plan.yaml")...)
	return w.runResult(o), o
}

func (w *world) result(o build.Outcome) summary {
	w.t.Helper()
	var s summary
	if err := json.Unmarshal([]byte(o.Stdout), &s); err != nil {
		w.t.Fatalf("the result is not JSON (%v): exit %d\nstdout:\n%s\nstderr:\n%s", err, o.Code, o.Stdout, o.Stderr)
	}
	s.byID = map[string]*fleet.TaskState{}
	for _, ts := range s.Tasks {
		s.byID[ts.ID] = ts
	}
	return s
}

// runResult is a fleet run's or resume's result, whose exit code is
// tai's.
func (w *world) runResult(o build.Outcome) summary {
	w.t.Helper()
	s := w.result(o)
	if s.ExitCode != o.Code {
		w.t.Errorf("the result says exit %d, tai exited %d", s.ExitCode, o.Code)
	}
	return s
}

// onTarget is the files of the run's target branch.
func (w *world) onTarget(s summary) []string {
	w.t.Helper()
	return strings.Fields(w.u.Git(w.repo, "ls-tree", "-r", "--name-only", s.Target))
}

func (w *world) wantStatuses(s summary, o build.Outcome, code int, want map[string]fleet.TaskStatus) {
	w.t.Helper()
	got := s.statuses()
	for id, st := range want {
		if got[id] != st {
			w.t.Fatalf("exit %d (want %d); statuses %v, want %v\nstderr:\n%s", o.Code, code, got, want, o.Stderr)
		}
	}
	if o.Code != code {
		w.t.Fatalf("exit %d, want %d; statuses %v\nstderr:\n%s", o.Code, code, got, o.Stderr)
	}
}

// readFlags are the flags that send `tai fleet status`, `list` and
// `logs` where the executor keeps its runs: --nats URL, or none.
func (w *world) readFlags() []string {
	if i := slices.Index(w.args, "--nats"); i >= 0 {
		return w.args[i : i+2]
	}
	return nil
}

// tai runs a tai command from the repository, to its end; it must exit
// 0.
func (w *world) tai(args ...string) build.Outcome {
	w.t.Helper()
	o := build.Run(w.t, taiBin, w.repo, w.u.Env, args...)
	if o.Code != 0 {
		w.t.Fatalf("tai %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), o.Code, o.Stdout, o.Stderr)
	}
	return o
}

// readBack reads the finished run s back as a user does, with the
// executor's store (one reader, fleet.RunStore): fleet status (of the
// latest run, and by name) shows the result's statuses, fleet list its
// row, fleet logs RUN TASK that task's frames only.
func (w *world) readBack(s summary) {
	t := w.t
	t.Helper()
	for _, args := range [][]string{{"fleet", "status", "-o", "json"}, {"fleet", "status", s.Run, "-o", "json"}} {
		got := w.result(w.tai(append(args, w.readFlags()...)...))
		if got.Run != s.Run || got.Status != s.Status || !maps.Equal(got.statuses(), s.statuses()) {
			t.Errorf("tai %s: run %s %s %v, want %s %s %v", strings.Join(args, " "), got.Run, got.Status, got.statuses(), s.Run, s.Status, s.statuses())
		}
	}
	var runs []struct {
		Run, Status, Target string
		Tasks               int
		Counts              map[string]int
		Live                bool
	}
	o := w.tai(append([]string{"fleet", "list", "-o", "json"}, w.readFlags()...)...)
	if err := json.Unmarshal([]byte(o.Stdout), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("fleet list -o json: %v\n%s", err, o.Stdout)
	}
	want := map[string]int{}
	for _, st := range s.statuses() {
		want[string(st)]++
	}
	if r := runs[0]; r.Run != s.Run || r.Status != s.Status || r.Tasks != len(s.Tasks) || !maps.Equal(r.Counts, want) || r.Target != s.Target || r.Live {
		t.Errorf("fleet list: %+v, want run %s %s, %d tasks %v on %s, not live", r, s.Run, s.Status, len(s.Tasks), want, s.Target)
	}
	text := w.tai(append([]string{"fleet", "list"}, w.readFlags()...)...).Stdout
	if !regexp.MustCompile(`(?m)^` + s.Run + ` +` + s.Status + ` +` + fmt.Sprint(len(s.Tasks)) + ` `).MatchString(text) {
		t.Errorf("fleet list's row for %s:\n%s", s.Run, text)
	}
	// A run the store does not hold: a usage error naming it, from the
	// command that was asked, whichever the store.
	for _, cmd := range []string{"status", "logs"} {
		o := build.Run(t, taiBin, w.repo, w.u.Env, append([]string{"fleet", cmd, "nosuch"}, w.readFlags()...)...)
		if o.Code != 2 || !strings.HasPrefix(o.Stderr, "tai: fleet "+cmd+": ") || !strings.Contains(o.Stderr, "nosuch") || strings.Count(o.Stderr, "\n") != 1 {
			t.Errorf("fleet %s nosuch: exit %d, want 2 and one line \"tai: fleet %s: ...nosuch...\"; stderr:\n%s", cmd, o.Code, cmd, o.Stderr)
		}
	}
	logs := w.tai(append([]string{"fleet", "logs", s.Run, "c"}, w.readFlags()...)...).Stdout
	for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
		if f := strings.Fields(l); len(f) < 2 || f[1] != "c" {
			t.Errorf("fleet logs %s c shows another's line: %q", s.Run, l)
		}
	}
	for _, want := range []*regexp.Regexp{regexp.MustCompile(`(?m) c +merged `), regexp.MustCompile(`(?m) c +agent: done$`)} {
		if !want.MatchString(logs) {
			t.Errorf("fleet logs %s c lacks %s:\n%s", s.Run, want, logs)
		}
	}
}

// writeScript is a built-in agent script that writes one file.
func writeScript(path, content string) string {
	return fmt.Sprintf("steps:\n  - write: {path: %s, content: %q}\n  - text: done\n", path, content)
}

// TestBothExecutors runs every scenario with each executor.
func TestBothExecutors(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			for _, ex := range executors {
				t.Run(ex.name, func(t *testing.T) {
					if why := known[sc.name+"/"+ex.name]; why != "" {
						t.Skip(why)
					}
					u := userenv.New(t, taiBin, natsServer)
					u.Env = append(u.Env, sc.env...)
					w := &world{t: t, u: u, ex: ex.name}
					if sc.shared {
						w.shared = filepath.Join(u.Home, "shared")
						if err := os.Mkdir(w.shared, 0o700); err != nil {
							t.Fatal(err)
						}
					}
					w.args = ex.start(t, u, w.shared)
					files := map[string]string{}
					for k, v := range sc.files {
						files[k] = strings.ReplaceAll(v, "SHARED", w.shared)
					}
					w.repo = u.Repo("proj", files)
					sc.run(t, w)
				})
			}
		})
	}
}

// known are the sub-tests today's NATS engine fails, each naming how it
// differs from the local fleet (issue 32: the coordinator's own scheduler
// and merge queue give way to fleet's engine with a NATS executor).
var known = map[string]string{}

var scenarios = []scenario{
	{
		// a and b run in parallel; c joins them; bad fails and its
		// dependent is skipped; the rest merge in dependency order.
		name: "dag",
		files: map[string]string{
			"a.yaml":     writeScript("a.txt", "a\n"),
			"b.yaml":     writeScript("b.txt", "b\n"),
			"c.yaml":     writeScript("c.txt", "c\n"),
			"bad.yaml":   "steps:\n  - crash: {code: 3, stderr: broken}\n",
			"after.yaml": writeScript("after.txt", "after\n"),
			// policy approve: all: the tasks write files, which the default approve-reads denies.
			"plan.yaml": "name: dag\npolicy: {approve: all}\ntasks:\n" +
				"  - {id: a, script: a.yaml, prompt: a}\n  - {id: b, script: b.yaml, prompt: b}\n" +
				"  - {id: c, script: c.yaml, prompt: \"after {{ .Tasks.a.Message }}\", depends_on: [a, b]}\n" +
				"  - {id: bad, script: bad.yaml, prompt: bad}\n  - {id: after, script: after.yaml, prompt: after, depends_on: [bad]}\n",
		},
		run: func(t *testing.T, w *world) {
			s, o := w.fleetRun("dag")
			w.wantStatuses(s, o, 1, map[string]fleet.TaskStatus{"a": fleet.StatusMerged, "b": fleet.StatusMerged, "c": fleet.StatusMerged,
				"bad": fleet.StatusFailed, "after": fleet.StatusSkipped})
			if s.task(t, "after").Attempts != 0 {
				t.Errorf("the skipped task ran: %+v", s.task(t, "after"))
			}
			files := w.onTarget(s)
			for _, f := range []string{"a.txt", "b.txt", "c.txt"} {
				if !slices.Contains(files, f) {
					t.Errorf("%s is not on the target: %v", f, files)
				}
			}
			if slices.Contains(files, "after.txt") {
				t.Errorf("the skipped task's file is on the target")
			}
			var order []string
			for l := range strings.FieldsSeq(w.u.Git(w.repo, "log", "--reverse", "--format=%(trailers:key=Tai-Fleet-Task,valueonly)", s.Target)) {
				order = append(order, l)
			}
			c := slices.Index(order, "c")
			if c < 0 || slices.Index(order, "a") > c || slices.Index(order, "b") > c {
				t.Errorf("c merged before its dependencies: %v", order)
			}
			w.readBack(s)
		},
	},
	{
		// A task that changes a file outside its owns fails; its work is
		// kept on its branch, not merged.
		name: "owns",
		files: map[string]string{
			"in.yaml":  writeScript("docs/guide.md", "guide\n"),
			"out.yaml": writeScript("src/main.go", "package main\n"),
			// policy approve: all: the tasks write files, which the default approve-reads denies.
			"plan.yaml": "name: owns\npolicy: {approve: all}\ntasks:\n  - {id: in, script: in.yaml, prompt: x, owns: [docs/]}\n" +
				"  - {id: out, script: out.yaml, prompt: y, owns: [\"docs/**\"]}\n",
		},
		run: func(t *testing.T, w *world) {
			s, o := w.fleetRun("owns")
			w.wantStatuses(s, o, 1, map[string]fleet.TaskStatus{"in": fleet.StatusMerged, "out": fleet.StatusFailed})
			out := s.task(t, "out")
			if !strings.Contains(out.Reason, "changed files outside its owns: src/main.go") {
				t.Errorf("reason %q", out.Reason)
			}
			if slices.Contains(w.onTarget(s), "src/main.go") {
				t.Error("the work outside owns was merged")
			}
			if out.Branch == "" {
				t.Fatalf("no branch keeps the work: %+v", out)
			}
			if got := w.u.Git(w.repo, "show", out.Branch+":src/main.go"); got != "package main" {
				t.Errorf("the work outside owns on %s: %q", out.Branch, got)
			}
		},
	},
	{
		// The hard limit stops the task (its dependent skipped), exit 6.
		name: "budget-over",
		files: map[string]string{
			// Writes, reports a cost over its limit, then would work for an
			// hour: the budget stop ends it.
			"spend.yaml": "steps:\n  - write: {path: partial.txt, content: \"half\\n\"}\n  - usage: {used: 10, size: 100, cost: 2}\n  - delay: 3600\n  - write: {path: never.txt, content: x}\n",
			// policy approve: all: the tasks write files, which the default approve-reads denies.
			"plan.yaml": "name: spend\npolicy: {approve: all}\nbudget: {cost: 10}\ntasks:\n  - {id: spend, script: spend.yaml, prompt: go, budget: {cost: 1}}\n" +
				"  - {id: after, script: spend.yaml, prompt: go, depends_on: [spend]}\n",
		},
		run: func(t *testing.T, w *world) {
			s, o := w.fleetRun("spend")
			w.wantStatuses(s, o, 6, map[string]fleet.TaskStatus{"spend": fleet.StatusBudget, "after": fleet.StatusSkipped})
			if slices.Contains(w.onTarget(s), "never.txt") {
				t.Error("the turn was not stopped at the limit")
			}
		},
	},
	{
		// A reservation the fleet's budget cannot give is refused, saying
		// why; the task that fits merges; exit 6.
		name: "budget-refused",
		files: map[string]string{
			"s.yaml": writeScript("s.txt", "s\n"),
			// policy approve: all: the tasks write files, which the default approve-reads denies.
			"plan.yaml": "name: refuse\npolicy: {approve: all}\nbudget: {tokens: 1000}\ntasks:\n  - {id: small, script: s.yaml, prompt: s, budget: {tokens: 400}}\n" +
				"  - {id: big, script: s.yaml, prompt: s, budget: {tokens: 5000}}\n",
		},
		run: func(t *testing.T, w *world) {
			s, o := w.fleetRun("refuse")
			w.wantStatuses(s, o, 6, map[string]fleet.TaskStatus{"small": fleet.StatusMerged, "big": fleet.StatusRefused})
			if r := s.task(t, "big").Reason; !strings.Contains(r, "needs 5000 tokens; the fleet has 1000 of 1000 left") {
				t.Errorf("reason %q", r)
			}
		},
	},
	{
		// The agent asks; the plan's answerer answers; the agent goes on
		// with the answer and its work merges.
		name: "question",
		files: map[string]string{
			"ask.yaml":      "steps:\n  - write: {path: asked, content: \"1\\n\"}\n  - text: \"Which colour should I use?\"\n",
			"done.yaml":     "steps:\n  - write: {path: colour.txt, content: \"blue\\n\"}\n  - text: \"Painted it blue.\"\n",
			"answerer.yaml": "steps:\n  - text: \"Use blue.\"\n",
			// policy approve: all: the tasks write files, which the default approve-reads denies.
			"plan.yaml": "name: ask\npolicy: {approve: all}\nanswerer: {script: answerer.yaml}\ntasks:\n" +
				"  - id: paint\n    agent: builtin\n" +
				"    agent_cmd: \"sh -c 'if [ -e asked ]; then exec tai agent builtin --script done.yaml; else exec tai agent builtin --script ask.yaml; fi'\"\n" +
				"    prompt: paint it\n",
		},
		run: func(t *testing.T, w *world) {
			s, o := w.fleetRun("ask")
			w.wantStatuses(s, o, 0, map[string]fleet.TaskStatus{"paint": fleet.StatusMerged})
			qs := s.task(t, "paint").Questions
			if len(qs) != 1 || qs[0].Question != "Which colour should I use?" || qs[0].Answer != "Use blue." || qs[0].DecidedBy != "answerer" {
				t.Errorf("questions %+v", qs)
			}
			if got := w.u.Git(w.repo, "show", s.Target+":colour.txt"); got != "blue" {
				t.Errorf("colour.txt on the target: %q", got)
			}
		},
	},
	{
		// Two tasks change the same line from the same base: one merges,
		// the other is a conflict naming the file, its work kept; exit 7.
		name:   "conflict",
		shared: true,
		files: map[string]string{
			// Each waits for the other to have started before it writes,
			// so that both start from the run's base whatever the load.
			"x.yaml": "steps:\n  - run: {command: sh, args: [-c, 'touch SHARED/x; until [ -e SHARED/y ]; do sleep 0.01; done']}\n  - write: {path: same.txt, content: \"from x\\n\"}\n  - text: done\n",
			"y.yaml": "steps:\n  - run: {command: sh, args: [-c, 'touch SHARED/y; until [ -e SHARED/x ]; do sleep 0.01; done']}\n  - write: {path: same.txt, content: \"from y\\n\"}\n  - text: done\n",
			// policy approve: all: the tasks write and run commands, which the default approve-reads denies.
			"plan.yaml": "name: conflict\npolicy: {approve: all}\ntasks:\n  - {id: x, script: x.yaml, prompt: x}\n  - {id: y, script: y.yaml, prompt: y}\n",
		},
		run: func(t *testing.T, w *world) {
			s, o := w.fleetRun("conf")
			won, lost := "x", "y"
			if s.statuses()["x"] == fleet.StatusConflict {
				won, lost = "y", "x"
			}
			w.wantStatuses(s, o, 7, map[string]fleet.TaskStatus{won: fleet.StatusMerged, lost: fleet.StatusConflict})
			ts := s.task(t, lost)
			if !slices.Equal(ts.ConflictFiles, []string{"same.txt"}) {
				t.Errorf("conflict files %v", ts.ConflictFiles)
			}
			if !regexp.MustCompile(`(?m) ` + lost + ` +conflict +same\.txt$`).MatchString(o.Stderr) {
				t.Errorf("the progress does not name the conflict's file:\n%s", o.Stderr)
			}
			if got := w.u.Git(w.repo, "show", s.Target+":same.txt"); got != "from "+won {
				t.Errorf("same.txt on the target: %q", got)
			}
			if ts.Branch == "" {
				t.Fatalf("no branch keeps the conflicting work: %+v", ts)
			}
			if got := w.u.Git(w.repo, "show", ts.Branch+":same.txt"); got != "from "+lost {
				t.Errorf("the conflicting work on %s: %q", ts.Branch, got)
			}
		},
	},
	{
		// The plan's check runs before each merge: the task whose work
		// fails it fails and is not merged; the other merges.
		name: "check",
		files: map[string]string{
			"good.yaml": writeScript("good.txt", "good\n"),
			"bad.yaml":  writeScript("bad.txt", "bad\n"),
			// policy approve: all: the tasks write files, which the default approve-reads denies.
			"plan.yaml": "name: check\npolicy: {approve: all}\ncheck: test ! -e bad.txt\ntasks:\n  - {id: good, script: good.yaml, prompt: good}\n  - {id: bad, script: bad.yaml, prompt: bad}\n",
		},
		run: func(t *testing.T, w *world) {
			s, o := w.fleetRun("check")
			w.wantStatuses(s, o, 1, map[string]fleet.TaskStatus{"good": fleet.StatusMerged, "bad": fleet.StatusFailed})
			if r := s.task(t, "bad").Reason; !strings.Contains(r, "check") {
				t.Errorf("the failure does not name the check: %q", r)
			}
			files := w.onTarget(s)
			if !slices.Contains(files, "good.txt") || slices.Contains(files, "bad.txt") {
				t.Errorf("target files %v", files)
			}
		},
	},
	{
		// kill -9 of the fleet's process while q0-q2 are merged and slow
		// works; resume finishes it: no finished task runs again,
		// everything is merged.
		name:   "kill9-resume",
		shared: true,
		files: map[string]string{
			"q0.yaml": countScript("q0"), "q1.yaml": countScript("q1"), "q2.yaml": countScript("q2"), "last.yaml": countScript("last"),
			// Its first run holds on the FIFO (the test's sign that it is
			// working) until the test lets it go; later runs do not.
			"slow.yaml": "steps:\n  - run: {command: sh, args: [-c, 'echo x >> SHARED/slow; if [ $(wc -l < SHARED/slow) -eq 1 ]; then cat SHARED/fifo >/dev/null; fi']}\n" +
				"  - write: {path: slow.txt, content: \"slow\\n\"}\n  - text: done\n",
			// policy approve: all: the tasks write and run commands, which the default approve-reads denies.
			"plan.yaml": "name: kill\npolicy: {approve: all}\ntasks:\n  - {id: slow, script: slow.yaml, prompt: slow}\n" +
				"  - {id: q0, script: q0.yaml, prompt: q0}\n  - {id: q1, script: q1.yaml, prompt: q1}\n  - {id: q2, script: q2.yaml, prompt: q2}\n" +
				"  - {id: last, script: last.yaml, prompt: last, depends_on: [slow, q0]}\n",
		},
		run: testKill9Resume,
	},
}

// countScript counts its runs in the shared directory, then writes its
// file.
func countScript(id string) string {
	return fmt.Sprintf("steps:\n  - run: {command: sh, args: [-c, 'echo x >> SHARED/%[1]s']}\n  - write: {path: %[1]s.txt, content: \"%[1]s\\n\"}\n  - text: done\n", id)
}

func testKill9Resume(t *testing.T, w *world) {
	fifo := filepath.Join(w.shared, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// A guard against a hang only: nothing waits on time.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// slow's agent is at work once it opens the FIFO: the open for writing
	// returns then.
	holding := make(chan *os.File, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			holding <- f
		}
		close(holding)
	}()
	t.Cleanup(func() { // unblocks the open above if it never returned
		if f, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})

	cmd := w.u.Command(w.repo, taiBin, append(append([]string{"fleet", "run", "--run-id", "kill9"}, w.args...), "plan.yaml")...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// A file, not a pipe: agents that outlive the kill hold their stderr
	// open, and Wait would wait for them.
	errFile, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	cmd.Stderr = errFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	// Until q0-q2 are merged (their progress lines) and slow holds the
	// FIFO.
	merged := map[string]bool{}
	var seen []string
	for len(merged) < 3 {
		select {
		case l, ok := <-lines:
			if !ok {
				errText, _ := os.ReadFile(errFile.Name())
				t.Fatalf("the fleet ended before q0-q2 merged:\n%s\nstderr:\n%s", strings.Join(seen, "\n"), errText)
			}
			seen = append(seen, l)
			if f := strings.Fields(l); len(f) >= 3 && f[2] == "merged" && strings.HasPrefix(f[1], "q") {
				merged[f[1]] = true
			}
		case <-ctx.Done():
			t.Fatalf("the guard ran out before q0-q2 merged:\n%s", strings.Join(seen, "\n"))
		}
	}
	var hold *os.File
	select {
	case hold = <-holding:
	case <-ctx.Done():
		t.Fatal("slow's agent never opened its FIFO")
	}
	if hold == nil {
		t.Fatal("opening the FIFO failed")
	}
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// A local fleet's agents lose their stdin and go; the group's kill
	// makes sure. A worker's agent is not the fleet process's: let it go
	// on (it finishes while nothing coordinates).
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	hold.Close()
	go func() {
		for range lines {
		}
	}()

	args := append([]string{"fleet", "resume", "kill9", "-o", "json"}, w.args...)
	o := build.Run(t, taiBin, w.repo, w.u.Env, args...)
	s := w.runResult(o)
	if o.Code != 0 || s.Counts[fleet.StatusMerged] != 5 {
		t.Fatalf("resume: exit %d, statuses %v\nstderr:\n%s", o.Code, s.statuses(), o.Stderr)
	}
	for _, id := range []string{"q0", "q1", "q2", "last"} {
		b, _ := os.ReadFile(filepath.Join(w.shared, id))
		if n := strings.Count(string(b), "x"); n != 1 {
			t.Errorf("%s ran %d times, want once", id, n)
		}
	}
	files := w.onTarget(s)
	for _, f := range []string{"q0.txt", "q1.txt", "q2.txt", "slow.txt", "last.txt"} {
		if !slices.Contains(files, f) {
			t.Errorf("%s is not on the target: %v", f, files)
		}
	}
}
