package lines

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// Reader with the smallest bufio buffer (16 bytes), so every path
// (fast, accumulated, oversize across buffers, EOF) is exercised.
func TestLineReader(t *testing.T) {
	long := strings.Repeat("x", 40)
	tests := []struct {
		name string
		in   string
		max  int64
		want []string // "line:<text>" or "skip:<n>"
	}{
		{"short lines", "a\nbb\n", 10, []string{"line:a", "line:bb"}},
		{"empty lines", "\n\na\n", 10, []string{"line:", "line:", "line:a"}},
		{"no final newline", "a\nbc", 10, []string{"line:a", "line:bc"}},
		{"accumulated at max", long + "\nz\n", 40, []string{"line:" + long, "line:z"}},
		{"over max by one", long + "\nz\n", 39, []string{"skip:40", "line:z"}},
		{"over max within buffer", "0123456789ab\nz\n", 10, []string{"skip:12", "line:z"}},
		{"over max at EOF", long, 10, []string{"skip:40"}},
		{"crlf kept for caller", "a\r\n", 10, []string{"line:a\r"}},
		{"many oversize in a row", long + "\n" + long + "\nok\n", 20, []string{"skip:40", "skip:40", "line:ok"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lr := New(strings.NewReader(tt.in), 16, tt.max)
			var got []string
			for {
				line, skipped, _, err := lr.Next()
				if skipped > 0 {
					got = append(got, fmt.Sprintf("skip:%d", skipped))
				}
				if line != nil {
					got = append(got, "line:"+string(line))
				}
				if err != nil {
					if !errors.Is(err, io.EOF) {
						t.Fatal(err)
					}
					break
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMakeSample(t *testing.T) {
	s := Sample([]byte("a"+strings.Repeat("é", 150)), nil) // 301 bytes, cut mid-rune
	if len(s) != SampleBytes-1 || !strings.HasSuffix(s, "éé") {
		t.Fatalf("sample = %q (%d bytes)", s, len(s))
	}
	if s := Sample([]byte("ab"), []byte("cd")); s != "abcd" {
		t.Fatalf("sample = %q", s)
	}
}
