package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type elicitResult struct {
	ExitCode     int    `json:"exit_code"`
	Status       string `json:"status"`
	Message      string `json:"message"`
	Error        string `json:"error"`
	Elicitations []struct {
		Mode      string         `json:"mode"`
		Action    string         `json:"action"`
		Content   map[string]any `json:"content"`
		Redacted  []string       `json:"redacted"`
		DecidedBy string         `json:"decided_by"`
	} `json:"elicitations"`
}

const elicitPolicy = `[[elicit]]
id = "db"
message = "*database*"
[elicit.answers]
database = "staging"
port = 5432
password = "hunter2-e2e-secret"

[[elicit]]
id = "registry"
url = "https://auth.example.com/*"
`

// The built-in agent's form and URL elicitations, answered by each link
// of the chain that can answer without a terminal: the policy file's
// rules, nobody (decline), nobody under --non-interactive fail (exit 5).
// The secret field never reaches the result or the audit log.
func TestElicitationBuiltin(t *testing.T) {
	t.Parallel()
	pol := filepath.Join(t.TempDir(), "policy.toml")
	if err := os.WriteFile(pol, []byte(elicitPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	agent := builtinWith(script("elicit.yaml"))
	tests := []struct {
		name    string
		args    []string
		code    int
		by      []string
		actions []string
	}{
		{"policy rules", []string{"--policy", pol}, 0, []string{"rule:db", "rule:registry"}, []string{"accept", "accept"}},
		{"nobody: decline", nil, 0, []string{"default", "default"}, []string{"decline", "decline"}},
		{"nobody, fail: exit 5", []string{"--non-interactive", "fail"}, 5, []string{"cancel"}, []string{"cancel"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
			o := tai(t, dir, append(append([]string{"run", "--agent-cmd", agent, "--audit", auditPath, "-o", "json"}, tc.args...), "go")...)
			var r elicitResult
			if err := json.Unmarshal([]byte(o.stdout), &r); err != nil {
				t.Fatalf("%v\n%s\n%s", err, o.stdout, o.stderr)
			}
			if o.code != tc.code || r.ExitCode != tc.code {
				t.Fatalf("exit %d (result %d), want %d: %s\n%s", o.code, r.ExitCode, tc.code, r.Error, o.stderr)
			}
			// A stopped run may still see the agent's next request before
			// the agent hears of the cancel: it is cancelled too.
			if len(r.Elicitations) != len(tc.by) && !(tc.code == 5 && len(r.Elicitations) == 2) {
				t.Fatalf("elicitations %+v, want %d", r.Elicitations, len(tc.by))
			}
			for i, e := range r.Elicitations {
				i := min(i, len(tc.by)-1)
				if e.DecidedBy != tc.by[i] || e.Action != tc.actions[i] {
					t.Errorf("elicitation %d: %+v, want %s by %s", i, e, tc.actions[i], tc.by[i])
				}
			}
			log, err := os.ReadFile(auditPath)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(log), "hunter2") || strings.Contains(o.stdout, "hunter2") {
				t.Fatal("the secret field's value is in the result or the audit log")
			}
			if n := strings.Count(string(log), `"kind":"elicitation.answer"`); n != len(r.Elicitations) {
				t.Fatalf("%d elicitation.answer audit entries, want %d", n, len(r.Elicitations))
			}
			if tc.by[0] == "rule:db" {
				e := r.Elicitations[0]
				if e.Content["database"] != "staging" || e.Content["port"] != 5432.0 || e.Content["dry_run"] != true ||
					e.Content["password"] != "[REDACTED]" || strings.Join(e.Redacted, ",") != "password" {
					t.Fatalf("form answer %+v", e)
				}
				if !strings.Contains(r.Message, `database="staging"`) || !strings.Contains(r.Message, "password=<secret, 18 chars>") {
					t.Fatalf("the agent did not get the answers: %q", r.Message)
				}
				if !strings.Contains(string(log), `"kind":"elicitation.complete"`) || !strings.Contains(string(log), `"decided_by":"rule:db"`) {
					t.Fatal("the audit log lacks the completion or the provenance")
				}
			}
		})
	}
}

// With --cap-speak, an elicitation goes to the parent, whose answer is
// checked against the form: an invalid one is not passed on.
func TestElicitationCapSpeakParent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startParent(t, dir, "--agent-cmd", builtinWith(script("elicit.yaml")))
	p.say("go")
	var asked []string
	answer := func(m map[string]any) {
		req, _ := m["request"].(map[string]any)
		if m["type"] != "control_request" || req["subtype"] != "elicitation" {
			return
		}
		asked = append(asked, req["mode"].(string))
		resp := map[string]any{"action": "accept", "content": map[string]any{"database": "prod", "port": 8080, "password": "p4ss-parent"}}
		if req["mode"] == "url" {
			resp = map[string]any{"action": "decline"}
		}
		p.send(map[string]any{"type": "control_response", "response": map[string]any{
			"subtype": "success", "request_id": m["request_id"], "response": resp}})
	}
	p.next(func(m map[string]any) bool { answer(m); return m["type"] == "turn.ended" }, nil)
	res, code := p.finish(nil)
	if code != 0 || strings.Join(asked, ",") != "form,url" {
		t.Fatalf("exit %d, asked %v", code, asked)
	}
	els, _ := res["elicitations"].([]any)
	if len(els) != 2 {
		t.Fatalf("elicitations %v", res["elicitations"])
	}
	form := els[0].(map[string]any)
	content, _ := form["content"].(map[string]any)
	if form["decided_by"] != "parent" || form["action"] != "accept" || content["database"] != "prod" || content["password"] != "[REDACTED]" {
		t.Fatalf("form answer %v", form)
	}
	if u := els[1].(map[string]any); u["action"] != "decline" || u["decided_by"] != "parent" {
		t.Fatalf("url answer %v", u)
	}
	if !strings.Contains(res["message"].(string), `database="prod"`) {
		t.Fatalf("message %q", res["message"])
	}
}

