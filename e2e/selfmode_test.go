package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An agent that starts in a mode in which it approves its own requests
// (claude-agent-acp's auto, codex-acp's agent) is moved to its asking mode
// before the first prompt, so its write reaches tai and tai's policy
// decides it; an allow rule naming the mode keeps it; --mode naming it is
// refused. The default sandbox, no --dir, the e2e HOME.
func TestSelfApprovingStartMode(t *testing.T) {
	t.Parallel()
	scr := writeScript(t, `start_mode: auto
steps:
  - write: {path: out.txt, content: "written\n"}
`)
	tests := []struct {
		name    string
		args    []string
		code    int
		written bool
		asked   bool   // the write reached tai
		mode    string // the start-mode decision recorded: allow, deny
		stderr  string // the result's error says it
	}{
		{"deny: moved to default, the write is denied", []string{"--approve", "deny"}, 5, false, true, "deny", ""},
		{"all: moved to default, the write is allowed by tai", []string{"--approve", "all"}, 0, true, true, "deny", ""},
		{"yolo does not allow it either", []string{"--approve", "yolo"}, 0, true, true, "deny", ""},
		// The agent writes without asking; its write through tai's file
		// service is still decided (approve-all allows it).
		{"an allow rule naming the mode keeps it", []string{"--approve", "all", "--allow", "switch_mode:auto"}, 0, true, false, "allow", ""},
		{"--mode auto is refused", []string{"--approve", "all", "--mode", "auto"}, 2, false, false, "deny", "--allow 'switch_mode:auto'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			log := filepath.Join(t.TempDir(), "audit.jsonl")
			args := append([]string{"run", "--agent-cmd", builtinWith(scr), "--audit", log, "-o", "json"}, tt.args...)
			o := tai(t, dir, append(args, "go")...)
			if o.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", o.code, tt.code, o.stdout, o.stderr)
			}
			if tt.stderr != "" && !strings.Contains(jsonResult(t, o).Error, tt.stderr) {
				t.Errorf("the error does not say %q: %s", tt.stderr, o.stdout)
			}
			_, err := os.Stat(filepath.Join(dir, "out.txt"))
			if written := err == nil; written != tt.written {
				t.Errorf("out.txt written %v, want %v", written, tt.written)
			}
			var asked, startMode bool
			for _, e := range readAudit(t, log) {
				var d struct {
					RequestID string `json:"request_id"`
					Decision  string `json:"decision"`
					DecidedBy string `json:"decided_by"`
					Reason    string `json:"reason"`
					// a call the agent made without asking, decided by tai
					Unrequested bool `json:"unrequested"`
				}
				_ = json.Unmarshal(e.Data, &d)
				switch {
				case e.Kind == "permission.request" && strings.Contains(string(e.Data), "out.txt") && !d.Unrequested:
					asked = true
				case e.Kind == "permission.decision" && d.RequestID == "start-mode":
					startMode = true
					if d.Decision != tt.mode || d.Reason == "" || d.DecidedBy == "" {
						t.Errorf("start-mode decision: %s", e.Data)
					}
				}
			}
			if asked != tt.asked || !startMode {
				t.Errorf("write asked %v (want %v), start mode recorded %v", asked, tt.asked, startMode)
			}
		})
	}
}

// The result and tai doctor say whose sandbox confines the agent: tai's
// by default; with --sandbox off (the case under test) none for the
// built-in agent, which has no sandbox of its own. Doctor says codex's own
// sandbox cannot start under tai's.
func TestConfinementIsReported(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		by   string
	}{
		{nil, "tai"},
		{[]string{"--sandbox", "off"}, "none"},
	} {
		o := tai(t, t.TempDir(), append(append([]string{"run", "-o", "json"}, tt.args...), "go")...)
		var r struct {
			Confinement struct {
				By string `json:"by"`
			} `json:"confinement"`
		}
		if err := json.Unmarshal([]byte(o.stdout), &r); err != nil || r.Confinement.By != tt.by {
			t.Errorf("%v: confinement %+v (%v), want by %s\n%s", tt.args, r.Confinement, err, tt.by, o.stdout)
		}
	}
	o := tai(t, t.TempDir(), "doctor", "-o", "json")
	var d struct {
		Agents []struct{ Name, Confinement string } `json:"agents"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &d); err != nil {
		t.Fatalf("doctor -o json: %v\n%s", err, o.stdout)
	}
	for _, a := range d.Agents {
		if a.Name == "codex" && !strings.Contains(a.Confinement, "bubblewrap") {
			t.Errorf("doctor's codex confinement %q does not name its own sandbox", a.Confinement)
		}
	}
}
