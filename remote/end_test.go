package remote

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/fleet"
)

// The end of a run waits for no idle poll: the coordinator's pulls (of
// results and of its workers' events) end when the run's tasks have, and
// the events already on the stream are forwarded before run.end. With
// polls of an hour, a run whose end waited for one would not end before
// the guard.
func TestRunEndWaitsForNoPoll(t *testing.T) {
	old := idlePoll
	idlePoll = time.Hour
	t.Cleanup(func() { idlePoll = old })
	h := startHub(t)
	stop := startWorkers(t, h.url, 1, 10*time.Second)
	defer stop()
	b := openBus(t, h.url, "coordinator")
	_, plan := dagRepo(t, 2)
	log, err := audit.Open(filepath.Join(t.TempDir(), "audit.jsonl"), audit.Options{Run: "end"})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	var kinds []string
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a guard against the wait only
	defer cancel()
	st, err := Coordinate(ctx, CoordinatorOptions{Bus: b, Plan: plan, RunID: "end", Dir: t.TempDir(), Lease: 10 * time.Second, Audit: log,
		Logger: testLogger(), Progress: func(ev fleet.Event) { kinds = append(kinds, string(ev.Task)+" "+string(ev.Kind)) }})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != "done" {
		t.Fatalf("run %s (exit %d), want done; events %q", st.Status, st.ExitCode, kinds)
	}
	// The workers' starts came through, and nothing after run.end.
	started := 0
	for i, k := range kinds {
		switch k {
		case "t00 worker.started", "t01 worker.started":
			started++
		case " run.end":
			if i != len(kinds)-1 {
				t.Errorf("events after run.end: %q", kinds[i+1:])
			}
		}
	}
	if started != 2 {
		t.Errorf("%d worker.started events forwarded, want 2: %q", started, kinds)
	}
}
