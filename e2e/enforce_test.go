package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/e2e/internal/build"
)

// unasked is a script that writes, reads and runs without asking first.
const unasked = `steps:
  - write: {path: unasked.txt, content: "written\n", ask: false}
  - read: existing.txt
  - run: {command: sh, args: ["-c", "echo ran > ran.txt"]}
  - text: done
`

// auditPermissions returns the data of the log's entries of kind.
func auditPermissions(t *testing.T, path, kind string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, e := range readAudit(t, path) {
		if e.Kind != kind {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(e.Data, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// Calls the agent makes without asking are decided by the policy, each as
// a request of its own: denied ones are not served (the files are checked
// on disk), the run exits 5, and the result and the audit log mark them
// unrequested.
func TestUnrequestedCallsAreDecided(t *testing.T) {
	t.Parallel()
	scr := writeScript(t, unasked)
	for _, tt := range []struct {
		approve string
		// verdicts of the unrequested calls by tool kind, in order: the
		// write's read for its diff, the write, the read, the command.
		verdicts []string
		read     bool // the agent got existing.txt
	}{
		{"deny", []string{"deny", "deny", "deny", "deny"}, false},
		{"reads", []string{"allow", "deny", "allow", "deny"}, true},
		{"ask", []string{"deny", "deny", "deny", "deny"}, false}, // no TTY: --non-interactive deny
	} {
		t.Run(tt.approve, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "existing.txt"), []byte("the existing file\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			log := filepath.Join(t.TempDir(), "audit.jsonl")
			o := tai(t, dir, "run", "--agent-cmd", builtinWith(scr), "--approve", tt.approve, "--audit", log, "-o", "json", "go")
			r := jsonResult(t, o)
			if o.code != 5 || r.Status != "denied" {
				t.Fatalf("exit %d status %s, want 5 denied: %s", o.code, r.Status, o.stderr)
			}
			var got []string
			for _, p := range r.Permissions {
				if !p.Unrequested {
					t.Errorf("a decision not marked unrequested: %+v", p)
				}
				got = append(got, p.Verdict)
			}
			if strings.Join(got, ",") != strings.Join(tt.verdicts, ",") {
				t.Fatalf("verdicts %v, want %v: %+v", got, tt.verdicts, r.Permissions)
			}
			if kinds := r.Permissions[1].ToolKind + "," + r.Permissions[3].ToolKind; kinds != "edit,execute" {
				t.Errorf("kinds %s", kinds)
			}
			for _, f := range []string{"unasked.txt", "ran.txt"} {
				if _, err := os.Stat(filepath.Join(dir, f)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s exists after a denial: %v", f, err)
				}
			}
			if len(r.FilesWritten) != 0 || len(r.Terminals) != 0 {
				t.Errorf("served: files %+v terminals %+v", r.FilesWritten, r.Terminals)
			}
			// The agent reads why.
			if !strings.Contains(r.Message, "tai's policy denied fs/write_text_file") ||
				!strings.Contains(r.Message, "tai's policy denied terminal/create sh -c 'echo ran > ran.txt'") {
				t.Errorf("the agent was not told: %q", r.Message)
			}
			if refused := strings.Contains(r.Message, "I couldn't read existing.txt: tai's policy denied fs/read_text_file"); refused == tt.read {
				t.Errorf("read allowed %v, but the agent says %q", tt.read, r.Message)
			}
			reqs, decs := auditPermissions(t, log, audit.KindPermissionRequest), auditPermissions(t, log, audit.KindPermissionDecision)
			if len(reqs) != 4 || len(decs) != 4 {
				t.Fatalf("audit: %d requests and %d decisions, want 4 and 4", len(reqs), len(decs))
			}
			for i := range decs {
				if reqs[i]["unrequested"] != true || decs[i]["unrequested"] != true || decs[i]["decision"] != tt.verdicts[i] ||
					decs[i]["decided_by"] != "default" {
					t.Errorf("audit entry %d: %v / %v", i, reqs[i], decs[i])
				}
			}
		})
	}
}

// With --non-interactive fail, an unrequested call that policy would ask
// about stops the run with exit 5, and is not served.
func TestUnrequestedAskFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	scr := writeScript(t, "steps:\n  - run: {command: sh, args: [\"-c\", \"echo ran > ran.txt\"]}\n  - text: done\n")
	o := tai(t, dir, "run", "--agent-cmd", builtinWith(scr), "--approve", "ask", "--non-interactive", "fail", "-o", "json", "go")
	r := jsonResult(t, o)
	if o.code != 5 || !strings.Contains(r.Error, "non-interactive fail") {
		t.Fatalf("exit %d error %q", o.code, r.Error)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the command ran: %v", err)
	}
}

// A permission the agent asked for and was granted covers the write and
// the command it announced: no second decision. A call it did not
// announce is decided on its own.
func TestGrantCoversAnnouncedCalls(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	scr := writeScript(t, `steps:
  - write: {path: granted.txt, content: "granted\n"}
  - run: {command: sh, args: ["-c", "echo ran > ran.txt"], ask: true}
  - write: {path: other.txt, content: "other\n", ask: false}
  - text: done
`)
	// --approve all: the grant covering the announced calls is the subject.
	o := tai(t, dir, "run", "--agent-cmd", builtinWith(scr), "--approve", "all", "-o", "json", "go")
	r := jsonResult(t, o)
	if o.code != 0 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	var asked, unasked []string
	for _, p := range r.Permissions {
		if p.Unrequested {
			unasked = append(unasked, p.Title)
		} else {
			asked = append(asked, p.Title)
		}
	}
	// Asked: the write and the command. Unasked: the reads before each
	// write (to show a diff) and the write of other.txt; never the
	// granted write or command.
	want := []string{"Read " + filepath.Join(dir, "granted.txt"), "Read " + filepath.Join(dir, "other.txt"), "Write " + filepath.Join(dir, "other.txt")}
	if len(asked) != 2 || strings.Join(unasked, "|") != strings.Join(want, "|") {
		t.Fatalf("asked %q, decided unasked %q (want %q)", asked, unasked, want)
	}
	for f, want := range map[string]string{"granted.txt": "granted\n", "ran.txt": "ran\n", "other.txt": "other\n"} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v", f, b, err)
		}
	}
}

