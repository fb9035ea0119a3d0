package fleet

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkFleet100Sessions runs 100 built-in-agent sessions at once (no
// worktrees: this measures the fleet and runner, not git) and reports
// tai's own CPU time per session (getrusage RUSAGE_SELF: the agents are
// child processes and are not counted), the process's peak RSS (VmHWM)
// and the Go heap allocated per session.
//
//	go test ./fleet -run '^$' -bench Fleet100 -benchtime 3x
func BenchmarkFleet100Sessions(b *testing.B) {
	const n = 100
	repo, pd := gitRepo(b), b.TempDir()
	var plan strings.Builder
	plan.WriteString("policy: {approve: all}\nconcurrency: 100\ntasks:\n")
	fixture(b, pd, map[string]string{"s.yaml": "steps:\n  - text: \"hello\"\n    chunks: 5\n  - usage: {used: 10, size: 100}\n  - text: \" world\"\n"})
	for i := range n {
		fmt.Fprintf(&plan, "  - {id: t%03d, script: s.yaml, prompt: go, worktree: none}\n", i)
	}
	fixture(b, pd, map[string]string{"plan.yaml": plan.String()})
	var ru0, ru1 syscall.Rusage
	b.ReportAllocs()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	start := time.Now()
	for range b.N {
		out := runPlan(b, repo, pd, nil)
		if out.st.ExitCode != 0 {
			b.Fatalf("exit %d", out.st.ExitCode)
		}
	}
	wall := time.Since(start)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano()-ru0.Utime.Nano()) + time.Duration(ru1.Stime.Nano()-ru0.Stime.Nano())
	sessions := float64(b.N * n)
	b.ReportMetric(float64(cpu.Microseconds())/1000/sessions, "tai-cpu-ms/session")
	b.ReportMetric(float64(wall.Milliseconds())/float64(b.N), "wall-ms/100-sessions")
	b.ReportMetric(float64(vmHWM())/1024, "VmHWM-MiB")
}

// vmHWM is the process's peak resident set, in KiB.
func vmHWM() int64 {
	b, err := os.ReadFile(filepath.Join("/proc", "self", "status"))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
