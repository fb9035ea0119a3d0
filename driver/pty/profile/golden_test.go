package profile

import (
	"go.uber.org/goleak"

	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// goldenNow is the time the goldens' relative reset times count from.
var goldenNow = time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)

// TestGoldenScreens reads every testdata/<agent>/<version>/<case>.screen
// (captured from the real TUI by testdata/capture.sh, or written by hand
// for the fake TUI) and checks the profile's verdict against <case>.want:
// key=value lines for state, composer, picker, options, selected,
// toolkind, title, path, and the limit the turn ended on (limit,
// limit_source, resets_at against goldenNow; none unless given), and
// auto_resume: the TUI offers to resume by itself at the reset.
func TestGoldenScreens(t *testing.T) {
	screens, err := filepath.Glob("../testdata/*/*/*.screen")
	if err != nil {
		t.Fatal(err)
	}
	if len(screens) == 0 {
		t.Fatal("no golden screens")
	}
	for _, path := range screens {
		rel, _ := filepath.Rel("../testdata", path)
		parts := strings.Split(rel, string(filepath.Separator))
		agent := parts[0]
		t.Run(strings.TrimSuffix(rel, ".screen"), func(t *testing.T) {
			p, ok := Builtin(agent)
			if !ok {
				t.Fatalf("no profile %q", agent)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			wantB, err := os.ReadFile(strings.TrimSuffix(path, ".screen") + ".want")
			if err != nil {
				t.Fatalf("every screen needs its verdict: %v", err)
			}
			v := p.Parse(strings.Split(string(b), "\n"))
			got := map[string]string{"state": string(v.State), "composer": string(v.Composer)}
			if v.Picker != nil {
				var kinds []string
				for _, o := range v.Picker.Options {
					kinds = append(kinds, o.Kind)
				}
				got["picker"] = string(v.Picker.Kind)
				got["options"] = strings.Join(kinds, ",")
				got["selected"] = strconv.Itoa(v.Picker.Selected)
				got["toolkind"] = string(v.Picker.ToolKind)
				got["title"] = v.Picker.Title
				got["path"] = v.Picker.Path
			}
			// The limit the screen's turn ended on, if any: every screen
			// without a limit= line must read as none (fail closed).
			lines := strings.Split(string(b), "\n")
			if l, ok := p.Limit(nil, p.Body(lines), goldenNow); ok {
				got["limit"], got["limit_source"] = string(l.Kind), l.Source
				if !l.ResetsAt.IsZero() {
					got["resets_at"] = l.ResetsAt.UTC().Format(time.RFC3339)
				}
			}
			if p.AutoResumes(lines) {
				got["auto_resume"] = "true"
			}
			wants := map[string]bool{}
			for _, line := range strings.Split(strings.TrimSpace(string(wantB)), "\n") {
				k, want, _ := strings.Cut(line, "=")
				wants[k] = true
				if got[k] != want {
					t.Errorf("%s = %q, want %q (why: %s)", k, got[k], want, v.Why)
				}
			}
			if !wants["limit"] && got["limit"] != "" {
				t.Errorf("limit = %q, want none: the screen is no limit", got["limit"])
			}
			if !wants["auto_resume"] && got["auto_resume"] != "" {
				t.Errorf("auto_resume = %q, want none: the screen offers no resume of its own", got["auto_resume"])
			}
		})
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct{ label, want string }{
		{"Yes, allow once", "allow_once"},
		{"Yes, allow always", "allow_always"},
		{"No, suggest changes (esc)", "reject_once"},
		{"Allow for this session", "allow_always"},
		{"Trust folder (repo)", "allow_once"},
		{"Trust parent folder", "allow_always"},
		{"Don't trust (esc)", "reject_once"},
		{"Yes, proceed (y)", "allow_once"},
		{"Yes, and don't ask again for this command (a)", "allow_always"},
		{"No, and tell Codex what to do differently (esc)", "reject_once"},
		{"Trust and continue", "allow_once"},
		{"Back to Agent Command Center", "reject_once"},
		{"Backup the file", ""},
		{"Blue", ""},
	} {
		if got := classify(tc.label); got != tc.want {
			t.Errorf("classify(%q) = %q, want %q", tc.label, got, tc.want)
		}
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
