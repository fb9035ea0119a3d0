package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tai-dev/tai/e2e/internal/build"
	"github.com/tai-dev/tai/preset"
)

// versionsUserEnv is a user-like environment: a HOME of its own with the XDG
// directories under it, and PATH with bin first (then the system's, for
// npx and git).
func versionsUserEnv(home, bin string, extra ...string) []string {
	env := []string{"HOME=" + home, "NO_COLOR=1", "LANG=C.UTF-8",
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"PATH=" + bin + string(os.PathListSeparator) + "/usr/local/bin:/usr/bin:/bin"}
	return append(env, extra...)
}

// fakeNPMInstall lays out a global npm install of pkg at version under
// prefix, the way `npm install -g` does (bin/NAME a link into
// lib/node_modules/PKG), with an executable that, if ever run, leaves
// ran-NAME in prefix: listing versions must not run agents.
func fakeNPMInstall(t *testing.T, prefix, pkg, bin, version string) {
	t.Helper()
	dir := filepath.Join(prefix, "lib", "node_modules", filepath.FromSlash(pkg))
	writeTestFile(t, filepath.Join(dir, "package.json"), fmt.Sprintf(`{"name":%q,"version":%q,"bin":{%q:"dist/index.js"}}`, pkg, version, bin))
	writeTestFile(t, filepath.Join(dir, "dist", "index.js"), fmt.Sprintf("#!/bin/sh\ntouch %s\necho %s\n", filepath.Join(prefix, "ran-"+bin), version))
	if err := os.Chmod(filepath.Join(dir, "dist", "index.js"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(prefix, "bin", bin)
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", "lib", "node_modules", filepath.FromSlash(pkg), "dist", "index.js"), link); err != nil {
		t.Fatal(err)
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// agentRow is what the tests read of `tai agents -o json`.
type agentRow struct {
	Name          string `json:"name"`
	Source        string `json:"source"`
	From          string `json:"from"`
	Package       string `json:"package"`
	Installed     bool   `json:"installed"`
	Version       string `json:"version"`
	VersionStatus string `json:"version_status"`
	Tested        *struct {
		Oldest string `json:"oldest"`
		Newest string `json:"newest"`
	} `json:"tested"`
}

// tai agents and tai doctor show each preset's npm package, the version
// installed (read from its package.json, not by running it) and how it
// stands to the tested range; tai agents lists config.toml's agents too.
func TestAgentsShowVersions(t *testing.T) {
	t.Parallel()
	home, prefix, ws := t.TempDir(), t.TempDir(), t.TempDir()
	claude, _ := preset.Lookup("claude")
	codex, _ := preset.Lookup("codex")
	claudeRange, _ := claude.TestedRange()
	codexRange, _ := codex.TestedRange()
	// Older than tested, and newer.
	fakeNPMInstall(t, prefix, claude.Package, claude.Binary, "0.1.0")
	fakeNPMInstall(t, prefix, codex.Package, codex.Binary, "99.0.0")
	writeTestFile(t, filepath.Join(home, ".config", "tai", "config.toml"), `
[[agent]]
name = "my-claude"
command = "npx -y @agentclientprotocol/claude-agent-acp@0.2.0"

[[agent]]
name = "local-codex"
command = "codex-acp"
`)
	env := versionsUserEnv(home, filepath.Join(prefix, "bin"))

	o := build.Run(t, taiBin, ws, env, "agents", "-o", "json")
	if o.Code != 0 {
		t.Fatalf("tai agents -o json: exit %d\n%s", o.Code, o.Stderr)
	}
	var rows []agentRow
	if err := json.Unmarshal([]byte(o.Stdout), &rows); err != nil {
		t.Fatalf("tai agents -o json: %v\n%s", err, o.Stdout)
	}
	byName := map[string]agentRow{}
	for _, r := range rows {
		byName[r.Name] = r
	}
	for _, tc := range []struct {
		name, source, pkg, version, status string
		tested                             preset.Range
	}{
		{"claude", "preset", claude.Package, "0.1.0", "older than tested", claudeRange},
		{"codex", "preset", codex.Package, "99.0.0", "newer than tested", codexRange},
		// npx runs the release the command names.
		{"my-claude", "config", claude.Package, "0.2.0", "older than tested", claudeRange},
		{"local-codex", "config", codex.Package, "99.0.0", "newer than tested", codexRange},
	} {
		r, ok := byName[tc.name]
		if !ok {
			t.Errorf("tai agents -o json lacks %s:\n%s", tc.name, o.Stdout)
			continue
		}
		if r.Source != tc.source || r.Package != tc.pkg || r.Version != tc.version || r.VersionStatus != tc.status ||
			r.Tested == nil || r.Tested.Oldest != tc.tested.Oldest || r.Tested.Newest != tc.tested.Newest {
			t.Errorf("%s: %+v (tested %+v); want source %s, package %s, version %s, %s, tested %+v",
				tc.name, r, r.Tested, tc.source, tc.pkg, tc.version, tc.status, tc.tested)
		}
		if tc.source == "config" && !strings.HasSuffix(r.From, "config.toml") {
			t.Errorf("%s: from %q, want the config file", tc.name, r.From)
		}
	}

	o = build.Run(t, taiBin, ws, env, "agents")
	for _, want := range []string{
		"0.1.0 (older than tested " + claudeRange.String() + ")",
		"99.0.0 (newer than tested " + codexRange.String() + ")",
		"\nmy-claude ", "(config: " + filepath.Join(home, ".config", "tai", "config.toml") + ")",
	} {
		if !strings.Contains(o.Stdout, want) {
			t.Errorf("tai agents lacks %q:\n%s", want, o.Stdout)
		}
	}

	o = build.Run(t, taiBin, ws, env, "doctor", "-o", "json")
	var d struct {
		Agents []agentRow `json:"agents"`
	}
	if err := json.Unmarshal([]byte(o.Stdout), &d); err != nil || o.Code != 0 {
		t.Fatalf("tai doctor -o json: exit %d %v\n%s", o.Code, err, o.Stdout)
	}
	found := 0
	for _, a := range d.Agents {
		switch a.Name {
		case "claude", "codex":
			found++
			if want := byName[a.Name]; a.Version != want.Version || a.VersionStatus != want.VersionStatus || a.Package != want.Package {
				t.Errorf("doctor's %s: %+v; want %+v", a.Name, a, want)
			}
		}
	}
	if found != 2 {
		t.Errorf("doctor lists %d of claude and codex:\n%s", found, o.Stdout)
	}
	o = build.Run(t, taiBin, ws, env, "doctor")
	if !strings.Contains(o.Stdout, "0.1.0 (older than tested") || !strings.Contains(o.Stdout, claude.Package) {
		t.Errorf("tai doctor does not show claude's package and older version:\n%s", o.Stdout)
	}
	// Read from package.json: the agents were never run.
	for _, bin := range []string{claude.Binary, codex.Binary} {
		if _, err := os.Stat(filepath.Join(prefix, "ran-"+bin)); err == nil {
			t.Errorf("tai ran %s to learn its version", bin)
		}
	}
}

// tai doctor says when tai's state directory cannot be created, rather
// than "created when needed" (then tai run failing).
func TestDoctorStateDirCannotBeCreated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		state func(t *testing.T) string // XDG_STATE_HOME
	}{
		{"under a file", func(t *testing.T) string {
			f := filepath.Join(t.TempDir(), "file")
			writeTestFile(t, f, "")
			return filepath.Join(f, "state")
		}},
		{"under a read-only directory", func(t *testing.T) string {
			if os.Geteuid() == 0 {
				t.Skip("root writes a read-only directory")
			}
			ro := t.TempDir()
			if err := os.Chmod(ro, 0o555); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.Chmod(ro, 0o755) })
			return filepath.Join(ro, "state")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			state := tc.state(t)
			env := versionsUserEnv(home, filepath.Join(home, "bin"), "XDG_STATE_HOME="+state)
			o := build.Run(t, taiBin, home, env, "doctor", "-o", "json")
			var d struct {
				Dirs []struct {
					What   string `json:"what"`
					Path   string `json:"path"`
					Exists bool   `json:"exists"`
					Error  string `json:"error"`
				} `json:"dirs"`
			}
			if err := json.Unmarshal([]byte(o.Stdout), &d); err != nil || o.Code != 0 {
				t.Fatalf("tai doctor -o json: exit %d %v\n%s", o.Code, err, o.Stdout)
			}
			ok := false
			for _, dir := range d.Dirs {
				if dir.What == "state" {
					ok = dir.Path == filepath.Join(state, "tai") && !dir.Exists && dir.Error != ""
					if !ok {
						t.Errorf("doctor's state directory: %+v; want %s, missing, with why it cannot be created", dir, filepath.Join(state, "tai"))
					}
				}
			}
			if !ok {
				t.Fatalf("doctor -o json has no state directory with an error:\n%s", o.Stdout)
			}
			o = build.Run(t, taiBin, home, env, "doctor")
			if !strings.Contains(o.Stdout, "CANNOT BE CREATED") || strings.Contains(o.Stdout, filepath.Join(state, "tai")+"  missing (created when needed)") {
				t.Errorf("tai doctor does not say the state directory cannot be created:\n%s", o.Stdout)
			}
		})
	}
}