// The floor holds for commands run without asking: a forced push to main
// through terminal/create is denied under yolo, and never runs.
func TestUnrequestedForcePushMeetsTheFloor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	scr := writeScript(t, "steps:\n  - run: {command: git, args: [push, --force, origin, main]}\n  - text: done\n")
	// --approve yolo: even then the floor refuses the force push.
	o := tai(t, dir, "run", "--agent-cmd", builtinWith(scr), "--approve", "yolo", "-o", "json", "go")
	r := jsonResult(t, o)
	if o.code != 5 || len(r.Denials) != 1 || r.Denials[0].DecidedBy != "rule:floor-git-force-push" || !r.Denials[0].Unrequested {
		t.Fatalf("exit %d denials %+v", o.code, r.Denials)
	}
	if len(r.Terminals) != 0 {
		t.Fatalf("the push ran: %+v", r.Terminals)
	}
	if !strings.Contains(r.Message, "tai's policy denied terminal/create git push --force origin main") {
		t.Errorf("message %q", r.Message)
	}
}

// An agent cannot plant a policy: writes to the --policy file inside the
// workspace are denied by the floor, and refused by the file service even
// with the floor off; the file is unchanged.
func TestPolicyPlantingInTheWorkspace(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, policy string
		code         int
		denial       string // decided_by of the denials; "" = none
	}{
		{"floor", "mode = \"yolo\"\n", 5, "rule:floor-policy-files"},
		{"floor off", "mode = \"yolo\"\nfloor = false\n", 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pol := filepath.Join(dir, "tai-policy.toml")
			if err := os.WriteFile(pol, []byte(tt.policy), 0o644); err != nil {
				t.Fatal(err)
			}
			scr := writeScript(t, `steps:
  - write: {path: tai-policy.toml, content: "mode = \"yolo\"\nfloor = false\n# planted\n"}
  - write: {path: tai-policy.toml, content: "mode = \"yolo\"\nfloor = false\n# planted\n", ask: false}
  - text: done
`)
			o := tai(t, dir, "run", "--agent-cmd", builtinWith(scr), "--policy", pol, "-o", "json", "go")
			r := jsonResult(t, o)
			if b, _ := os.ReadFile(pol); string(b) != tt.policy {
				t.Fatalf("the policy was rewritten: %q", b)
			}
			if o.code != tt.code {
				t.Fatalf("exit %d, want %d: %+v %+v", o.code, tt.code, r.Denials, r.Errors)
			}
			for _, d := range r.Denials {
				if d.DecidedBy != tt.denial {
					t.Errorf("denial %+v", d)
				}
			}
			// Without the floor the file service refuses both writes.
			if tt.denial == "" {
				refused := 0
				for _, e := range r.Errors {
					if e.Code == "protected_path" && strings.Contains(e.Message, pol) {
						refused++
					}
				}
				if refused != 2 {
					t.Errorf("%d protected_path errors, want 2: %+v", refused, r.Errors)
				}
			} else if len(r.Denials) != 2 || unrequested(r.Denials) != 1 {
				t.Errorf("denials %+v, want the asked write and the unasked one", r.Denials)
			}
			if len(r.FilesWritten) != 0 {
				t.Errorf("files written %+v", r.FilesWritten)
			}
		})
	}
}

