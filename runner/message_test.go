package runner

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"
)

// TestRopeAsString drives a rope and a plain string with the same adds and
// truncations, small chunks and big ones, and compares them after each step.
func TestRopeAsString(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var r rope
		var want string
		for step := range 300 {
			switch op := rng.IntN(10); {
			case op == 0 && len(want) > 0:
				n := rng.IntN(len(want) + 1)
				r.truncate(n)
				want = want[:n]
			case op == 1:
				r.reset()
				want = ""
			default:
				size := rng.IntN(64)
				if rng.IntN(20) == 0 {
					size = ropeBig + rng.IntN(ropeBig)
				}
				text := strings.Repeat(string(rune('a'+rng.IntN(26))), size)
				if rng.IntN(4) == 0 && size > 0 {
					text = text[:size-1] + "\n"
				}
				r.add(text)
				want += text
			}
			if got := r.String(); got != want || r.Len() != len(want) {
				t.Fatalf("round %d step %d: rope has %d bytes %q…, want %d bytes %q…", round, step, r.Len(), head(got), len(want), head(want))
			}
			if wantNL := want == "" || want[len(want)-1] == '\n'; r.endsNL() != wantNL {
				t.Fatalf("round %d step %d: endsNL %v, want %v", round, step, r.endsNL(), wantNL)
			}
		}
	}
}

func head(s string) string { return s[:min(len(s), 40)] }

// TestRopeKeepsBigChunk: a message that is one big chunk is that chunk's
// memory, and small chunks are copied into blocks, one object per block.
func TestRopeKeepsBigChunk(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	var r rope
	r.add(big)
	if got := r.String(); unsafe.StringData(got) != unsafe.StringData(big) {
		t.Error("a one-chunk message was copied")
	}
	var small rope
	for range 10000 {
		small.add("flood 12345 ")
	}
	// 120000 bytes: blocks of 1, 2, 4, 8, 16 KiB and then 32 KiB ones.
	if n := len(small.parts); n > 8 {
		t.Errorf("10000 small chunks in %d parts, want at most 8", n)
	}
}
