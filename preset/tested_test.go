package preset

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The install script installs what tested.tsv says, read the way tai
// reads it.
func TestInstallScriptReadsTheTestedPins(t *testing.T) {
	pins, err := Pins()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, p := range pins {
		want = append(want, strings.Join([]string{p.Name, p.Version, p.Package + "@" + p.Version, p.Exe}, "|"))
	}
	cmd := exec.Command("bash", filepath.Join("..", "scripts", "install-agents.sh"), "--print-pins")
	// --print-pins installs nothing; a cache of its own all the same.
	cmd.Env = append(os.Environ(), "TAI_AGENTS_DIR="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("install-agents.sh --print-pins: %v", err)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the script's pins:\n%s\ntai's:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Every preset with an npm package is pinned, and its npx fallback runs
// the pinned release.
func TestNPMPresetsArePinned(t *testing.T) {
	for _, p := range All() {
		if p.Package == "" {
			continue
		}
		r, ok := p.TestedRange()
		if !ok {
			t.Errorf("preset %s: npm package %s is not in tested.tsv", p.Name, p.Package)
			continue
		}
		if !strings.Contains(strings.Join(p.Fallback, " "), p.Package+"@"+r.Newest) {
			t.Errorf("preset %s: fallback %q does not run %s@%s", p.Name, p.Fallback, p.Package, r.Newest)
		}
		if known, ok := Recognize(p.Fallback); !ok || known.Name != p.Name {
			t.Errorf("preset %s: its pinned fallback %q is not recognized as it", p.Name, p.Fallback)
		}
	}
}

func TestParsePins(t *testing.T) {
	for _, tc := range []struct {
		name, src, err string
	}{
		{"ok", "# c\nqwen\t@qwen-code/qwen-code\t0.24.4\tnode_modules/.bin/qwen\n", ""},
		{"fields", "qwen\t@qwen-code/qwen-code\t0.24.4\n", "want 4 tab-separated fields"},
		{"version", "qwen\t@qwen-code/qwen-code\tlatest\tbin/qwen\n", "not MAJOR.MINOR.PATCH"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parsePins(tc.src)
			if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("parsePins: %v, want %q", err, tc.err)
			}
		})
	}
}

func TestRangeStatus(t *testing.T) {
	r := Range{Oldest: "0.15.10", Newest: "0.24.4"}
	for _, tc := range []struct {
		version string
		want    VersionStatus
	}{
		{"0.15.10", VersionTested},
		{"0.20.0", VersionTested},
		{"0.24.4", VersionTested},
		{"0.15.9", VersionOlder},
		{"0.9.99", VersionOlder},
		{"0.24.5", VersionNewer},
		{"0.100.0", VersionNewer},
		{"1.0.0-beta.1", VersionNewer},
		{"0.24.4-rc.1", VersionTested},
		{"", VersionUnknown},
		{"v0.24", VersionUnknown},
	} {
		if got := r.Status(tc.version); got != tc.want {
			t.Errorf("Status(%q) = %q, want %q", tc.version, got, tc.want)
		}
	}
	if s := r.String(); s != "0.15.10–0.24.4" {
		t.Errorf("String = %q", s)
	}
}

// The installed version is read from the package's package.json, the
// way npm lays out a global install and a platform binary.
func TestInstalledVersion(t *testing.T) {
	opencode, _ := Lookup("opencode")
	claude, _ := Lookup("claude")
	for _, tc := range []struct {
		name  string
		p     Preset
		files map[string]string // path -> content; "->x" is a symlink to x
		exe   string
		want  string
	}{
		{"global install", claude, map[string]string{
			"lib/node_modules/@agentclientprotocol/claude-agent-acp/package.json":  `{"name":"@agentclientprotocol/claude-agent-acp","version":"0.90.1"}`,
			"lib/node_modules/@agentclientprotocol/claude-agent-acp/dist/index.js": "",
			"bin/claude-agent-acp": "->../lib/node_modules/@agentclientprotocol/claude-agent-acp/dist/index.js",
		}, "bin/claude-agent-acp", "0.90.1"},
		{"platform binary", opencode, map[string]string{
			"node_modules/opencode-ai/package.json":        `{"name":"opencode-ai","version":"1.19.0"}`,
			"node_modules/opencode-linux-x64/package.json": `{"name":"opencode-linux-x64","version":"1.19.0"}`,
			"node_modules/opencode-linux-x64/bin/opencode": "",
		}, "node_modules/opencode-linux-x64/bin/opencode", "1.19.0"},
		{"another package's", claude, map[string]string{
			"x/package.json":         `{"name":"something-else","version":"9.9.9"}`,
			"x/bin/claude-agent-acp": "",
		}, "x/bin/claude-agent-acp", ""},
		{"not json", claude, map[string]string{
			"y/package.json":         `{`,
			"y/bin/claude-agent-acp": "",
		}, "y/bin/claude-agent-acp", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for p, c := range tc.files {
				p = filepath.Join(dir, p)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				var err error
				if target, ok := strings.CutPrefix(c, "->"); ok {
					err = os.Symlink(target, p)
				} else {
					err = os.WriteFile(p, []byte(c), 0o755)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			got, ok := tc.p.InstalledVersion(filepath.Join(dir, tc.exe))
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("InstalledVersion = %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
}
