package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A run of the default tour under each built-in mode. The tour asks before
// its two writes and its mode switch; it reads (before each write, to show
// a diff, and once on its own) and runs its command without asking, and
// each of those is decided too.
func TestPolicyModes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		approve string
		code    int
		denials int // of the agent's requests
		unasked int // of the calls it made without asking
		decided int // calls made without asking, decided
		by      string
	}{
		{"all", 0, 0, 0, 4, "default"},
		{"reads", 5, 3, 1, 4, "default"}, // the command; reads inside the workspace are allowed
		{"ask", 5, 3, 4, 4, "default"},
		{"deny", 5, 3, 4, 4, "default"},
		{"yolo", 0, 0, 0, 4, "default"},
	}
	for _, tt := range tests {
		t.Run(tt.approve, func(t *testing.T) {
			t.Parallel()
			o := tai(t, t.TempDir(), "run", "--approve", tt.approve, "-o", "json", "go")
			r := jsonResult(t, o)
			asked := len(r.Denials) - unrequested(r.Denials)
			if o.code != tt.code || asked != tt.denials || unrequested(r.Denials) != tt.unasked || unrequested(r.Permissions) != tt.decided {
				t.Fatalf("exit %d (want %d), %d denials (want %d) and %d unrequested (want %d): %+v",
					o.code, tt.code, asked, tt.denials, unrequested(r.Denials), tt.unasked, r.Permissions)
			}
			for _, p := range r.Permissions {
				if p.DecidedBy != tt.by {
					t.Errorf("decided_by %q, want %q", p.DecidedBy, tt.by)
				}
			}
		})
	}
}

