package policy

import (
	"context"
	"strings"
	"testing"

	"github.com/tai-dev/tai/driver"
)

// relayPrompter answers as a tai in front would: with who decided there.
type relayPrompter struct {
	ans Answer
	rel *Relayed
}

func (r relayPrompter) Ask(ctx context.Context, req driver.PermissionRequest) (Answer, error) {
	return r.ans, nil
}

func (r relayPrompter) AskRelayed(context.Context, driver.PermissionRequest) (Answer, *Relayed, error) {
	return r.ans, r.rel, nil
}

func (relayPrompter) Where() string { return "in the editor" }

func TestRelayedProvenance(t *testing.T) {
	for _, tc := range []struct {
		name    string
		p       relayPrompter
		verdict string
		by      driver.Provenance
		reason  string
	}{
		{"a human in the editor", relayPrompter{ans: AllowOnce}, driver.VerdictAllow, driver.ByHuman, "answered in the editor"},
		{"the outer tai's rule", relayPrompter{ans: DenyOnce, rel: &Relayed{By: "rule:flag-1", Reason: "--deny 'edit:**'"}},
			driver.VerdictDeny, "via:rule:flag-1", "decided in the editor by rule:flag-1: --deny 'edit:**'"},
		{"an outer always is not kept here", relayPrompter{ans: AllowAlways, rel: &Relayed{By: "human", Reason: "r"}},
			driver.VerdictAllow, "via:human", "decided in the editor by human"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := NewEngine(Config{Mode: Ask}, Options{Workspace: t.TempDir(), Home: t.TempDir(), Prompter: tc.p})
			if err != nil {
				t.Fatal(err)
			}
			d, err := e.Decide(context.Background(), req(string(driver.KindEdit), "Write f", acpOpts))
			if err != nil {
				t.Fatal(err)
			}
			if d.Verdict != tc.verdict || d.DecidedBy != tc.by || !strings.Contains(d.Reason, tc.reason) {
				t.Errorf("decision %s by %s (%q); want %s by %s (%q)", d.Verdict, d.DecidedBy, d.Reason, tc.verdict, tc.by, tc.reason)
			}
			if tc.p.rel != nil {
				again, _ := e.Decide(context.Background(), req(string(driver.KindEdit), "Write f", acpOpts))
				if again.DecidedBy != tc.by {
					t.Errorf("asked again: decided by %s; a relayed answer is not remembered here", again.DecidedBy)
				}
			}
		})
	}
}