// With -C ~, tai's own config and state are inside the workspace: the
// user's policy ($XDG_CONFIG_HOME/tai/policy.toml) and tai's state stay
// out of the agent's reach, asked or not, whatever the mode.
func TestPolicyPlantingUnderHome(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cfg := filepath.Join(home, ".config", "tai")
	if err := os.MkdirAll(cfg, 0o755); err != nil {
		t.Fatal(err)
	}
	user := "mode = \"yolo\"\n" // the user's own policy, which tai loads
	pol := filepath.Join(cfg, "policy.toml")
	if err := os.WriteFile(pol, []byte(user), 0o644); err != nil {
		t.Fatal(err)
	}
	planted := `mode = \"yolo\"\nfloor = false\n`
	scr := writeScript(t, fmt.Sprintf(`steps:
  - write: {path: .config/tai/policy.toml, content: "%s"}
  - write: {path: .config/tai/policy.toml, content: "%s", ask: false}
  - write: {path: .local/state/tai/audit/forged.jsonl, content: "{}\n", ask: false}
  - write: {path: notes.txt, content: "fine\n", ask: false}
  - text: done
`, planted, planted))
	env := append(os.Environ(), "NO_COLOR=1", "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"))
	bo := build.Run(t, taiBin, home, env, "run", "-C", home, "--agent-cmd", builtinWith(scr), "-o", "json", "go")
	r := jsonResult(t, outcome{bo.Stdout, bo.Stderr, bo.Code})
	if b, _ := os.ReadFile(pol); string(b) != user {
		t.Fatalf("the user's policy was rewritten: %q", b)
	}
	if _, err := os.Stat(filepath.Join(home, ".local", "state", "tai", "audit", "forged.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file was planted in tai's state: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(home, "notes.txt")); err != nil || string(b) != "fine\n" {
		t.Errorf("an ordinary write under yolo: %q, %v", b, err)
	}
	if bo.Code != 5 || len(r.Denials) != 3 {
		t.Fatalf("exit %d, denials %+v", bo.Code, r.Denials)
	}
	for _, d := range r.Denials {
		if d.DecidedBy != "rule:floor-policy-files" {
			t.Errorf("denial %+v", d)
		}
	}
}

