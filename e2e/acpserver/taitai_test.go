package acpserver

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/e2e/internal/auditlog"
)

// TestTaiDrivesTai: `tai run --agent-cmd 'tai acp --agent builtin'`. The
// outer tai's rules decide the inner tai's asks, and the inner tai's audit
// log names them (via:rule:...), not a human.
func TestTaiDrivesTai(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// --allow and --deny on the outer tai: one edit allowed and one denied is the subject.
	cmd := exec.CommandContext(ctx, taiBin, "run", "--agent-cmd", taiBin+" acp --agent builtin --cwd "+dir,
		"--allow", "edit:**/notes.txt", "--deny", "edit:**/hello.txt", "--allow-denials", "-o", "json", "show me")
	cmd.Dir, cmd.Env, cmd.Stderr = dir, env(dir), os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tai run: %v\n%s", err, out)
	}
	var res struct {
		Status  string `json:"status"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.Status != "ok" || !strings.Contains(res.Message, "built-in agent") {
		t.Fatalf("the outer run: %v %+v", err, res)
	}
	noneLeft(t, dir)
	if _, err := os.Stat(filepath.Join(dir, "notes.txt")); err != nil {
		t.Errorf("the allowed write did not happen: %v", err)
	}
	mustNotExist(t, filepath.Join(dir, "hello.txt"))

	// The inner tai is the outer's agent: its state is under the agent
	// state directory the outer gives it.
	logs, _ := filepath.Glob(filepath.Join(dir, ".state", "tai", "audit", "*.jsonl"))
	inner, _ := filepath.Glob(filepath.Join(dir, ".state", "tai", "agents", "*", "audit", "*.jsonl"))
	logs = append(logs, inner...)
	if len(logs) != 2 {
		t.Fatalf("audit logs %v: want the outer run's and the inner session's", logs)
	}
	byAgent := map[string][]string{}
	for _, l := range logs {
		entries := auditlog.Read(t, l)
		start, _ := auditlog.First(entries, "run.start")
		var st struct {
			Argv []string `json:"argv"`
		}
		_ = json.Unmarshal(start.Data, &st)
		who := "outer"
		if len(st.Argv) > 1 && st.Argv[1] == "agent" {
			who = "inner"
		}
		for _, e := range entries {
			if e.Kind != "permission.decision" {
				continue
			}
			var d struct {
				Decision  string `json:"decision"`
				DecidedBy string `json:"decided_by"`
				Request   struct {
					Title string `json:"title"`
				} `json:"request"`
			}
			_ = json.Unmarshal(e.Data, &d)
			if strings.HasPrefix(d.Request.Title, "Write ") {
				byAgent[who] = append(byAgent[who], d.Request.Title+": "+d.Decision+" by "+d.DecidedBy)
			}
		}
	}
	for who, want := range map[string][]string{
		"outer": {"Write hello.txt: deny by rule:flag-1", "Write notes.txt: allow by rule:flag-2"},
		"inner": {"Write hello.txt: deny by via:rule:flag-1", "Write notes.txt: allow by via:rule:flag-2"},
	} {
		got := byAgent[who]
		sort.Strings(got)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s tai's write decisions:\n%s\nwant:\n%s", who, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}
