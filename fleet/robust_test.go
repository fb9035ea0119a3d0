package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/worktree"
)

// runIn runs a fleet (or resumes one) in run directory dir and returns
// its state, its events and Run's error.
func runIn(t *testing.T, repo, dir string, p *Plan, mutate func(o *Options)) (*State, []Event, error) {
	t.Helper()
	log, err := audit.Open(filepath.Join(dir, "audit.jsonl"), audit.Options{Run: "r", TruncatePartial: true})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events []Event
	o := Options{Plan: p, RunID: "r", Dir: dir, Repo: repo, Audit: log, Exe: os.Args[0], Resume: p == nil,
		Progress: func(e Event) { mu.Lock(); events = append(events, e); mu.Unlock() }}
	if mutate != nil {
		mutate(&o)
	}
	st, err := Run(context.Background(), o)
	if cerr := log.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	return st, events, err
}

func loadPlan(t *testing.T, pd string) *Plan {
	t.Helper()
	p, err := LoadPlan(filepath.Join(pd, "plan.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func started(events []Event, task string) int {
	n := 0
	for _, e := range events {
		if e.Kind == "started" && e.Task == task {
			n++
		}
	}
	return n
}

// A full disk: once the state cannot be saved the fleet merges nothing
// more and says why; resume finds in git the work that is already in the
// target (even when the state says otherwise) and does not run it again.
func TestStateWriteFailureStopsMergesAndResumeTrustsGit(t *testing.T) {
	repo, pd, dir := gitRepo(t), t.TempDir(), t.TempDir()
	fixture(t, pd, map[string]string{
		"a.yaml": writeScript("a.txt", "a\n"), "b.yaml": writeScript("b.txt", "b\n"),
		"plan.yaml": "policy: {approve: all}\nconcurrency: 1\ntasks:\n  - {id: a, script: a.yaml, prompt: a}\n  - {id: b, script: b.yaml, prompt: b, depends_on: [a]}\n",
	})
	full := false
	_, _, err := runIn(t, repo, dir, loadPlan(t, pd), func(o *Options) {
		o.writeState = func(path string, data []byte) error {
			// The disk fills up as a's merge is recorded, and stays full.
			full = full || strings.Contains(string(data), `"status": "merged"`)
			if full {
				return fmt.Errorf("write %s: %w", path, syscall.ENOSPC)
			}
			return worktree.WriteFileAtomic(path, data, 0o600)
		}
	})
	if err == nil || !strings.Contains(err.Error(), "state could not be saved") || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Run: %v, want the failed state write", err)
	}
	if exitcode.Of(err) == exitcode.OK {
		t.Fatal("exit 0 after a failed state write")
	}
	files := run(t, repo, "git", "ls-tree", "--name-only", "tai-fleet/r")
	if !strings.Contains(files, "a.txt") || strings.Contains(files, "b.txt") {
		t.Fatalf("the fleet went on merging after the failed write:\n%s", files)
	}
	// The state on disk is behind git; make it further behind (as lost
	// writes would leave it): a still "running".
	st, err := LoadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	st.Tasks["a"].Status = StatusRunning
	b, _ := json.Marshal(st)
	if err := os.WriteFile(filepath.Join(dir, "state.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	final, events, err := runIn(t, repo, dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if final.ExitCode != 0 || final.Tasks["a"].Status != StatusMerged || final.Tasks["b"].Status != StatusMerged {
		t.Fatalf("resume: exit %d, a %s, b %s (%s)", final.ExitCode, final.Tasks["a"].Status, final.Tasks["b"].Status, final.Tasks["b"].Reason)
	}
	if n := started(events, "a"); n != 0 {
		t.Fatalf("resume ran a again (%d times) though its work is in the target", n)
	}
	if log := run(t, repo, "git", "log", "--format=%(trailers:key=Tai-Fleet-Task,valueonly)", "tai-fleet/r"); strings.Count(log+"\n", "a\n") != 1 {
		t.Fatalf("a merged twice:\n%s", log)
	}
}

// Budgets under concurrency: 4 tasks at -j 4 share 4000 tokens (1000
// each). Each reports 300, 600, 900: the next update would pass its
// reservation, so it is cancelled there. One that ignores the cancel and
// spends once more, past its reservation, is killed at once (not after
// the cancel grace), and that spending counts against it.
func TestBudgetHoldsUnderConcurrency(t *testing.T) {
	tests := []struct {
		name    string
		tail    string
		perTask int64
	}{
		{"agents that stop on cancel", "  - delay: 3600\n  - usage: {used: 5000, size: 100000}\n", 900},
		{"agents that ignore the cancel", "  - spend_after_cancel: {used: 1200, size: 100000}\n", 1200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo, pd := gitRepo(t), t.TempDir()
			script := "steps:\n  - write: {path: FILE, content: \"x\\n\"}\n  - usage: {used: 300, size: 100000}\n  - usage: {used: 600, size: 100000}\n  - usage: {used: 900, size: 100000}\n" + tt.tail
			plan := "policy: {approve: all}\nconcurrency: 4\nbudget: {tokens: 4000, wall_time: 10m}\ntasks:\n"
			files := map[string]string{}
			for i := range 4 {
				files[fmt.Sprintf("t%d.yaml", i)] = strings.ReplaceAll(script, "FILE", fmt.Sprintf("t%d.txt", i))
				plan += fmt.Sprintf("  - {id: t%d, script: t%d.yaml, prompt: go}\n", i, i)
			}
			files["plan.yaml"] = plan
			fixture(t, pd, files)
			// A grace no test outlives: the agent that spends past its
			// reservation is killed at once, one that stops on the cancel
			// ends by itself.
			out := runPlan(t, repo, pd, func(o *Options) { o.CancelGrace = time.Hour })
			if exitcode.Code(out.st.ExitCode) != exitcode.BudgetExceeded {
				t.Fatalf("exit %d", out.st.ExitCode)
			}
			var sum int64
			for id, ts := range out.st.Tasks {
				if ts.Status != StatusBudget || !strings.Contains(ts.Reason, "tokens") {
					t.Errorf("%s: %s (%s), want stopped at its token reservation", id, ts.Status, ts.Reason)
				}
				if ts.Usage.Tokens != tt.perTask {
					t.Errorf("%s used %d tokens, want %d", id, ts.Usage.Tokens, tt.perTask)
				}
				sum += ts.Usage.Tokens
			}
			if out.st.Usage.Tokens != sum {
				t.Errorf("fleet usage %d, tasks' sum %d", out.st.Usage.Tokens, sum)
			}
			// cap.md's bound: the limit plus one update per running task.
			if bound := int64(4000 + 4*300); out.st.Usage.Tokens > bound {
				t.Errorf("fleet used %d tokens, over the bound %d", out.st.Usage.Tokens, bound)
			}
		})
	}
}

// The fleet's wall-time budget, on the injected clock: when it runs out
// the running task is stopped and the run ends with exit 6.
func TestFleetWallTime(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	fixture(t, pd, map[string]string{
		"slow.yaml": "steps:\n  - write: {path: s.txt, content: \"s\\n\"}\n  - delay: 3600\n",
		"plan.yaml": "policy: {approve: all}\nbudget: {wall_time: 10m}\ntasks:\n  - {id: slow, script: slow.yaml, prompt: go}\n  - {id: next, script: slow.yaml, prompt: go, depends_on: [slow]}\n",
	})
	clk := quartz.NewMock(t)
	trap := clk.Trap().AfterFunc("fleet", "wall")
	defer trap.Close()
	startedCh := make(chan struct{})
	var once sync.Once
	done := make(chan runOut, 1)
	go func() {
		done <- runPlan(t, repo, pd, func(o *Options) {
			o.Clock = clk
			prog := o.Progress
			o.Progress = func(e Event) {
				prog(e)
				if e.Kind == "started" {
					once.Do(func() { close(startedCh) })
				}
			}
		})
	}()
	ctx := context.Background()
	trap.MustWait(ctx).MustRelease(ctx)
	<-startedCh
	clk.Advance(10 * time.Minute).MustWait(ctx)
	out := <-done
	if exitcode.Code(out.st.ExitCode) != exitcode.BudgetExceeded {
		t.Fatalf("exit %d: %+v", out.st.ExitCode, out.st.Tasks["slow"])
	}
	if ts := out.st.Tasks["slow"]; ts.Status != StatusBudget || !strings.Contains(ts.Reason, "wall time of 10m0s") {
		t.Fatalf("slow: %s (%s)", ts.Status, ts.Reason)
	}
	if s := out.st.Tasks["next"].Status; s == StatusMerged || s == StatusRunning {
		t.Fatalf("next: %s", s)
	}
}

// Two running tasks whose owns: overlap are warned about. They meet on a
// FIFO, so both are running at once whatever the machine's load.
func TestOwnsOverlapWarning(t *testing.T) {
	repo, pd := gitRepo(t), t.TempDir()
	fifo := filepath.Join(t.TempDir(), "meet")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	fixture(t, pd, map[string]string{
		"x.yaml":    fmt.Sprintf("steps:\n  - run: {command: sh, args: [\"-c\", \"cat %s\"]}\n  - write: {path: src/x.go, content: \"x\\n\"}\n", fifo),
		"y.yaml":    fmt.Sprintf("steps:\n  - run: {command: sh, args: [\"-c\", \"echo hi > %s\"]}\n  - write: {path: src/y.go, content: \"y\\n\"}\n", fifo),
		"plan.yaml": "policy: {approve: all}\nconcurrency: 2\ntasks:\n  - {id: x, script: x.yaml, prompt: x, owns: [\"src/**\"]}\n  - {id: y, script: y.yaml, prompt: y, owns: [src/y.go]}\n",
	})
	out := runPlan(t, repo, pd, nil)
	if out.st.ExitCode != 0 {
		t.Fatalf("exit %d", out.st.ExitCode)
	}
	var warned []string
	for _, e := range out.events {
		if e.Kind == "warning" && strings.Contains(e.Detail, "overlaps") {
			warned = append(warned, e.Task+": "+e.Detail)
		}
	}
	if len(warned) != 1 {
		t.Fatalf("warnings %v", warned)
	}
}

func TestOwnsOverlap(t *testing.T) {
	tests := []struct {
		a, b []string
		want bool
	}{
		{[]string{"src/**"}, []string{"src/a.go"}, true},
		{[]string{"a.go"}, []string{"a.go"}, true},
		{[]string{"docs/"}, []string{"docs/x.md"}, true},
		{[]string{"src/**"}, []string{"docs/**"}, false},
		{[]string{"a.go"}, nil, false},
	}
	for _, tt := range tests {
		if got := ownsOverlap(tt.a, tt.b); got != tt.want {
			t.Errorf("ownsOverlap(%v, %v) = %v", tt.a, tt.b, got)
		}
	}
}

// Clear errors for a repository without commits, a plan outside any
// repository, and a denial (naming the fleet's fix: its policy, not
// allow_denials, which would accept the work undone).
func TestFleetSetupErrors(t *testing.T) {
	pd := t.TempDir()
	fixture(t, pd, map[string]string{
		"w.yaml":    writeScript("w.txt", "w\n"),
		"plan.yaml": "policy: {approve: deny}\ntasks:\n  - {id: w, script: w.yaml, prompt: w}\n",
	})
	empty := t.TempDir()
	run(t, empty, "git", "init", "-q")
	_, _, err := runIn(t, empty, t.TempDir(), loadPlan(t, pd), nil)
	if err == nil || !strings.Contains(err.Error(), "has no commits yet") || exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("no commits: %v", err)
	}
	_, _, err = runIn(t, t.TempDir(), t.TempDir(), loadPlan(t, pd), nil)
	if err == nil || !strings.Contains(err.Error(), "-C") || exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("outside a repository: %v", err)
	}
	st, _, err := runIn(t, gitRepo(t), t.TempDir(), loadPlan(t, pd), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := st.Tasks["w"].Reason
	if st.Tasks["w"].ExitCode != int(exitcode.PermissionDenied) || strings.Contains(r, "allow_denials") || strings.Contains(r, "--allow-denials") || !strings.Contains(r, "approve: all, or allow: rules") {
		t.Fatalf("denial: exit %d, reason %q", st.Tasks["w"].ExitCode, r)
	}
}