func writeScript(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The built-in deny floor holds even in yolo mode.
func TestPolicyFloorInYolo(t *testing.T) {
	t.Parallel()
	scr := writeScript(t, `steps:
  - permission: {title: "wipe", kind: execute, command: "cd / && rm -rf *"}
  - permission: {title: "force push", kind: execute, command: "git push --force origin main"}
  - permission: {title: "outside", kind: edit, path: "/etc/tai-e2e-test"}
  - permission: {title: "harmless", kind: execute, command: "echo hi"}
`)
	o := tai(t, t.TempDir(), "run", "--agent-cmd", builtinWith(scr), "--approve", "yolo", "-o", "json", "go")
	r := jsonResult(t, o)
	if o.code != 5 || len(r.Permissions) != 4 || len(r.Denials) != 3 {
		t.Fatalf("exit %d: %+v", o.code, r.Permissions)
	}
	for _, d := range r.Denials {
		if !strings.HasPrefix(d.DecidedBy, "rule:floor-") {
			t.Errorf("denial decided by %q, want a floor rule", d.DecidedBy)
		}
	}
	if r.Permissions[3].Verdict != "allow" {
		t.Errorf("harmless command: %+v", r.Permissions[3])
	}
}

// A policy file's rules, with precedence deny > ask > allow, and the rule id
// as provenance.
func TestPolicyFile(t *testing.T) {
	t.Parallel()
	pol := filepath.Join(t.TempDir(), "policy.toml")
	if err := os.WriteFile(pol, []byte(`mode = "deny-all"

[[rule]]
id = "secrets"
effect = "deny"
kind = ["read", "edit"]
path = ["**/.env"]
reason = "secrets stay out of reach"

[[rule]]
id = "push"
effect = "ask"
command = ["git push*"]

[[rule]]
id = "go-tools"
effect = "allow"
kind = "execute"
command = ["go test *", "git *"]

[[rule]]
id = "edits"
effect = "allow"
kind = "edit"
path = "**"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	scr := writeScript(t, `steps:
  - permission: {title: "tests", kind: execute, command: "go test ./..."}
  - permission: {title: "env", kind: edit, path: "config/.env"}
  - permission: {title: "edit", kind: edit, path: "main.go"}
  - permission: {title: "push", kind: execute, command: "git push origin feature"}
  - permission: {title: "other", kind: fetch}
`)
	o := tai(t, t.TempDir(), "run", "--agent-cmd", builtinWith(scr), "--policy", pol, "-o", "json", "go")
	r := jsonResult(t, o)
	want := []struct{ verdict, by string }{
		{"allow", "rule:go-tools"}, {"deny", "rule:secrets"}, {"allow", "rule:edits"}, {"deny", "rule:push"}, {"deny", "default"},
	}
	if len(r.Permissions) != len(want) {
		t.Fatalf("%d decisions: %+v", len(r.Permissions), r.Permissions)
	}
	for i, w := range want {
		if p := r.Permissions[i]; p.Verdict != w.verdict || p.DecidedBy != w.by {
			t.Errorf("decision %d: %s by %s, want %s by %s", i, p.Verdict, p.DecidedBy, w.verdict, w.by)
		}
	}
	if o.code != 5 {
		t.Fatalf("exit %d", o.code)
	}

	bad := filepath.Join(t.TempDir(), "bad.toml")
	_ = os.WriteFile(bad, []byte("[[rule]]\neffect = \"allow\"\ncomand = \"x\"\n"), 0o644)
	o = tai(t, t.TempDir(), "run", "--policy", bad, "hi")
	if o.code != 2 || !strings.Contains(o.stderr, "bad.toml:3") {
		t.Fatalf("bad policy: exit %d %s", o.code, o.stderr)
	}
}

// An agent that changes its own mode is put through policy; a denied change
// is switched back.
func TestPolicyAgentModeChange(t *testing.T) {
	t.Parallel()
	o := tai(t, t.TempDir(), "run", "-o", "stream-json", "/mode accept-edits")
	fs := frames(t, o.stdout)
	var modes []string
	for _, f := range fs {
		if f["type"] == "mode.changed" {
			modes = append(modes, f["mode"].(map[string]any)["id"].(string))
		}
	}
	last := fs[len(fs)-1]
	if o.code != 5 || strings.Join(modes, ",") != "accept-edits,default" || last["status"] != "denied" {
		t.Fatalf("exit %d modes %v result %v", o.code, modes, last)
	}
	o = tai(t, t.TempDir(), "run", "--allow", "switch_mode:accept-edits", "-o", "json", "/mode accept-edits")
	r := jsonResult(t, o)
	if o.code != 0 || len(r.Permissions) != 1 || r.Permissions[0].DecidedBy != "rule:flag-1" {
		t.Fatalf("exit %d %+v", o.code, r.Permissions)
	}
}

// On a terminal, ask prompts; "always" is remembered for the session, so
// the same request is asked once.
func TestPolicyAskOnTTYRemembersAlways(t *testing.T) {
	t.Parallel()
	scr := writeScript(t, `steps:
  - permission: {title: "deploy", kind: execute, command: "make deploy"}
  - permission: {title: "deploy", kind: execute, command: "make deploy"}
  - permission: {title: "deploy", kind: execute, command: "make deploy"}
`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// stdout is a file (the JSON result); the prompt goes to the
	// controlling terminal.
	run := startOnTTY(ctx, t, nil, "run", "--agent-cmd", builtinWith(scr), "--approve", "ask", "-o", "json", "go")
	prompts, screen := run.answer(t, "[a] allow always", func(int) string { return "a\n" })
	if prompts != 1 {
		t.Fatalf("prompted %d times, want 1:\n%s", prompts, screen)
	}
	r := run.result(t, screen)
	by := []string{}
	for _, p := range r.Permissions {
		if p.Verdict != "allow" {
			t.Errorf("decision %+v", p)
		}
		by = append(by, p.DecidedBy)
	}
	if strings.Join(by, ",") != "human,remembered,remembered" {
		t.Fatalf("decided_by %v", by)
	}
}

// The question takes one key on the terminal, no Enter; a key that is not
// an answer is asked again, saying why.
func TestPolicyAskOneKeyOnTTY(t *testing.T) {
	t.Parallel()
	scr := writeScript(t, "steps:\n  - permission: {title: \"deploy\", kind: execute, command: \"make deploy\"}\n")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := startOnTTY(ctx, t, nil, "run", "--agent-cmd", builtinWith(scr), "--approve", "ask", "-o", "json", "go")
	keys := []string{"x", "y"} // one key, no Enter
	asked, screen := run.answer(t, "deny always", func(n int) string {
		if n < len(keys) {
			return keys[n]
		}
		return ""
	})
	if asked != len(keys) {
		t.Fatalf("asked %d times, want %d; screen:\n%s", asked, len(keys), screen)
	}
	if !strings.Contains(screen, `"x" is not an answer: press y, a, n or d`) {
		t.Errorf("no reason for the second question:\n%s", screen)
	}
	r := run.result(t, screen)
	if len(r.Permissions) != 1 || r.Permissions[0].Verdict != "allow" || r.Permissions[0].DecidedBy != "human" {
		t.Fatalf("permissions %+v\nterminal:\n%s", r.Permissions, screen)
	}
}
