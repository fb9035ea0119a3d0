package acpserver

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// An editor that answers session/request_permission with a JSON-RPC error
// has refused that one request: the turn goes on, nothing is written, and
// the refusal is recorded with the error.
func TestEditorErrorAnswerIsARefusal(t *testing.T) {
	dir := t.TempDir()
	script := scriptFor(t, `steps:
  - write: {path: refused.txt, content: "x\n", ask: true}
  - text: "after the refusal"
`)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	e := startRaw(t, dir, "--audit", audit, "--agent-cmd", taiBin+" agent builtin --script "+script)
	e.result(e.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}), nil)
	res := e.result(e.call("session/new", map[string]any{"cwd": dir, "mcpServers": []any{}}), nil)
	var ns struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(res["result"], &ns)
	var text strings.Builder
	asked := 0
	id := e.call("session/prompt", map[string]any{"sessionId": ns.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "go"}}})
	res = e.result(id, func(m map[string]json.RawMessage) {
		switch str(m["method"]) {
		case "session/request_permission":
			asked++
			e.send(map[string]any{"jsonrpc": "2.0", "id": m["id"],
				"error": map[string]any{"code": -32603, "message": "the editor's dialog crashed"}})
		case "session/update":
			var p struct {
				Update struct {
					Kind    string `json:"sessionUpdate"`
					Content struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"update"`
			}
			_ = json.Unmarshal(m["params"], &p)
			if p.Update.Kind == "agent_message_chunk" {
				text.WriteString(p.Update.Content.Text)
			}
		}
	})
	if asked != 1 {
		t.Fatalf("the editor was asked %d times, want 1", asked)
	}
	if !strings.Contains(string(res["result"]), `"stopReason":"end_turn"`) {
		t.Fatalf("the turn did not go on after the editor's error answer: %s %s", res["result"], res["error"])
	}
	if !strings.Contains(text.String(), "after the refusal") {
		t.Errorf("the agent's text after the refusal did not arrive: %q", text.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "refused.txt")); err == nil {
		t.Errorf("the refused write landed")
	}
	e.finish()
	b, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, `"permission.decision"`) && strings.Contains(l, `"deny"`) && strings.Contains(l, "the editor's dialog crashed") {
			found = true
		}
	}
	if !found {
		t.Errorf("no denial recorded with the editor's error in the audit log:\n%s", b)
	}
}

// A request followed at once by end of input is still answered, by tai acp
// and by the built-in agent alike (as gemini and opencode do).
func TestLastRequestAnsweredAtEOF(t *testing.T) {
	for name, args := range map[string][]string{
		"tai acp":           {"acp", "--agent", "builtin"},
		"tai agent builtin": {"agent", "builtin"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(taiBin, args...)
			cmd.Dir, cmd.Env = dir, env(dir)
			cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}` + "\n")
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v: %v", args, err)
			}
			// The answer, among what else the agent says (tai acp's warm
			// session may announce its commands).
			answered := false
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				var m struct {
					ID     *int            `json:"id"`
					Result json.RawMessage `json:"result"`
				}
				if json.Unmarshal([]byte(line), &m) == nil && m.ID != nil && *m.ID == 1 && strings.Contains(string(m.Result), `"protocolVersion":1`) {
					answered = true
				}
			}
			if !answered {
				t.Fatalf("the initialize before EOF was not answered: %q", out)
			}
		})
	}
}

// Sessions a third-party client made with the built-in agent (acpx
// starting `tai agent builtin` itself) are the built-in agent's sessions
// for tai too: one store, whoever runs the agent.
func TestBuiltinSessionsOneStore(t *testing.T) {
	acpx := acpxBin(t)
	dir := t.TempDir()
	common := []string{"--agent", taiBin + " agent builtin", "--cwd", dir, "--no-fs", "--permission-policy", acpxPolicy, "--format", "text"}
	id := strings.TrimSpace(lastLine(runACPX(t, acpx, dir, append(common, "sessions", "new")...)))
	if !strings.HasPrefix(id, "builtin-") {
		t.Fatalf("sessions new printed %q, want the built-in agent's session id", id)
	}
	runACPX(t, acpx, dir, append(common, "prompt", "/echo made by acpx")...)
	runACPX(t, acpx, dir, append(common, "sessions", "close")...)

	cmd := exec.Command(taiBin, "sessions", "--agent", "builtin", "-C", dir)
	cmd.Dir, cmd.Env = dir, acpxEnv(dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tai sessions --agent builtin: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), id) {
		t.Errorf("tai sessions --agent builtin does not list %s, which acpx made:\n%s", id, out)
	}
}
