package preset

import (
	"os"
	"slices"
	"strconv"
	"testing"
)

func TestStateDirs(t *testing.T) {
	env := map[string]string{"XDG_DATA_HOME": "/x/data", "XDG_CACHE_HOME": "relative"}
	get := func(k string) string { return env[k] }
	tests := []struct {
		agent string
		want  []string
	}{
		{"claude", []string{"/h/.claude", "/h/.claude.json", "/h/.config/claude", "/h/.npm", "/h/.cache", "/tmp/claude-" + strconv.Itoa(os.Getuid())}},
		{"opencode", []string{"/x/data/opencode", "/h/.config/opencode", "/h/.local/state/opencode", "/h/.cache/opencode"}},
		{"qwen", []string{"/h/.qwen"}},
	}
	for _, tt := range tests {
		p, ok := Lookup(tt.agent)
		if !ok {
			t.Fatal(tt.agent)
		}
		var got []string
		for _, sp := range p.StateDirs("/h", get) {
			got = append(got, sp.Path)
			if want, ok := map[string]bool{"/h/.claude": true, "/h/.claude.json": false, "/h/.npm": true}[sp.Path]; ok && sp.Dir != want {
				t.Errorf("%s: %s marked dir=%v", tt.agent, sp.Path, sp.Dir)
			}
		}
		for _, w := range tt.want {
			if !slices.Contains(got, w) {
				t.Errorf("%s: %q missing from %q", tt.agent, w, got)
			}
		}
	}
	if got := (Preset{Name: "custom"}).StateDirs("", get); got != nil {
		t.Errorf("no home: %v", got)
	}
	if got := ReadOnlyDirs("/h", get); !slices.Equal(got, []string{"/h/.cache/tai-agents"}) {
		t.Errorf("ReadOnlyDirs = %q", got)
	}
}
