package remote

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/fleet"
)

// A coordinator killed after it recorded a merge and before its lease said
// so leaves the lease accepted with the attempt in the target. The next
// coordinator marks the lease merged and records the merge only where the
// run's audit log does not have it already: once in all, never none.
func TestResumeRecordsAKilledCoordinatorsMergeOnce(t *testing.T) {
	h := startHub(t)
	repo, plan := dagRepo(t, 1)
	stop := startWorkers(t, h.url, 1, 5*time.Second)
	defer stop()
	b := openBus(t, h.url, "coordinator")
	runDir := t.TempDir()
	ctx := context.Background()
	coordinate := func(auditPath string, resume bool) (map[string]int, *fleet.State) {
		t.Helper()
		log, err := audit.Open(auditPath, audit.Options{Run: "r"})
		if err != nil {
			t.Fatal(err)
		}
		defer log.Close()
		var mu sync.Mutex
		merged := map[string]int{}
		o := CoordinatorOptions{Bus: b, RunID: "r", Dir: runDir, Lease: 5 * time.Second, Audit: log, Resume: resume, Logger: testLogger(),
			Progress: func(ev fleet.Event) {
				mu.Lock()
				defer mu.Unlock()
				if ev.Kind == "merged" {
					merged[ev.Task]++
				}
			}}
		if !resume {
			o.Plan, o.Repo = plan, repo
		}
		st, err := Coordinate(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if st.ExitCode != 0 || st.Tasks["t00"].Status != fleet.StatusMerged {
			t.Fatalf("exit %d: %+v", st.ExitCode, st.Tasks["t00"])
		}
		return merged, st
	}
	// The lease as a coordinator killed between the two leaves it.
	unmark := func() {
		t.Helper()
		l, rev, err := b.GetLease(ctx, "r", "t00")
		if err != nil || l.State != LeaseMerged {
			t.Fatalf("lease %+v, %v; want merged", l, err)
		}
		l.State = LeaseAccepted
		if _, err := b.PutLease(ctx, "r", "t00", l, rev); err != nil {
			t.Fatal(err)
		}
	}
	runAudit := filepath.Join(runDir, "audit.jsonl")
	if merged, _ := coordinate(runAudit, false); merged["t00"] != 1 {
		t.Fatalf("first coordinator: merged %d times", merged["t00"])
	}
	unmark()
	if merged, _ := coordinate(runAudit, true); merged["t00"] != 0 {
		t.Errorf("resumed with the merge in the audit log: recorded again (%d)", merged["t00"])
	}
	if l, _, _ := b.GetLease(ctx, "r", "t00"); l.State != LeaseMerged {
		t.Errorf("lease %s after the resume, want merged", l.State)
	}
	// Where the log does not have it (another host's, or the record was
	// lost with the kill), the merge is recorded: never not at all.
	unmark()
	if merged, _ := coordinate(filepath.Join(t.TempDir(), "audit.jsonl"), true); merged["t00"] != 1 {
		t.Errorf("resumed without the merge in the audit log: recorded %d times, want 1", merged["t00"])
	}
}

// A dependent offered by a resumed coordinator gets the result of a
// dependency merged before the restart as a local fleet's dependent does:
// the diff of its accepted attempt, from JetStream's record of it.
func TestResumedDependentGetsItsMergedDependencysDiff(t *testing.T) {
	h := startHub(t)
	repo, plan := dagRepo(t, 4) // t03 depends on t00
	for i := range plan.Tasks {
		if plan.Tasks[i].ID == "t03" {
			plan.Tasks[i].Prompt = "after: {{ .Tasks.t00.Diff }}"
		}
	}
	stop := startWorkers(t, h.url, 1, 5*time.Second)
	b := openBus(t, h.url, "coordinator")
	runDir := t.TempDir()
	log, err := audit.Open(filepath.Join(runDir, "audit.jsonl"), audit.Options{Run: "r"})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	// The first coordinator stops as soon as t00 is merged, before t03 is
	// offered.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := Coordinate(ctx, CoordinatorOptions{Bus: b, Plan: plan, Repo: repo, RunID: "r", Dir: runDir, Lease: 5 * time.Second, Audit: log,
		Logger: testLogger(), Progress: func(ev fleet.Event) {
			if ev.Kind == fleet.EventMerged && ev.Task == "t00" {
				cancel()
			}
		}}); err != nil {
		t.Fatal(err)
	}
	stop() // nobody takes t03 from the queue: its offer is read below
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	var prompt string
	if _, err := Coordinate(ctx, CoordinatorOptions{Bus: b, RunID: "r", Dir: runDir, Resume: true, Lease: 5 * time.Second, Audit: log,
		Logger: testLogger(), Progress: func(ev fleet.Event) {
			if ev.Kind != fleet.EventOffered || ev.Task != "t03" {
				return
			}
			defer cancel()
			m, err := b.Tasks.GetLastMsgForSubject(ctx, taskSubject("builtin", "r", "t03"))
			if err != nil {
				t.Errorf("t03's offer: %v", err)
				return
			}
			var tm TaskMsg
			if err := json.Unmarshal(m.Data, &tm); err != nil {
				t.Errorf("t03's offer: %v", err)
			}
			prompt = tm.Prompt
		}}); err != nil {
		t.Fatal(err)
	}
	if want := "after: 1 file(s) changed, +1 -0: f00.txt"; prompt != want {
		t.Errorf("t03's prompt %q, want %q", prompt, want)
	}
}
