package audit

import (
	"path/filepath"
	"runtime"
	"testing"
)

// BenchmarkAppend compares the fsync strategies on the same payload (a
// permission decision, ~300-byte lines). group is the default; fsync-every
// and no-fsync bracket it. The -par4 variants run 4 concurrent appenders.
// The final fsync in Close is outside the timed region.
func BenchmarkAppend(b *testing.B) {
	data := PermissionDecision{
		RequestID: "req-123", Decision: "allow", Option: "allow_once",
		DecidedBy: "rule:git-readonly", Reason: "read-only git command in workspace",
	}
	modes := []struct {
		name string
		mode SyncMode
	}{{"group", SyncGroup}, {"fsync-every", SyncEvery}, {"no-fsync", SyncNone}}
	for _, par := range []bool{false, true} {
		for _, m := range modes {
			name := m.name
			if par {
				name += "-par4"
			}
			b.Run(name, func(b *testing.B) {
				l, err := Open(filepath.Join(b.TempDir(), "bench.jsonl"), Options{Run: "bench", SyncMode: m.mode, Logger: quiet})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				if par {
					// RunParallel starts parallelism*GOMAXPROCS goroutines.
					b.SetParallelism(max(1, (4+runtime.GOMAXPROCS(0)-1)/runtime.GOMAXPROCS(0)))
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if err := l.Append(KindPermissionDecision, "session-1", data); err != nil {
								b.Error(err)
								return
							}
						}
					})
				} else {
					for range b.N {
						if err := l.Append(KindPermissionDecision, "session-1", data); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
				if err := l.Close(); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}
