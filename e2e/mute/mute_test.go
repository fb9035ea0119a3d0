// Package mute_test checks through the real tai that an agent which
// closes its stdout mid-turn and lives on, deaf to signals, cannot hang
// tai: the run ends with exit 1 and run.end, and nothing of the agent is
// left, under the default sandbox and without it.
package mute_test

import (
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/e2e/internal/auditlog"
	"github.com/tai-dev/tai/e2e/internal/build"
)

var taiBin, muteBin string

func TestMain(m *testing.M) {
	build.Main(m, "tai-e2e-mute-", func(_ string, bins []string) { taiBin, muteBin = bins[0], bins[1] },
		build.Tai, "github.com/tai-dev/tai/e2e/internal/mute")
}

type runResult struct {
	Status   string `json:"status"`
	ExitCode int    `json:"exit_code"`
	Error    string `json:"error"`
	Audit    string `json:"audit"`
}

func TestAgentClosingStdoutCannotHangTai(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"default sandbox", nil},
		// --sandbox off: the same end must come without the launcher's
		// namespaces and Landlock too.
		{"sandbox off", []string{"--sandbox", "off"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			ws, home := filepath.Join(root, "ws"), filepath.Join(root, "home")
			for _, d := range []string{ws, home} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			env := append(os.Environ(), "NO_COLOR=1", "HOME="+home,
				"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"),
				"XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_CACHE_HOME="+filepath.Join(home, ".cache"))
			// The pid file's name is the marker of the agent's processes.
			marker := "mute-" + rand.Text()
			args := append([]string{"run", "--agent-cmd", muteBin + " " + marker, "--cancel-grace", "200ms", "-o", "json"}, tc.args...)
			o := build.Run(t, taiBin, ws, env, append(args, "go")...)
			if _, err := os.Stat(filepath.Join(ws, marker)); err != nil {
				t.Fatalf("the agent never got to close its stdout: %v\n%s", err, o.Stderr)
			}
			var r runResult
			if err := json.Unmarshal([]byte(o.Stdout), &r); err != nil {
				t.Fatalf("stdout is not one JSON result (%v):\n%s\nstderr:\n%s", err, o.Stdout, o.Stderr)
			}
			if o.Code != 1 || r.ExitCode != 1 || r.Status != "error" {
				t.Fatalf("exit %d, result %+v; want 1, error\n%s", o.Code, r, o.Stderr)
			}
			if !strings.Contains(r.Error, "closed its stdout") {
				t.Errorf("error %q does not say the agent closed its stdout", r.Error)
			}
			if _, ok := auditlog.First(auditlog.Read(t, r.Audit), string(audit.KindRunEnd)); !ok {
				t.Errorf("no run.end in %s", r.Audit)
			}
			if left := processes(marker); len(left) > 0 {
				t.Errorf("processes left behind: %v", left)
			}
		})
	}
}

// processes lists the live processes whose command line holds marker.
func processes(marker string) []string {
	var found []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), marker) {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}
