package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// tai chat from a pipe: one prompt per line, each a turn of one session;
// /mode switches between turns; the result is the session's.
func TestChatFromPipe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(taiBin, "chat", "--no-audit", "-o", "json")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "XDG_STATE_HOME="+stateDir)
	cmd.Stdin = strings.NewReader("/echo one\n\n/mode plan\n/mode nope\n/echo two\n")
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, errb.String())
	}
	var r struct {
		ExitCode  int    `json:"exit_code"`
		Message   string `json:"message"`
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(out, &r); err != nil || r.ExitCode != 0 || r.Message != "two" {
		t.Fatalf("result %+v %v\n%s", r, err, out)
	}
	if !strings.Contains(errb.String(), `/mode nope`) || !strings.Contains(errb.String(), "plan, default, accept-edits") {
		t.Fatalf("a bad mode is not reported with the modes there are:\n%s", errb.String())
	}
	o := tai(t, dir, "sessions", "--json")
	if !strings.Contains(o.stdout, r.SessionID) || strings.Count(o.stdout, `"session_id"`) != 1 {
		t.Fatalf("the chat is not one session record:\n%s", o.stdout)
	}
}
