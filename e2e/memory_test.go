package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An agent that pipelines 16 reads of a 13 MB file does not make tai hold
// them all, nor copy each several times: what the reads add to tai's peak
// RSS stays within a few times the file (it once reached about 1 GiB).
func TestPipelinedReadsBoundedMemory(t *testing.T) {
	const size = 13 << 20
	dir := t.TempDir()
	line := strings.Repeat("the quick brown fox jumps over the lazy dog ", 2) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(strings.Repeat(line, size/len(line))), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "small.txt"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	reads := func(path string) taiRun {
		scr := filepath.Join(t.TempDir(), "reads.yaml")
		if err := os.WriteFile(scr, []byte("steps:\n  - read: {path: "+path+", repeat: 16}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		o := taiPeak(t, dir, "run", "--no-audit", "--agent-cmd", builtinWith(scr), "-o", "json", "go")
		if o.code != 0 {
			t.Fatalf("exit %d: %s", o.code, o.stderr)
		}
		if !strings.Contains(o.stdout, `"status": "ok"`) {
			t.Fatalf("result: %s", o.stdout)
		}
		return o
	}
	// The same run over a one-line file is the baseline: VmHWM counts the
	// pages of tai's own binary and runtime (tens of MiB, growing with the
	// binary), which are not memory the reads cost.
	base, big := reads("small.txt").hwm, reads("big.txt").hwm
	t.Logf("peak RSS %d MiB for 16 reads of a %d MiB file, %d MiB for the same of one line", big>>20, size>>20, base>>20)
	if os.Getenv("TAI_E2E_RACE") != "" {
		t.Skip("the race detector's shadow memory makes RSS meaningless")
	}
	if limit := int64(6 * size); big-base > limit {
		t.Fatalf("the reads cost %d MiB of peak RSS, over %d MiB (6 times the file)", (big-base)>>20, limit>>20)
	}
}

// A message longer than --max-message-bytes over all its chunks (each
// under --max-line-bytes) is cut there and reported like an oversize line;
// the next message comes through.
func TestMaxMessageBytes(t *testing.T) {
	t.Parallel()
	o := tai(t, t.TempDir(), "run", "--no-audit", "--max-message-bytes", "1000", "--agent-cmd", builtinWith(script("long_message.yaml")), "-o", "json", "go")
	r := jsonResult(t, o)
	if o.code != 0 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	first, second, _ := strings.Cut(r.Message, "\n\n")
	if len(first) == 0 || len(first) > 1000 || !strings.HasPrefix(first, "abcdefghij") || second != "after the long one" {
		t.Fatalf("message %q (%d bytes before the break)", r.Message, len(first))
	}
	if len(r.Errors) != 1 || r.Errors[0].Code != "oversize_message" {
		t.Fatalf("errors %+v", r.Errors)
	}
}

// One 100 MiB message line costs tai about the line once: its bytes are
// held in one place on their way from the pipe to the result. The spill
// that gathers it once took twice the line, one run in ten (the heap's
// slice for it was zeroed while the spill still held it), so this takes
// the largest of several runs.
func TestBigLinePeak(t *testing.T) {
	if os.Getenv("TAI_E2E_RACE") != "" {
		t.Skip("the race detector's shadow memory makes RSS meaningless")
	}
	const line = 100 << 20
	dir := t.TempDir()
	peak := func(scr string) int64 {
		o := taiPeak(t, dir, "run", "--no-audit", "--agent-cmd", builtinWith(scr), "-o", "json", "go")
		if o.code != 0 {
			t.Fatalf("exit %d: %s", o.code, o.stderr)
		}
		return o.hwm
	}
	base := peak(script("one.yaml"))
	var worst int64
	for range 5 {
		worst = max(worst, peak(script("big1.yaml"))-base)
	}
	t.Logf("a %d MiB line: at most %d MiB of peak RSS over a one-line run's %d MiB", line>>20, worst>>20, base>>20)
	if worst > line*3/2 {
		t.Fatalf("a %d MiB line cost %d MiB of peak RSS, over 1.5 times the line", line>>20, worst>>20)
	}
}
