package agentspec

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/preset"
	"github.com/tai-dev/tai/sandbox"
)

func TestDenyReadPaths(t *testing.T) {
	rules := []policy.Rule{
		{Effect: policy.EffectDeny, Kinds: []string{"read"}, Paths: []string{"~/.secrets/**", "/etc/shadow", "**/.env", "~/a/*.key"}},
		{Effect: policy.EffectDeny, Paths: []string{"/srv/private/*"}},                                         // every kind: reads too
		{Effect: policy.EffectDeny, Kinds: []string{"edit"}, Paths: []string{"/not/a/read"}},                   // not a read
		{Effect: policy.EffectAllow, Kinds: []string{"read"}, Paths: []string{"/allowed"}},                     // not a deny
		{Effect: policy.EffectDeny, Kinds: []string{"read"}, Commands: []string{"x"}, Paths: []string{"/cmd"}}, // narrowed by a command
	}
	got := denyReadPaths(rules, "/h")
	want := []string{"/h/.secrets", "/etc/shadow", "/srv/private"}
	if !slices.Equal(got, want) {
		t.Fatalf("denyReadPaths = %q, want %q", got, want)
	}
}

// The sandbox's paths for a run: the preset's state dirs and the private
// cache writable (and made), the secrets hidden, tai's files and the
// agent's config files protected.
func TestSandboxConfig(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("XDG_CONFIG_HOME", "")
	p, _ := preset.Lookup("qwen")
	claude, _ := preset.Lookup("claude")
	if _, err := sandboxConfig(Sandbox{}, claude, policy.Config{}, "", nil); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(home, ".claude.json")); sandbox.ABI() > 0 && string(b) != "{}" {
		t.Errorf("~/.claude.json = %q, %v; want {} made for the confined claude", b, err)
	}
	cfg, err := sandboxConfig(Sandbox{Mode: "on"}, p, policy.Config{WriteRoots: []string{"~/out"}}, "pol.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(home, ".cache", "tai", "sandbox")
	for _, w := range []string{filepath.Join(home, ".qwen"), cache, filepath.Join(home, "out")} {
		if !slices.Contains(cfg.Write, w) {
			t.Errorf("%s not writable: %q", w, cfg.Write)
		}
	}
	// The user's caches hold code their own tools run: confined agents
	// get a cache tree of their own, through their environment.
	for _, c := range []string{filepath.Join(home, ".cache"), filepath.Join(home, ".npm"), filepath.Join(home, ".node-gyp")} {
		if slices.Contains(cfg.Write, c) {
			t.Errorf("the user's cache %s is writable: %q", c, cfg.Write)
		}
	}
	if !slices.Contains(cfg.Env, "XDG_CACHE_HOME="+cache) || !slices.Contains(cfg.Env, "npm_config_cache="+filepath.Join(cache, "npm")) {
		t.Errorf("the sandbox's environment %q does not point the caches at %s", cfg.Env, cache)
	}
	if fi, err := os.Stat(cache); sandbox.ABI() > 0 && (err != nil || !fi.IsDir()) {
		t.Errorf("the private cache was not made: %v", err)
	}
	// The config files that name commands are read-only, not hidden.
	ccfg, err := sandboxConfig(Sandbox{Mode: "on"}, claude, policy.Config{}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{filepath.Join(home, ".claude", "settings.json"), filepath.Join(home, ".claude", "hooks")} {
		if !slices.Contains(ccfg.Protect, c) || slices.Contains(ccfg.Deny, c) {
			t.Errorf("%s is not read-only: protect %q", c, ccfg.Protect)
		}
	}
	if fi, err := os.Stat(filepath.Join(home, ".claude", "projects")); sandbox.ABI() > 0 && (err != nil || !fi.IsDir()) {
		t.Errorf("~/.claude/projects was not made beside the read-only config: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(home, ".qwen")); sandbox.ABI() > 0 && (err != nil || !fi.IsDir()) {
		t.Errorf("~/.qwen was not made for the confined agent: %v", err)
	}
	if !slices.Contains(cfg.Deny, filepath.Join(home, ".ssh")) || !slices.Contains(cfg.Deny, filepath.Join(home, ".aws")) {
		t.Errorf("secrets %q", cfg.Deny)
	}
	abs, _ := filepath.Abs("pol.toml")
	for _, pr := range []string{filepath.Join(home, ".local", "state", "tai"), filepath.Join(home, ".config", "tai"), abs} {
		if !slices.Contains(cfg.Protect, pr) {
			t.Errorf("%s not protected: %q", pr, cfg.Protect)
		}
	}
	if _, err := sandboxConfig(Sandbox{Mode: "maybe"}, p, policy.Config{}, "", nil); err == nil {
		t.Errorf("--sandbox maybe accepted")
	}
}

// A write root at or under a secret or one of tai's own paths would open
// it (the deepest Landlock grant decides): the floor's paths win, and the
// refusal says why. Roots above them stay write roots (the protected paths
// below stay closed by their own, deeper grants).
func TestSandboxWriteRoots(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("XDG_CONFIG_HOME", "")
	state := filepath.Join(home, ".local", "state", "tai")
	tests := []struct {
		name    string
		root    string
		write   bool // a write root of the sandbox
		refused bool
	}{
		{"elsewhere", "/srv/out", true, false},
		{"home relative", "~/out", true, false},
		{"above tai's state", "~/.local/state", true, false},
		{"tai's state", "~/.local/state/tai", false, true},
		{"tai's audit logs", "~/.local/state/tai/audit", false, true},
		{"tai's config", "~/.config/tai", false, true},
		{"a secret", "~/.ssh", false, true},
		{"under a secret", "~/.aws/sso", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			roots, err := writeRoots([]string{tt.root}, "/ws")
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := sandboxConfig(Sandbox{Mode: "on"}, preset.Preset{}, policy.Config{WriteRoots: roots}, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			w := roots[0]
			if got := slices.Contains(cfg.Write, w) && slices.Contains(cfg.WriteRoots, w); got != tt.write {
				t.Errorf("%s writable = %v, want %v: %q", w, got, tt.write, cfg.Write)
			}
			refused := slices.ContainsFunc(cfg.WriteRefused, func(r sandbox.Refusal) bool { return r.Path == w && r.Reason != "" })
			if refused != tt.refused {
				t.Errorf("%s refused = %v, want %v: %+v", w, refused, tt.refused, cfg.WriteRefused)
			}
			if tt.write && !slices.Contains(cfg.Protect, state) {
				t.Errorf("tai's state %s is no longer protected: %q", state, cfg.Protect)
			}
		})
	}
}

func TestWriteRootsResolve(t *testing.T) {
	t.Setenv("HOME", "/h")
	tests := []struct {
		in   []string
		cwd  string
		want []string
		err  bool
	}{
		{in: []string{"~/a", "$HOME/b", "${HOME}/c", "~", "/abs/./d"}, cwd: "/ws", want: []string{"/h/a", "/h/b", "/h/c", "/h", "/abs/d"}},
		{in: []string{"rel", "/ws/rel"}, cwd: "/ws", want: []string{"/ws/rel"}}, // one root, whichever way spelled
		{in: []string{"rel"}, cwd: "", err: true},
		{in: []string{" "}, cwd: "/ws", err: true},
	}
	for _, tt := range tests {
		got, err := writeRoots(tt.in, tt.cwd)
		if (err != nil) != tt.err || !tt.err && !slices.Equal(got, tt.want) {
			t.Errorf("writeRoots(%q, %q) = %q, %v; want %q (error %v)", tt.in, tt.cwd, got, err, tt.want, tt.err)
		}
	}
}
