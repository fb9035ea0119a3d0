package cut

import "testing"

func TestCut(t *testing.T) {
	tests := []struct {
		name, s string
		w       int
		end     string
		start   string
		middle  string
	}{
		{"fits", "abc", 3, "abc", "abc", "abc"},
		{"cut", "abcdefgh", 5, "abcd…", "…efgh", "ab…gh"},
		{"no room", "abc", 0, "", "", ""},
		{"wide runes", "日本語です", 5, "日本…", "…です", "日本…"},
		{"narrow middle", "abcdefgh", 4, "abc…", "…fgh", "abc…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := End(tt.s, tt.w); got != tt.end {
				t.Errorf("End(%q, %d) = %q, want %q", tt.s, tt.w, got, tt.end)
			}
			if got := Start(tt.s, tt.w); got != tt.start {
				t.Errorf("Start(%q, %d) = %q, want %q", tt.s, tt.w, got, tt.start)
			}
			if got := Middle(tt.s, tt.w); got != tt.middle {
				t.Errorf("Middle(%q, %d) = %q, want %q", tt.s, tt.w, got, tt.middle)
			}
		})
	}
}
