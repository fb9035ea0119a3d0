package pty

import (
	"fmt"
	"slices"
	"testing"
)

func rows(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("line %d", i))
	}
	return out
}

func TestScrolledBy(t *testing.T) {
	for _, tc := range []struct {
		name      string
		prev, cur []string
		want      int
	}{
		{"unchanged", rows(0, 10), rows(0, 10), 0},
		{"grew at the bottom", rows(0, 10), rows(0, 14), 0},
		{"scrolled by 3", rows(0, 10), rows(3, 13), 3},
		{"scrolled, last row still streaming", rows(0, 10), append(rows(4, 9), "line 9 and more"), 4},
		{"cleared", rows(0, 10), []string{"fresh", "screen"}, 0},
		{"from nothing", nil, rows(0, 5), 0},
		{"blank rows do not make a match", []string{"a", "", "", "", ""}, []string{"", "", "", "", "b"}, 0},
	} {
		if got := scrolledBy(tc.prev, tc.cur); got != tc.want {
			t.Errorf("%s: scrolledBy = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// A transcript that scrolls a few rows per frame is kept whole: the
// scrollback plus the last screen are every row, once, in order.
func TestScrollbackKeepsWhatScrolledOff(t *testing.T) {
	var b scrollback
	const screen = 20
	last := 0
	for end := 5; end <= 200; end += 3 {
		start := max(0, end-screen)
		b.observe(append(rows(start, end), "", ""))
		last = end
	}
	got := append(slices.Clone(b.lines), rows(max(0, last-screen), last)...)
	if want := rows(0, last); !slices.Equal(got, want) {
		t.Fatalf("scrollback + screen:\n%q\nwant\n%q", got, want)
	}
}

func TestScrollbackBounded(t *testing.T) {
	var b scrollback
	for end := 10; end < maxScrollback+500; end += 5 {
		b.observe(rows(end-10, end))
	}
	if len(b.lines) != maxScrollback || b.dropped == 0 {
		t.Fatalf("%d rows kept, %d dropped", len(b.lines), b.dropped)
	}
}
