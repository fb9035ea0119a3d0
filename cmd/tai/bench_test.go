package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/tai-dev/tai/app"
)

// BenchmarkFloodInProcess runs `tai run` in this process against the
// built-in agent's flood (100k updates, a permission every 1000, the agent
// a separate tai binary), for what the binary benchmarks in e2e cannot
// see: allocations per update on tai's side, and a CPU profile
// (-cpuprofile).
//
//	go test ./cmd/tai -run x -bench FloodInProcess -benchtime 3x
func BenchmarkFloodInProcess(b *testing.B) {
	const updates = 100000
	dir := b.TempDir()
	bin := filepath.Join(dir, "tai")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("building tai: %v\n%s", err, out)
	}
	scr := filepath.Join(dir, "flood.yaml")
	if err := os.WriteFile(scr, []byte("steps:\n  - flood: {count: 100000, permission_every: 1000}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	b.Setenv("NO_COLOR", "1")
	for _, mode := range []string{"json", "stream-json", "text"} {
		b.Run(mode, func(b *testing.B) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				root := newRoot(app.IO{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard})
				root.SetArgs([]string{"run", "--no-audit", "--approve", "all", "-C", dir,
					"--agent-cmd", bin + " agent builtin --script " + scr, "-o", mode, "go"})
				if err := root.Execute(); err != nil {
					b.Fatal(err)
				}
			}
			runtime.ReadMemStats(&after)
			n := float64(b.N) * updates
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/update")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/update")
		})
	}
}
