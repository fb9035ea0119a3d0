package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/app"
	"github.com/tai-dev/tai/internal/bareacp"
)

// BenchmarkFloodInProcess runs `tai run` in this process against the
// built-in agent's flood (100k updates, a permission every 1000, the agent
// a separate tai binary), for what the binary benchmarks in e2e cannot
// see: allocations per update on tai's side, and a CPU profile
// (-cpuprofile). Each iteration also runs the bare client (package
// bareacp) on the same agent; cpu-x is tai's CPU time over the bare
// client's, both in this process and without the agent's, which is the
// figure a busy machine disturbs least. The bare client's allocations
// are not counted in allocs/update.
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
	agent := []string{bin, "agent", "builtin", "--script", scr}
	for _, mode := range []string{"json", "stream-json", "text"} {
		b.Run(mode, func(b *testing.B) {
			var mallocs, bytes uint64
			var taiCPU, bareCPU time.Duration
			for b.Loop() {
				bare, err := bareacp.Client(dir, agent)
				if err != nil || bare.Updates < updates {
					b.Fatalf("bare client: %d updates, %v", bare.Updates, err)
				}
				bareCPU += bare.CPU - bare.Agent
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				cpu0 := bareacp.SelfCPU()
				root := newRoot(app.IO{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}, []string{"run", "--no-audit", "--approve", "all", "-C", dir,
					"--agent-cmd", strings.Join(agent, " "), "-o", mode, "go"})
				if err := root.Execute(); err != nil {
					b.Fatal(err)
				}
				taiCPU += bareacp.SelfCPU() - cpu0
				runtime.ReadMemStats(&after)
				mallocs += after.Mallocs - before.Mallocs
				bytes += after.TotalAlloc - before.TotalAlloc
			}
			n := float64(b.N) * updates
			b.ReportMetric(float64(mallocs)/n, "allocs/update")
			b.ReportMetric(float64(bytes)/n, "B/update")
			b.ReportMetric(float64(taiCPU.Nanoseconds())/n, "cpu-ns/update")
			b.ReportMetric(taiCPU.Seconds()/bareCPU.Seconds(), "cpu-x")
		})
	}
}