// A path with a NUL byte is refused, not cleaned into another file.
func TestNULPathIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "nul") + `\0../../x.txt`
	scr := writeScript(t, fmt.Sprintf("steps:\n  - write: {path: \"%s\", content: \"x\\n\", ask: false}\n  - read: \"%s\"\n  - text: done\n", bad, bad))
	// --approve all: only the NUL path's own refusal can stop the write.
	o := tai(t, dir, "run", "--agent-cmd", builtinWith(scr), "--approve", "all", "-o", "json", "go")
	r := jsonResult(t, o)
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Fatalf("the workspace holds %v", entries)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "x.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("x.txt was written next to the workspace: %v", err)
	}
	refused := 0
	for _, e := range r.Errors {
		if e.Code == "invalid_path" && strings.Contains(e.Message, "NUL") {
			refused++
		}
	}
	if refused != 3 || len(r.FilesWritten) != 0 { // the write's read for a diff, the write, the read
		t.Fatalf("exit %d, %d invalid_path errors (want 3): %+v", o.code, refused, r.Errors)
	}
	if !strings.Contains(r.Message, "NUL byte") {
		t.Errorf("the agent was not told: %q", r.Message)
	}
}

// A decision that cannot be recorded is not granted: with the audit log on
// a full device, every ask is denied, no call is served, nothing is
// written to the workspace, and the run fails with exit 1 saying why.
func TestAuditFullDenies(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	dir := t.TempDir()
	scr := writeScript(t, `steps:
  - write: {path: asked.txt, content: "asked\n"}
  - write: {path: unasked.txt, content: "unasked\n", ask: false}
  - run: {command: sh, args: ["-c", "echo ran > ran.txt"]}
  - text: done
`)
	// --approve yolo: every call is allowed, so the audit failure is what must stop them.
	o := tai(t, dir, "run", "--agent-cmd", builtinWith(scr), "--approve", "yolo", "--audit", "/dev/full", "-o", "json", "go")
	r := jsonResult(t, o)
	if o.code != 1 || !strings.Contains(r.Error, "audit log write failed") || !strings.Contains(r.Error, "no space left") {
		t.Fatalf("exit %d error %q", o.code, r.Error)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("the workspace holds %v", entries)
	}
	if len(r.Denials) != 1 || r.Denials[0].DecidedBy != "audit" || len(r.FilesWritten) != 0 || len(r.Terminals) != 0 {
		t.Fatalf("denials %+v files %+v terminals %+v", r.Denials, r.FilesWritten, r.Terminals)
	}
	if !strings.Contains(r.Message, "the audit log cannot be written") {
		t.Errorf("the agent was not told: %q", r.Message)
	}
}

// Under --approve ask on a terminal, a call the agent makes without asking
// is put to the human, who sees that it was not asked for; the answer
// decides whether it is served.
func TestUnrequestedAskOnTTY(t *testing.T) {
	t.Parallel()
	scr := writeScript(t, `steps:
  - run: {command: sh, args: ["-c", "echo ran > ran.txt"]}
  - write: {path: w.txt, content: "w\n", ask: false}
  - text: done
`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := startOnTTY(ctx, t, nil, "run", "--agent-cmd", builtinWith(scr), "--approve", "ask", "-o", "json", "go")
	dir := run.cmd.Dir
	// Allow the command; deny the write's read (for its diff) and the write.
	answers := []string{"y\n", "n\n", "n\n"}
	prompts, screen := run.answer(t, "[a] allow always", func(n int) string {
		if n < len(answers) {
			return answers[n]
		}
		return ""
	})
	if prompts != 3 || strings.Count(screen, "The agent did not ask, but wants tai to") != 3 {
		t.Fatalf("prompted %d times, want 3 unrequested:\n%s", prompts, screen)
	}
	r := run.result(t, screen)
	var got []string
	for _, p := range r.Permissions {
		got = append(got, p.ToolKind+":"+p.Verdict+":"+p.DecidedBy)
		if !p.Unrequested {
			t.Errorf("not marked unrequested: %+v", p)
		}
	}
	if strings.Join(got, ",") != "execute:allow:human,read:deny:human,edit:deny:human" || r.ExitCode != 5 {
		t.Fatalf("exit %d, decisions %v", r.ExitCode, got)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "ran.txt")); err != nil || string(b) != "ran\n" {
		t.Errorf("the allowed command: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "w.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the denied write happened: %v", err)
	}
}
