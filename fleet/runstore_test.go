package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/exitcode"
)

// deadPID is the pid of a process that has ended (and been reaped).
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// FileStore reads this host's runs: newest first, a running run whose
// process died as interrupted, a run without state left out, and an
// unknown run as a usage error naming it.
func TestFileStore(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t0 := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
	states := []State{
		{Run: "old", Status: RunDone, Created: t0, Order: []string{"a", "b"},
			Tasks: map[string]*TaskState{"a": {ID: "a", Status: StatusMerged}, "b": {ID: "b", Status: StatusMerged}}, Usage: Usage{Tokens: 7}},
		{Run: "died", Status: RunRunning, PID: deadPID(t), Created: t0.Add(time.Hour), Order: []string{"a"},
			Tasks: map[string]*TaskState{"a": {ID: "a", Status: StatusRunning}}},
		{Run: "live", Status: RunRunning, PID: os.Getpid(), Created: t0.Add(2 * time.Hour), Order: []string{"a"},
			Tasks: map[string]*TaskState{"a": {ID: "a", Status: StatusFailed}}},
	}
	for _, st := range states {
		b, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(RunDir(st.Run), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(RunDir(st.Run), "state.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(RunDir("nostate"), 0o700); err != nil { // refused before it saved a state
		t.Fatal(err)
	}
	ctx := context.Background()
	var s RunStore = FileStore{}

	runs, err := s.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range runs {
		got = append(got, r.Run+" "+r.Status)
	}
	if want := "live running,died interrupted,old done"; strings.Join(got, ",") != want {
		t.Errorf("runs %q, want %q", strings.Join(got, ","), want)
	}
	if !runs[0].Live || runs[1].Live || runs[2].Counts["merged"] != 2 || runs[2].Tokens != 7 || runs[2].Tasks != 2 {
		t.Errorf("rows %+v", runs)
	}
	if latest, err := Latest(ctx, s); err != nil || latest != "live" {
		t.Errorf("latest %q %v", latest, err)
	}

	for _, tt := range []struct{ run, status string }{
		{"old", "done"},
		{"died", "interrupted (resume with: tai fleet resume died)"},
		{"live", "running"},
	} {
		v, err := s.View(ctx, tt.run)
		if err != nil || v.Status != tt.status || v.State.Run != tt.run || v.Audit != filepath.Join(RunDir(tt.run), "audit.jsonl") {
			t.Errorf("view %s: %+v %v, want status %q", tt.run, v, err, tt.status)
		}
	}

	for name, read := range map[string]func() error{
		"view":   func() error { _, err := s.View(ctx, "nosuch"); return err },
		"frames": func() error { return s.Frames(ctx, "nosuch", false, func([]byte) {}) },
	} {
		if err := read(); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "nosuch") {
			t.Errorf("%s of an unknown run: %v (exit %v), want a usage error naming it", name, err, exitcode.Of(err))
		}
	}
}

// With no runs, Latest says so by ErrNoRuns.
func TestLatestNoRuns(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	if _, err := Latest(context.Background(), FileStore{}); !errors.Is(err, ErrNoRuns) {
		t.Fatalf("err %v, want ErrNoRuns", err)
	}
}
