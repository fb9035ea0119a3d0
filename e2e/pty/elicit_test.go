package pty

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tai-dev/tai/audit"
)

// The human link of the elicitation chain: a real form on tai's terminal,
// field by field, an invalid value asked again, defaults taken, the secret
// not echoed; then the URL, opened only on the user's word.
func TestElicitationFormInTerminal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script, _ := filepath.Abs(filepath.Join("..", "testdata", "elicit.yaml"))
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	u := startInTerminal(t, dir, "run", "--audit", auditPath, "--agent-cmd", taiBin+" agent builtin --script "+script, "go")
	u.waitFor("The agent asks: Which database should I migrate?")
	u.waitFor("3) prod")
	u.typ("3\n")
	u.waitFor("Port (integer, required, min 1, max 65535)")
	u.typ("abc\n")
	u.waitFor(`"abc" is not a number`)
	u.typ("443\n")
	u.waitFor("Dry run (yes/no)")
	u.typ("\n") // the default
	u.waitFor("Password (string, password, secret)")
	u.typ("tty-secret-42\n")
	u.waitFor("Send these answers? [Y/n]")
	u.typ("y\n")
	u.waitFor("The agent asks you to visit a URL")
	u.waitFor("https://auth.example.com/device?code=XYZ")
	u.typ("d\n")
	u.waitFor("URL elicitation elicitation-3 accepted")
	if code := u.exit(); code != 0 {
		t.Fatalf("exit %d\n%s", code, u.screen())
	}
	if strings.Contains(u.screen(), "tty-secret-42") {
		t.Fatalf("the secret was echoed:\n%s", u.screen())
	}
	if !strings.Contains(u.screen(), `database="prod", dry_run=true, password=<secret, 13 chars>, port=443`) {
		t.Fatalf("the agent did not get the form's answers:\n%s", u.screen())
	}
	var answers []map[string]any
	for _, e := range readAudit(t, auditPath) {
		if e.Kind != audit.KindElicitationAnswer {
			continue
		}
		var a map[string]any
		_ = json.Unmarshal(e.Data, &a)
		answers = append(answers, a)
	}
	if len(answers) != 2 || answers[0]["decided_by"] != "human" || answers[1]["decided_by"] != "human" || answers[1]["action"] != "accept" {
		t.Fatalf("audit answers %v", answers)
	}
	if c, _ := answers[0]["content"].(map[string]any); c["password"] != "[REDACTED]" || c["database"] != "prod" {
		t.Fatalf("audit form answer %v", answers[0])
	}
}
