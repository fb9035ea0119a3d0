package spinpipe

import "testing"

// BenchmarkEmptyRound is one round of tries on an empty pipe, ended by
// the (injected) wait: what an agent gone quiet costs before tai sleeps.
//
//	go test ./internal/spinpipe -run x -bench EmptyRound
func BenchmarkEmptyRound(b *testing.B) {
	r, _ := tryingReader(b, func(p []byte) (int, error) { return copy(p, "w"), nil })
	buf := make([]byte, 64)
	b.ReportAllocs()
	for b.Loop() {
		r.Read(buf)
	}
}
