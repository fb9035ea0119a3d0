package audit

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const helperEnv = "TAI_AUDIT_KILL_HELPER"

// runKillHelper is the child side of TestKill9: append as fast as possible
// until killed.
func runKillHelper(path string) {
	l, err := Open(path, Options{Run: "kill9", Logger: quiet})
	if err != nil {
		os.Exit(3)
	}
	text := strings.Repeat("lorem ipsum ", 40) // ~500-byte lines
	for i := 0; ; i++ {
		if err := l.Append(KindPrompt, "s1", map[string]any{"i": i, "text": text}); err != nil {
			os.Exit(4)
		}
	}
}

func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	path := filepath.Join(t.TempDir(), "run.jsonl")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the child has written a good number of entries. Polling
	// the size only decides *when* to kill; correctness doesn't depend on
	// timing.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if st, err := os.Stat(path); err == nil && st.Size() > 256<<10 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("helper wrote too little in 30s")
		}
		time.Sleep(time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != -1 {
		t.Fatalf("helper did not die by signal: %v", err)
	}

	rep := verifyFile(t, path)
	t.Logf("after SIGKILL: %+v", rep)
	switch {
	case rep.OK:
		// The kill landed between two writes.
	case rep.Partial:
		// Killed mid-write: every complete entry before the partial line
		// verifies.
		if rep.FirstBad < rep.Entries || rep.FirstBad > rep.Entries+1 {
			t.Fatalf("partial line %d after %d entries", rep.FirstBad, rep.Entries)
		}
	default:
		t.Fatalf("log corrupted by SIGKILL: %+v", rep)
	}
	if rep.Entries < 100 {
		t.Fatalf("only %d entries", rep.Entries)
	}

	// Resume: continue the chain (repairing a partial tail if there is one).
	l := openT(t, path, Options{TruncatePartial: true})
	must(t, l.Append(KindRunEnd, "", nil))
	must(t, l.Close())
	rep2 := verifyFile(t, path)
	if !rep2.OK || !rep2.Ended || rep2.Entries < rep.Entries+1 {
		t.Fatalf("after resume: %+v", rep2)
	}
}

// simulateCrash forces the partial-line case that a real SIGKILL only rarely
// produces: cut the file at every offset inside the last line.
func TestCrashAtEveryOffsetOfLastLine(t *testing.T) {
	_, orig := writeLog(t, 2) // 4 lines
	start := strings.LastIndex(strings.TrimSuffix(string(orig), "\n"), "\n") + 1
	for cut := start + 1; cut < len(orig); cut++ {
		rep, err := Verify(strings.NewReader(string(orig[:cut])))
		if err != nil {
			t.Fatal(err)
		}
		complete := cut == len(orig)-1 // only the newline is missing
		wantEntries := 3
		if complete {
			wantEntries = 4
		}
		if rep.OK || !rep.Partial || rep.FirstBad != 4 || rep.Entries != wantEntries {
			t.Fatalf("cut at %d: %+v", cut, rep)
		}
	}
}
