package pty

import (
	"strings"
	"testing"
)

// Frames of a reply as a TUI draws it; what streams, and what the end of
// the turn adds, make exactly the final reply.
func TestReplyStream(t *testing.T) {
	for _, tc := range []struct {
		name    string
		frames  []string
		final   string
		sent    []string
		last    string
		replace bool
	}{
		{"grows row by row",
			[]string{"Hel", "Hello\nwor", "Hello\nworld\nand", "Hello\nworld\nand more"},
			"Hello\nworld\nand more", []string{"", "", "Hello\n", "world\n"}, "and more", false},
		{"a row rewritten before it settles is held back",
			[]string{"a\nb", "a\nB\nc", "a\nB\nc\nd"},
			"a\nB\nc\nd", []string{"", "a\n", "B\n"}, "c\nd", false},
		{"redrawn at the end: replaced whole",
			[]string{"**bold**\nnext", "**bold**\nnext\nx"},
			"bold\nnext\nx", []string{"", "**bold**\n"}, "bold\nnext\nx", true},
		{"nothing streamed", nil, "one line", nil, "one line", false},
		{"scrolled off the top at the end",
			[]string{"1\n2\n3\n4\n5\n6", "1\n2\n3\n4\n5\n6\n7"},
			"3\n4\n5\n6\n7\n8", []string{"", "1\n2\n3\n4\n5\n"}, "6\n7\n8", false},
		{"scrolls during the turn",
			[]string{"1\n2\n3\n4\n5\n6", "1\n2\n3\n4\n5\n6\n7", "3\n4\n5\n6\n7\n8\n9", "3\n4\n5\n6\n7\n8\n9\n10"},
			"3\n4\n5\n6\n7\n8\n9\n10", []string{"", "1\n2\n3\n4\n5\n", "", "6\n7\n8\n"}, "9\n10", false},
		{"ends with the last row sent", []string{"a\nb", "a\nb\nc"}, "a", []string{"", "a\n"}, "a", true},
		{"one row in common is not a scroll",
			[]string{"a\nb", "a\nb\nc"},
			"b\nz", []string{"", "a\n"}, "b\nz", true},
		{"cancelled after streaming", []string{"a\nb", "a\nb\nc"}, "", []string{"", "a\n"}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r replyStream
			for i, f := range tc.frames {
				if got := r.next(f); got != tc.sent[i] {
					t.Fatalf("frame %d %q: sent %q, want %q", i, f, got, tc.sent[i])
				}
			}
			last, replace := r.final(tc.final)
			if last != tc.last || replace != tc.replace {
				t.Fatalf("final: %q replace=%v, want %q %v", last, replace, tc.last, tc.replace)
			}
			if !replace && !strings.Contains(tc.name, "scroll") && strings.Join(tc.sent, "")+last != tc.final {
				t.Fatalf("streamed + final = %q, want %q", strings.Join(tc.sent, "")+last, tc.final)
			}
		})
	}
}
