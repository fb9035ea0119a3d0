package textdist

import "testing"

func TestDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"kitten", "sitting", 3},
		{"rule", "rules", 1}, {"same", "same", 0}, {"ab", "ba", 2},
	}
	for _, tt := range tests {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestClosest(t *testing.T) {
	known := []string{"decision", "command", "path"}
	tests := []struct{ s, want string }{
		{"decison", "decision"}, {"comand", "command"}, {"pth", "path"}, {"zzzzzz", ""}, {"path", "path"},
	}
	for _, tt := range tests {
		if got := Closest(tt.s, known); got != tt.want {
			t.Errorf("Closest(%q) = %q, want %q", tt.s, got, tt.want)
		}
	}
}
