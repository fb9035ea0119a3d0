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

// Lines past the accumulator's keep size spill (outside the heap on Linux)
// and come back whole, handed over by Detach without a copy; one over max
// is skipped with a sample of its start, and the reader goes on.
func TestLongLineSpills(t *testing.T) {
	long := strings.Repeat("0123456789", (3*keepAccBytes)/10)
	in := long + "\nshort\n" + long + "x\nafter\n"
	lr := New(strings.NewReader(in), 4096, int64(len(long)))
	line, _, _, err := lr.Next()
	if err != nil || string(line) != long {
		t.Fatalf("long line: %d bytes, err %v", len(line), err)
	}
	if own := lr.Detach(line); &own[0] != &line[0] {
		t.Fatal("a long line was copied by Detach")
	}
	if line, _, _, _ = lr.Next(); string(line) != "short" {
		t.Fatalf("got %q", line)
	}
	line, skipped, sample, _ := lr.Next()
	if line != nil || skipped != int64(len(long))+1 || !strings.HasPrefix(sample, "0123456789") {
		t.Fatalf("oversize: line %d bytes, skipped %d, sample %q", len(line), skipped, sample)
	}
	if line, _, _, _ = lr.Next(); string(line) != "after" {
		t.Fatalf("got %q", line)
	}
}
