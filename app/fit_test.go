package app

import (
	"strings"
	"testing"
)

func TestLineFitter(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
		width          int
	}{
		{"short lines pass", "ab\ncd\n", "ab\ncd\n", 10},
		{"a long line is cut with …", "abcdefghijkl\nab\n", "abcdefgh…\nab\n", 10},
		{"wide runes count twice", "日本語日本語\n", "日本語…\n", 9},
		{"a last line without newline waits for flush", "abcdefghijkl", "abcdefgh…", 10},
		{"exactly the width less one passes", "abcdefghi\n", "abcdefghi\n", 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			f := &lineFitter{w: &out, width: func() int { return tt.width }}
			for _, c := range []string{tt.in[:len(tt.in)/2], tt.in[len(tt.in)/2:]} { // lines split across writes
				if _, err := f.Write([]byte(c)); err != nil {
					t.Fatal(err)
				}
			}
			if err := f.flush(); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Fatalf("got %q, want %q", out.String(), tt.want)
			}
		})
	}
}
