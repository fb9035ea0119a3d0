package policy

import "testing"

func TestPathSet(t *testing.T) {
	s, err := CompilePathSet([]string{"src/api/**", "*.md", "docs/", "cmd/tool/main.go"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"src/api/handler.go", true},
		{"src/api/v2/x.go", true},
		{"src/db/x.go", false},
		{"README.md", true},
		{"pkg/notes.md", true},
		{"docs/guide/intro.txt", true},
		{"cmd/tool/main.go", true},
		{"cmd/tool/other.go", false},
	} {
		if got := s.Match(tc.path); got != tc.want {
			t.Errorf("Match(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
	for _, bad := range [][]string{{"/etc/**"}, {"../x"}, {""}} {
		if _, err := CompilePathSet(bad); err == nil {
			t.Errorf("CompilePathSet(%q) accepted", bad)
		}
	}
}
