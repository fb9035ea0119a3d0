package policy

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/tai-dev/tai/driver"
)

// TestVeto: only what tai refuses outright (the floor, deny rules, a
// remembered "always deny") vetoes; asks and allows are left to the
// agent's own request, and nobody is ever asked.
func TestVeto(t *testing.T) {
	ws := t.TempDir()
	tool := func(kind driver.ToolKind, name string, input map[string]string) driver.PermissionRequest {
		raw, _ := json.Marshal(input)
		tc := driver.ToolCall{ID: "tu1", Kind: kind, Name: name, Title: name, RawInput: raw}
		if p := input["file_path"]; p != "" {
			tc.Locations = []driver.Location{{Path: p}}
		}
		return driver.PermissionRequest{ID: "tu1", ToolCall: tc, Options: fullOpts}
	}
	denyRule, err := ParseRuleFlag(EffectDeny, "execute:rm *")
	if err != nil {
		t.Fatal(err)
	}
	allowRule, err := ParseRuleFlag(EffectAllow, "edit")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		mode     Mode
		rules    []Rule
		remember bool
		req      driver.PermissionRequest
		veto     bool
		by       driver.Provenance
	}{
		{"floor: write outside the workspace", ApproveAll, nil, false,
			tool(driver.KindEdit, "Write", map[string]string{"file_path": "/etc/passwd"}), true, driver.ByRule("floor-write-outside")},
		{"deny rule", ApproveAll, []Rule{denyRule}, false,
			tool(driver.KindExecute, "Bash", map[string]string{"command": "rm notes.txt"}), true, driver.ByRule("flag-1")},
		{"remembered always deny", ApproveAll, nil, true,
			tool(driver.KindExecute, "Bash", map[string]string{"command": "make clean"}), true, driver.ByRemembered},
		{"ask is left to the agent", Ask, nil, false,
			tool(driver.KindExecute, "Bash", map[string]string{"command": "make"}), false, ""},
		{"deny-all's default is left to the agent", DenyAll, nil, false,
			tool(driver.KindRead, "Read", map[string]string{"file_path": ws + "/a.go"}), false, ""},
		{"allow rule", Ask, []Rule{allowRule}, false,
			tool(driver.KindEdit, "Write", map[string]string{"file_path": ws + "/a.go"}), false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &fakePrompter{}
			cfg := Config{Mode: tt.mode, Rules: append([]Rule(nil), tt.rules...)}
			for i := range cfg.Rules {
				cfg.Rules[i].ID = "flag-" + itoa(i+1)
			}
			e, err := NewEngine(cfg, Options{Workspace: ws, Prompter: p, Home: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if tt.remember {
				if err := e.Memory().Remember(e.MemoryKey(tt.req), Remembered{Allow: false, At: time.Unix(0, 0)}); err != nil {
					t.Fatal(err)
				}
			}
			d, veto := e.Veto(context.Background(), tt.req)
			if veto != tt.veto || d.DecidedBy != tt.by {
				t.Fatalf("Veto = %+v, %v; want veto %v by %q", d, veto, tt.veto, tt.by)
			}
			if veto && (d.Verdict != driver.VerdictDeny || d.Outcome != driver.OutcomeSelected || d.OptionID != "cancel" || d.Reason == "") {
				t.Errorf("a veto must be a selected reject with a reason: %+v", d)
			}
			if p.asked != 0 {
				t.Errorf("Veto asked the human %d times", p.asked)
			}
		})
	}
	if d, veto := New(ApproveAll, NonInteractiveDeny, nil).Veto(cancelledCtx(), tool(driver.KindExecute, "Bash", map[string]string{"command": "rm -rf /"})); !veto || d.DecidedBy != driver.ByRule("floor-rm-root") {
		t.Errorf("with the turn cancelled: %+v, %v; the floor must still hold", d, veto)
	}
}

func cancelledCtx() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