// opencode has no session modes and asks for nothing by default: tai
// launches it with the environment that makes it ask (its preset's
// AskEnv), over the user's own setting, so that tai's policy decides its
// edits and commands. The agent here is a shell, run as opencode (by
// --agent, and by a config agent whose command is opencode's), that saves
// its environment and then becomes the built-in agent. Default sandbox.
func TestOpencodeIsMadeToAsk(t *testing.T) {
	t.Parallel()
	const ask = `OPENCODE_PERMISSION={"edit":"ask","bash":"ask","webfetch":"ask"}`
	for _, tc := range []struct {
		name string
		args func(agent string) []string
	}{
		{"--agent opencode", func(agent string) []string { return []string{"--agent", "opencode", "--agent-cmd", agent} }},
		// A shell named opencode: recognized by its binary's name.
		{"--agent-cmd alone", func(agent string) []string {
			return []string{"--agent-cmd", "./opencode" + strings.TrimPrefix(agent, "/bin/sh")}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := newJail(t)
			scr := runScript(t, "true", "text: done")
			if err := os.Symlink("/bin/sh", filepath.Join(j.ws, "opencode")); err != nil {
				t.Fatal(err)
			}
			agent := fmt.Sprintf("/bin/sh -c 'env > agent-env.txt; exec %s agent builtin --script %s'", taiBin, scr)
			args := append(append([]string{"run"}, tc.args(agent)...), "--approve", "all", "-o", "json", "go")
			o := runTai(t, j.ws, j.env(`OPENCODE_PERMISSION={"edit":"allow","bash":"allow"}`), args...)
			if o.code != 0 {
				t.Fatalf("exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
			}
			b, err := os.ReadFile(filepath.Join(j.ws, "agent-env.txt"))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, "OPENCODE_PERMISSION=") {
					got = append(got, l)
				}
			}
			if len(got) != 1 || got[0] != ask {
				t.Errorf("the agent's OPENCODE_PERMISSION: %q, want only %s", got, ask)
			}
		})
	}
}
