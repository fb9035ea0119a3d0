package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An agent that pipelines 16 reads of a 13 MB file does not make tai hold
// them all, nor copy each several times: tai's peak RSS stays within a few
// times the file (it once reached about 1 GiB).
func TestPipelinedReadsBoundedMemory(t *testing.T) {
	const size = 13 << 20
	dir := t.TempDir()
	line := strings.Repeat("the quick brown fox jumps over the lazy dog ", 2) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(strings.Repeat(line, size/len(line))), 0o644); err != nil {
		t.Fatal(err)
	}
	scr := filepath.Join(t.TempDir(), "reads.yaml")
	if err := os.WriteFile(scr, []byte("steps:\n  - read: {path: big.txt, repeat: 16}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o, peak := taiPeak(t, dir, "run", "--no-audit", "--agent-cmd", builtinWith(scr), "-o", "json", "go")
	if o.code != 0 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	if !strings.Contains(o.stdout, fmt.Sprintf(`"status": "ok"`)) {
		t.Fatalf("result: %s", o.stdout)
	}
	t.Logf("peak RSS %d MiB for 16 reads of a %d MiB file", peak>>20, size>>20)
	if limit := int64(6 * size); peak > limit {
		t.Fatalf("peak RSS %d MiB, over %d MiB", peak>>20, limit>>20)
	}
}
