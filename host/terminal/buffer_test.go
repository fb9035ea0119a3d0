package terminal

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestOutputBufferTruncation(t *testing.T) {
	tests := []struct {
		name      string
		limit     int
		writes    []string
		want      string
		truncated bool
	}{
		{"fits", 10, []string{"hello"}, "hello", false},
		{"exactly full", 5, []string{"hel", "lo"}, "hello", false},
		{"ascii front dropped", 5, []string{"hello", " world"}, "world", true},
		{"ascii many small writes", 4, []string{"a", "b", "c", "d", "e", "f"}, "cdef", true},
		{"single write over limit", 3, []string{"abcdef"}, "def", true},
		{"single write equal limit after data", 3, []string{"x", "abc"}, "abc", true},
		// "é" is 2 bytes: "aé" = 61 c3 a9. Keeping 1 byte would start at
		// a9, so the cut moves past it.
		{"2-byte rune straddles cut", 1, []string{"aé"}, "", true},
		{"2-byte rune straddles cut, more after", 2, []string{"aéb"}, "b", true},
		{"2-byte rune straddles cut, big write", 2, []string{"a", "éb"}, "b", true},
		{"2-byte rune kept whole", 3, []string{"abé"}, "bé", true},
		// "€" is 3 bytes.
		{"3-byte rune cut after 1st byte", 5, []string{"€xyz"}, "xyz", true},
		{"3-byte rune cut after 1st byte, small write", 4, []string{"€x", "yz"}, "xyz", true},
		{"3-byte rune cut after 2nd byte", 3, []string{"€xy", "z"}, "xyz", true},
		{"3-byte rune kept", 4, []string{"a€b"}, "€b", true},
		// "𝄞" is 4 bytes.
		{"4-byte rune cut after 1st byte", 6, []string{"𝄞abc"}, "abc", true},
		{"4-byte rune cut after 2nd byte", 5, []string{"𝄞a", "bc", "d"}, "abcd", true},
		{"4-byte rune cut after 3rd byte", 3, []string{"𝄞ab", "c"}, "abc", true},
		{"4-byte rune kept", 5, []string{"x𝄞", "y"}, "𝄞y", true},
		{"rune split across writes", 4, []string{"ab\xe2\x82", "\xac"}, "b€", true},
		{"only multibyte", 7, []string{"ééééé"}, "ééé", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newOutputBuffer(tt.limit)
			var all strings.Builder
			for _, w := range tt.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
				all.WriteString(w)
			}
			got, trunc := b.snapshot(false)
			if got != tt.want || trunc != tt.truncated {
				t.Errorf("got %q (truncated=%v), want %q (truncated=%v)", got, trunc, tt.want, tt.truncated)
			}
			if len(got) > tt.limit {
				t.Errorf("kept %d bytes > limit %d", len(got), tt.limit)
			}
			if !strings.HasSuffix(all.String(), got) {
				t.Errorf("%q is not a suffix of the input", got)
			}
		})
	}
}

// TestOutputBufferProperties writes valid UTF-8 in chunks that split runes
// arbitrarily and checks the invariants after every write.
func TestOutputBufferProperties(t *testing.T) {
	text := []byte(strings.Repeat("aé€𝄞 ", 500))
	for _, limit := range []int{1, 2, 3, 4, 5, 7, 64, 1000} {
		for _, chunk := range []int{1, 2, 3, 5, 13, 100, 4096} {
			b := newOutputBuffer(limit)
			for i := 0; i < len(text); i += chunk {
				b.Write(text[i:min(i+chunk, len(text))])
				got, _ := b.snapshot(true)
				if len(got) > limit {
					t.Fatalf("limit %d chunk %d: kept %d bytes", limit, chunk, len(got))
				}
				if !utf8.ValidString(got) {
					t.Fatalf("limit %d chunk %d: invalid UTF-8 %q", limit, chunk, got)
				}
				if !bytes.HasSuffix(text[:min(i+chunk, len(text))], []byte(got)) && !bytes.Contains(text, []byte(got)) {
					t.Fatalf("limit %d chunk %d: %q not from input", limit, chunk, got)
				}
				// Capacity stays proportional to the limit (amortized compaction).
				if c := cap(b.buf); c > 4*limit+2*chunk+64 {
					t.Fatalf("limit %d chunk %d: cap %d", limit, chunk, c)
				}
			}
			got, trunc := b.snapshot(false)
			if want := len(text) > limit; trunc != want {
				t.Errorf("limit %d: truncated = %v", limit, trunc)
			}
			if !bytes.HasSuffix(text, []byte(got)) || len(got) < limit-3 && len(text) >= limit {
				t.Errorf("limit %d chunk %d: final %q", limit, chunk, got)
			}
		}
	}
}

func TestSnapshotTrimsPartialRune(t *testing.T) {
	tests := []struct{ in, want string }{
		{"abc", "abc"},
		{"ab\xc3", "ab"},
		{"ab\xe2\x82", "ab"},
		{"ab\xf0\x9d\x84", "ab"},
		{"ab€", "ab€"},
		{"ab\x80", "ab\x80"}, // invalid, not incomplete: left as is
		{"", ""},
	}
	for _, tt := range tests {
		b := newOutputBuffer(100)
		b.Write([]byte(tt.in))
		if got, _ := b.snapshot(true); got != tt.want {
			t.Errorf("snapshot(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got, _ := b.snapshot(false); got != tt.in {
			t.Errorf("snapshot(%q, false) = %q", tt.in, got)
		}
	}
}

func BenchmarkOutputBuffer(b *testing.B) {
	buf := newOutputBuffer(1 << 20)
	chunk := bytes.Repeat([]byte("x"), 32<<10)
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		buf.Write(chunk)
	}
}