// An agent written with the TypeScript SDK 1.9.0 sees the elicitation
// capability, and gets the policy file's answers to its form and URL.
func TestElicitationTypeScriptPeer(t *testing.T) { // not parallel: t.Setenv
	example := peer(t, "TAI_TS_AGENT")
	sdk := filepath.Join(filepath.Dir(filepath.Dir(example)), "acp.js")
	pol := filepath.Join(t.TempDir(), "policy.toml")
	if err := os.WriteFile(pol, []byte(`[[elicit]]
id = "deploy"
message = "*deployment*"
[elicit.answers]
region = "eu"
api_key = "sk-ts-e2e-abcdef"

[[elicit]]
id = "auth"
url = "https://auth.example.com/*"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	agent := "node " + script("elicit-agent.mjs")
	t.Setenv("TAI_ACP_SDK", sdk)
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	o := tai(t, t.TempDir(), "run", "--policy", pol, "--agent-cmd", agent, "--audit", auditPath, "-o", "json", "deploy")
	var r elicitResult
	if err := json.Unmarshal([]byte(o.stdout), &r); err != nil || o.code != 0 {
		t.Fatalf("exit %d %v\n%s\n%s", o.code, err, o.stdout, o.stderr)
	}
	if !strings.Contains(r.Message, `form: {"region":"eu","replicas":2,"key_len":16}`) || !strings.Contains(r.Message, "url: accept") {
		t.Fatalf("the agent got: %q", r.Message)
	}
	if len(r.Elicitations) != 2 || r.Elicitations[0].DecidedBy != "rule:deploy" || r.Elicitations[1].DecidedBy != "rule:auth" {
		t.Fatalf("elicitations %+v", r.Elicitations)
	}
	log, _ := os.ReadFile(auditPath)
	if strings.Contains(string(log), "sk-ts-e2e") || !strings.Contains(string(log), `"elicitation_id":"ts-1"`) {
		t.Fatal("the audit log has the secret, or lacks the URL's completion")
	}
	// Without the policy, nobody answers: both are declined and the agent
	// hears so.
	o = tai(t, t.TempDir(), "run", "--agent-cmd", agent, "-o", "json", "deploy")
	if err := json.Unmarshal([]byte(o.stdout), &r); err != nil || o.code != 0 || !strings.Contains(r.Message, "form: decline") {
		t.Fatalf("exit %d %v %q", o.code, err, r.Message)
	}
}
