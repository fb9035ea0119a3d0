package remote

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/fleet"
)

// noopRepo makes a repository with a plan of n independent no-op tasks
// (the built-in agent says one line and changes nothing).
func noopRepo(b *testing.B, n int, chain bool) *fleet.Plan {
	b.Helper()
	dir := b.TempDir()
	sh(b, dir, "git", "init", "-q", "-b", "main")
	sh(b, dir, "git", "config", "user.email", "t@example.com")
	sh(b, dir, "git", "config", "user.name", "T")
	var plan strings.Builder
	plan.WriteString("name: noop\npolicy: {approve: all}\ntasks:\n")
	for i := range n {
		dep := ""
		if chain && i > 0 {
			dep = fmt.Sprintf(", depends_on: [n%02d]", i-1)
		}
		fmt.Fprintf(&plan, "  - {id: n%02d, script: noop.yaml, prompt: noop%s}\n", i, dep)
	}
	for f, c := range map[string]string{"plan.yaml": plan.String(), "noop.yaml": "steps:\n  - text: nothing to do\n"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(c), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	sh(b, dir, "git", "add", "-A")
	sh(b, dir, "git", "commit", "-q", "-m", "init")
	p, err := fleet.LoadPlan(filepath.Join(dir, "plan.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	return p
}

const benchTasks = 30

// BenchmarkNoopTasks: tasks/s for no-op tasks with 1, 3 and 10 workers
// over a hub (go.mod's nats-server), and the same plan run by a local fleet at the
// same concurrency; over NATS also the dispatch latency (offered to
// started on a worker).
func BenchmarkNoopTasks(b *testing.B) {
	for _, n := range []int{1, 3, 10} {
		b.Run(fmt.Sprintf("nats-workers=%d", n), func(b *testing.B) {
			h := startHub(b)
			stop := startWorkers(b, h.url, n, 10*time.Second)
			defer stop()
			bus := openBus(b, h.url, "coordinator")
			var total time.Duration
			var lat time.Duration
			var lats int
			for i := 0; b.Loop(); i++ {
				plan := noopRepo(b, benchTasks, false)
				log, err := audit.Open(filepath.Join(b.TempDir(), "audit.jsonl"), audit.Options{Run: "bench"})
				if err != nil {
					b.Fatal(err)
				}
				var mu sync.Mutex
				offered := map[string]time.Time{}
				t0 := time.Now()
				st, err := Coordinate(context.Background(), CoordinatorOptions{Bus: bus, Plan: plan, RunID: fmt.Sprintf("bench%d", i), Dir: b.TempDir(),
					Concurrency: n, Lease: 10 * time.Second, Audit: log, Progress: func(ev fleet.Event) {
						mu.Lock()
						defer mu.Unlock()
						switch ev.Kind {
						case "offered":
							offered[ev.Task] = ev.Time
						case "worker.started":
							if o, ok := offered[ev.Task]; ok {
								lat += ev.Time.Sub(o)
								lats++
							}
						}
					}})
				total += time.Since(t0)
				_ = log.Close()
				if err != nil {
					b.Fatal(err)
				}
				for id, ts := range st.Tasks {
					if ts.Status != fleet.StatusMerged {
						b.Fatalf("task %s %s: %s", id, ts.Status, ts.Reason)
					}
				}
			}
			b.ReportMetric(float64(benchTasks*b.N)/total.Seconds(), "tasks/s")
			if lats > 0 {
				// With every task offered at once this includes the wait for a free worker.
				b.ReportMetric(float64((lat/time.Duration(lats)).Microseconds())/1000, "offer-to-start-ms")
			}
		})
		b.Run(fmt.Sprintf("local-concurrency=%d", n), func(b *testing.B) {
			exe, err := os.Executable()
			if err != nil {
				b.Fatal(err)
			}
			var total time.Duration
			for i := 0; b.Loop(); i++ {
				plan := noopRepo(b, benchTasks, false)
				log, err := audit.Open(filepath.Join(b.TempDir(), "audit.jsonl"), audit.Options{Run: "bench"})
				if err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				st, err := fleet.Run(context.Background(), fleet.Options{Plan: plan, Repo: plan.Dir, RunID: fmt.Sprintf("bench%d", i), Dir: b.TempDir(), Concurrency: n, Audit: log, Exe: exe})
				total += time.Since(t0)
				_ = log.Close()
				if err != nil || st.ExitCode != 0 {
					b.Fatalf("%v %+v", err, st)
				}
			}
			b.ReportMetric(float64(benchTasks*b.N)/total.Seconds(), "tasks/s")
		})
	}
}

// BenchmarkDispatch: the latency from a task's offer to its start in a
// worker's worktree (clone fetched, worktree made), one task at a time (a
// chain), so no task waits for a busy worker.
func BenchmarkDispatch(b *testing.B) {
	h := startHub(b)
	stop := startWorkers(b, h.url, 1, 10*time.Second)
	defer stop()
	bus := openBus(b, h.url, "coordinator")
	var lat time.Duration
	var lats int
	for i := 0; b.Loop(); i++ {
		plan := noopRepo(b, 10, true)
		log, err := audit.Open(filepath.Join(b.TempDir(), "audit.jsonl"), audit.Options{Run: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		offered := map[string]time.Time{}
		st, err := Coordinate(context.Background(), CoordinatorOptions{Bus: bus, Plan: plan, RunID: fmt.Sprintf("chain%d", i), Dir: b.TempDir(),
			Lease: 10 * time.Second, Audit: log, Progress: func(ev fleet.Event) {
				switch ev.Kind {
				case "offered":
					offered[ev.Task] = ev.Time
				case "worker.started":
					if o, ok := offered[ev.Task]; ok {
						lat += ev.Time.Sub(o)
						lats++
					}
				}
			}})
		_ = log.Close()
		if err != nil || st.ExitCode != 0 {
			b.Fatalf("%v exit %d", err, st.ExitCode)
		}
	}
	if lats > 0 {
		b.ReportMetric(float64((lat/time.Duration(lats)).Microseconds())/1000, "dispatch-ms")
	}
}
