package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/e2e/internal/auditlog"
)

type auditEntry = audit.Entry

func readAudit(t *testing.T, path string) []auditEntry { return auditlog.Read(t, path) }

// Every kind of entry appears, the log verifies, is 0600, and records each
// decision with its provenance.
func TestAuditRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(t.TempDir(), "run.jsonl")
	scr := filepath.Join(t.TempDir(), "s.yaml")
	data, _ := os.ReadFile(script("outside.yaml"))
	if err := os.WriteFile(scr, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// The default tour plus a refused path, so that errors are recorded too.
	// --approve all: the tour's writes and command land, so the log has every kind of entry.
	o := tai(t, dir, "run", "--approve", "all", "--audit", log, "-o", "json", "go")
	r := jsonResult(t, o)
	if o.code != 0 {
		t.Fatalf("exit %d %+v", o.code, r)
	}
	o2 := tai(t, dir, "run", "--agent-cmd", builtinWith(scr), "--audit", log+".2", "-o", "json", "go")
	if o2.code != 0 {
		t.Fatalf("exit %d %s", o2.code, o2.stderr)
	}
	st, err := os.Stat(log)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("audit log mode %v, %v", st.Mode(), err)
	}
	kinds := map[string]int{}
	for _, e := range append(readAudit(t, log), readAudit(t, log+".2")...) {
		kinds[e.Kind]++
		if e.Kind == "permission.decision" {
			var d struct {
				Decision, DecidedBy, Reason, Option string
			}
			_ = json.Unmarshal(e.Data, &d)
			var raw map[string]any
			_ = json.Unmarshal(e.Data, &raw)
			if raw["decided_by"] != "default" || raw["reason"] == "" || raw["decision"] != "allow" || raw["option"] == "" {
				t.Errorf("decision entry without provenance: %s", e.Data)
			}
		}
	}
	for _, k := range []string{"run.start", "run.end", "session.start", "session.end", "prompt", "permission.request",
		"permission.decision", "file.write", "terminal.exit", "mode.change", "process.start", "process.exit", "error"} {
		if kinds[k] == 0 {
			t.Errorf("no %s entry (got %v)", k, kinds)
		}
	}
	v := tai(t, dir, "audit", "verify", log)
	if v.code != 0 || !strings.HasPrefix(v.stdout, "OK: ") {
		t.Fatalf("verify: exit %d %s %s", v.code, v.stdout, v.stderr)
	}
	s := tai(t, dir, "audit", "show", "--kind", "permission", log)
	if s.code != 0 || strings.Count(s.stdout, "permission.decision") != 7 || strings.Count(s.stdout, "unrequested=true") != 8 ||
		strings.Contains(s.stdout, "file.write") {
		t.Fatalf("show --kind permission:\n%s", s.stdout)
	}
}

// tai audit verify names the first bad line for each kind of tampering.
func TestAuditTamper(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(t.TempDir(), "run.jsonl")
	// --approve all: a full log to tamper with; the policy is not the subject.
	if o := tai(t, dir, "run", "--approve", "all", "--audit", log, "-o", "json", "go"); o.code != 0 {
		t.Fatalf("exit %d", o.code)
	}
	orig, _ := os.ReadFile(log)
	lines := strings.SplitAfter(strings.TrimSuffix(string(orig), "\n"), "\n")
	lines[len(lines)-1] += "\n"
	tests := []struct {
		name   string
		mutate func([]string) []string
		line   string
	}{
		{"edited", func(l []string) []string {
			l[5] = strings.Replace(l[5], `"allow"`, `"deny"`, 1)
			return l
		}, "line 6"},
		{"reordered", func(l []string) []string { l[3], l[4] = l[4], l[3]; return l }, "line 4"},
		{"deleted", func(l []string) []string { return append(l[:6:6], l[7:]...) }, "line 7"},
		{"truncated", func(l []string) []string {
			last := len(l) - 1
			l[last] = l[last][:len(l[last])/2]
			return l
		}, "line " + itoa(len(lines))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cp := append([]string(nil), lines...)
			path := filepath.Join(t.TempDir(), "tampered.jsonl")
			if err := os.WriteFile(path, []byte(strings.Join(tt.mutate(cp), "")), 0o600); err != nil {
				t.Fatal(err)
			}
			v := tai(t, dir, "audit", "verify", path)
			if v.code == 0 || !strings.Contains(v.stdout, tt.line) {
				t.Fatalf("exit %d, want non-zero naming %s:\n%s", v.code, tt.line, v.stdout)
			}
		})
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// Secrets in the agent's environment never reach the log.
func TestAuditRedactsSecrets(t *testing.T) {
	t.Parallel()
	const secret = "sk-test-abcdefghijklmnopqrstuvwxyz0123456789"
	log := filepath.Join(t.TempDir(), "run.jsonl")
	o := tai(t, t.TempDir(), "run", "-e", "OPENAI_API_KEY="+secret, "--audit", log, "--redact", `ticket-(?P<secret>\d+)`,
		"-o", "json", "/echo my key is "+secret+" and my ticket-12345")
	if o.code != 0 {
		t.Fatalf("exit %d %s", o.code, o.stderr)
	}
	b, _ := os.ReadFile(log)
	if strings.Contains(string(b), "12345") || !strings.Contains(string(b), "ticket-[REDACTED]") {
		t.Fatalf("--redact pattern not applied:\n%s", b)
	}
	if strings.Contains(string(b), secret) || !strings.Contains(string(b), "[REDACTED]") {
		t.Fatalf("secret not redacted in the audit log:\n%s", b)
	}
}

// Without --audit the log lands in the XDG state directory.
func TestAuditDefaultPath(t *testing.T) {
	t.Parallel()
	o := tai(t, t.TempDir(), "run", "-o", "json", "/echo hi")
	var r struct {
		Audit string `json:"audit"`
		RunID string `json:"run_id"`
	}
	_ = json.Unmarshal([]byte(o.stdout), &r)
	want := filepath.Join(stateDir, "tai", "audit", r.RunID+".jsonl")
	if o.code != 0 || r.Audit != want {
		t.Fatalf("audit at %q, want %q", r.Audit, want)
	}
	if _, err := os.Stat(want); err != nil {
		t.Fatal(err)
	}
}
