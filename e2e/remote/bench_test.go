package remote_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/remote"
)

// benchTasks and benchSlots: the fleet of trivial tasks, run four
// at a time by both.
const benchTasks, benchSlots = 8, 4

// BenchmarkFleetLocalVsNATS runs the same plan of trivial tasks (the
// built-in agent says one line) as a user would, through the real tai: by
// `tai fleet run` here, and by `tai fleet run --nats` with `tai hub` and
// one `tai worker --slots 4` on this host (each with its defaults: a
// user's HOME, the default sandbox, the worker's default directory). It
// reports each one's wall time per run, their ratio (the goal: nats/local
// at most 1.5), and the dispatch latency over NATS, from a task's offer
// (the coordinator's event) to its start on the worker (the worker's, in
// its worktree), p50 and p99, read from the run's events stream: dispatch
// with the wait for a free slot, slot-to-start without it.
//
//	go test ./e2e/remote -run x -bench FleetLocalVsNATS -count 6 | tee new.txt; benchstat old.txt new.txt
func BenchmarkFleetLocalVsNATS(b *testing.B) {
	e, _ := userEnv(b)
	url := firstLine(e, e.cmd(taiBin, "hub", "--listen", "127.0.0.1:0"))
	w := e.cmd(taiBin, "worker", "--nats", url, "--name", "bench", "--slots", fmt.Sprint(benchSlots))
	w.Stderr = io.Discard
	e.start(w)
	token, err := os.ReadFile(filepath.Join(e.state, "tai", "secrets", "nats-token"))
	if err != nil {
		b.Fatal(err)
	}
	nc, err := remote.Connect(url, "", strings.TrimSpace(string(token)), "bench")
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	bus, err := remote.Open(context.Background(), nc)
	if err != nil {
		b.Fatal(err)
	}
	var local, nats time.Duration
	var dispatch, ready []time.Duration
	for i := 0; b.Loop(); i++ {
		repo := noopRepo(b)
		plan := filepath.Join(repo, "plan.yaml")
		local += timed(b, e, "fleet", "run", "--run-id", fmt.Sprintf("local%d", i), "-C", repo, plan)
		run := fmt.Sprintf("nats%d", i)
		nats += timed(b, e, "fleet", "run", "--nats", url, "--run-id", run, "-C", repo, plan)
		q, r := dispatchTimes(b, bus, run)
		dispatch, ready = append(dispatch, q...), append(ready, r...)
	}
	n := float64(b.N)
	b.ReportMetric(local.Seconds()/n, "local-s/run")
	b.ReportMetric(nats.Seconds()/n, "nats-s/run")
	b.ReportMetric(nats.Seconds()/local.Seconds(), "nats/local")
	report := func(d []time.Duration, name string) {
		slices.Sort(d)
		b.ReportMetric(ms(d[len(d)/2]), name+"-p50-ms")
		b.ReportMetric(ms(d[min(len(d)-1, len(d)*99/100)]), name+"-p99-ms")
	}
	report(dispatch, "dispatch")
	report(ready, "slot-to-start")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// noopRepo is a repository with a plan of benchTasks independent tasks
// that change nothing.
func noopRepo(b *testing.B) string {
	b.Helper()
	// policy approve: all: the tasks write and run commands, which the default approve-reads denies.
	plan := fmt.Sprintf("name: noop\npolicy: {approve: all}\nconcurrency: %d\ntasks:\n", benchSlots)
	for i := range benchTasks {
		plan += fmt.Sprintf("  - {id: n%d, script: noop.yaml, prompt: noop}\n", i)
	}
	return planRepo(b, map[string]string{"plan.yaml": plan, "noop.yaml": "steps:\n  - text: nothing to do\n"})
}

// timed runs tai with args and returns its wall time; the run must
// succeed.
func timed(b *testing.B, e *env, args ...string) time.Duration {
	b.Helper()
	t0 := time.Now()
	out, err := e.cmd(taiBin, args...).CombinedOutput()
	d := time.Since(t0)
	if err != nil {
		b.Fatalf("tai %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return d
}

// dispatchTimes are a run's tasks' times from offer to start on the
// worker (queueing for a slot included: 8 tasks on 4 slots), and from when
// a task was offered and a slot free (the report that freed it) to start.
func dispatchTimes(b *testing.B, bus *remote.Bus, run string) (queued, ready []time.Duration) {
	b.Helper()
	offered := map[string]time.Time{}
	type at struct {
		task string
		t    time.Time
	}
	var starts []at
	var reports []time.Time
	err := remote.Events(context.Background(), bus, run, false, func(ev remote.EventMsg) error {
		switch {
		case ev.Kind == "offered" && ev.Worker == "":
			offered[ev.Task] = ev.Time
		case ev.Kind == "started" && ev.Worker != "":
			starts = append(starts, at{ev.Task, ev.Time})
		case ev.Kind == "reported" && ev.Worker != "":
			reports = append(reports, ev.Time)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	slices.SortFunc(starts, func(x, y at) int { return x.t.Compare(y.t) })
	slices.SortFunc(reports, func(x, y time.Time) int { return x.Compare(y) })
	for i, s := range starts {
		o, ok := offered[s.task]
		if !ok {
			continue
		}
		queued = append(queued, s.t.Sub(o))
		// The i-th start had a slot once the (i-slots)-th report freed one.
		free := o
		if j := i - benchSlots; j >= 0 && j < len(reports) && reports[j].After(free) {
			free = reports[j]
		}
		ready = append(ready, s.t.Sub(free))
	}
	if len(queued) != benchTasks {
		b.Fatalf("run %s: %d tasks' offer and start on the events stream, want %d", run, len(queued), benchTasks)
	}
	return queued, ready
}
