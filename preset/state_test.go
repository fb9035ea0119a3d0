package preset

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestStateDirs(t *testing.T) {
	env := map[string]string{"XDG_DATA_HOME": "/x/data", "XDG_CACHE_HOME": "relative"}
	get := func(k string) string { return env[k] }
	tests := []struct {
		agent string
		want  []string
	}{
		{"claude", []string{"/h/.claude", "/h/.claude.json", "/h/.config/claude", "/h/.claude/projects", "/tmp/claude-" + strconv.Itoa(os.Getuid())}},
		{"opencode", []string{"/x/data/opencode", "/h/.config/opencode", "/h/.local/state/opencode"}},
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
			if want, ok := map[string]bool{"/h/.claude": true, "/h/.claude.json": false, "/h/.claude/projects": true}[sp.Path]; ok && sp.Dir != want {
				t.Errorf("%s: %s marked dir=%v", tt.agent, sp.Path, sp.Dir)
			}
			// No agent writes the user's caches: they hold code the
			// user's own tools run.
			for _, c := range []string{"/h/.cache", "/h/.npm", "/h/.node-gyp"} {
				if sp.Path == c || strings.HasPrefix(sp.Path, c+"/") {
					t.Errorf("%s: the user's cache %s is a state path", tt.agent, sp.Path)
				}
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
}

// Every preset's config files that name commands lie inside its state
// directories (else there is nothing to keep read-only), and each state
// directory that holds one has its agent's own entries listed, for tai to
// make.
func TestConfigFiles(t *testing.T) {
	get := func(string) string { return "" }
	for _, p := range All() {
		states := p.StateDirs("/h", get)
		for _, c := range p.ConfigFiles("/h", get) {
			inside := false
			for _, sp := range states {
				inside = inside || sp.Dir && strings.HasPrefix(c.Path, sp.Path+"/")
			}
			if !inside {
				t.Errorf("%s: config file %s is in none of its state directories", p.Name, c.Path)
			}
		}
	}
	claude, _ := Lookup("claude")
	got := claude.ConfigFiles("/h", get)
	for _, want := range []StatePath{{Path: "/h/.claude/settings.json", Make: true, Init: "{}", Landlock: true},
		{Path: "/h/.claude/hooks", Dir: true, Landlock: true}, {Path: "/h/.claude/.config.json", Init: "{}", Landlock: true}} {
		if !slices.Contains(got, want) {
			t.Errorf("claude's config files %+v lack %+v", got, want)
		}
	}
	// codex writes its config.toml itself (the folder trust its TUI asks
	// for): not bound read-only.
	codex, _ := Lookup("codex")
	if got := codex.ConfigFiles("/h", get); got != nil {
		t.Errorf("codex's config files: %+v", got)
	}
	if got := (Preset{Name: "custom"}).ConfigFiles("/h", get); got != nil {
		t.Errorf("a custom command's config files: %+v", got)
	}
}

func TestSandboxCache(t *testing.T) {
	tests := []struct {
		cacheHome, want string
	}{
		{"", "/h/.cache/tai/sandbox"},
		{"/c", "/c/tai/sandbox"},
		{"relative", "/h/.cache/tai/sandbox"},
	}
	for _, tt := range tests {
		got := SandboxCache("/h", func(k string) string {
			if k == "XDG_CACHE_HOME" {
				return tt.cacheHome
			}
			return ""
		})
		if got != tt.want {
			t.Errorf("XDG_CACHE_HOME=%q: %s, want %s", tt.cacheHome, got, tt.want)
		}
	}
	env := CacheEnv("/p")
	for _, kv := range []string{"XDG_CACHE_HOME=/p", "npm_config_cache=/p/npm", "npm_config_devdir=/p/node-gyp"} {
		if !slices.Contains(env, kv) {
			t.Errorf("CacheEnv lacks %s: %q", kv, env)
		}
	}
}
