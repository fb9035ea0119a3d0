package runner

import (
	"context"
	"errors"
	"testing"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/host"
	"github.com/tai-dev/tai/policy"
)

// deciderFunc decides by a function.
type deciderFunc func(context.Context, driver.PermissionRequest) (driver.PermissionDecision, error)

func (f deciderFunc) Decide(ctx context.Context, req driver.PermissionRequest) (driver.PermissionDecision, error) {
	return f(ctx, req)
}

// A decision that cannot be recorded is not granted: while the audit log
// is failing, and when it fails while the policy decides, the answer is a
// denial decided by "audit" (with the agent's reject option).
func TestDeciderDeniesWhatCannotBeRecorded(t *testing.T) {
	full := errors.New("write audit.jsonl: no space left on device")
	req := driver.PermissionRequest{ID: "1", ToolCall: driver.ToolCall{ID: "w1", Kind: driver.KindEdit, Title: "Write a",
		Locations: []driver.Location{{Path: "/ws/a.txt"}}},
		Options: []driver.PermissionOption{{ID: "yes", Kind: driver.OptionAllowOnce}, {ID: "no", Kind: driver.OptionRejectOnce}}}
	for _, tc := range []struct {
		name        string
		failBefore  bool // the log has failed before the request
		failDuring  bool // it fails while the policy decides
		wantVerdict string
		wantBy      string
		wantAsked   bool
	}{
		{"recorded", false, false, driver.VerdictAllow, policy.ByDefault, true},
		{"failed before", true, false, driver.VerdictDeny, audit.DecidedByAudit, false},
		{"failed while deciding", false, true, driver.VerdictDeny, audit.DecidedByAudit, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var failed error
			if tc.failBefore {
				failed = full
			}
			asked := false
			eng := policy.New(policy.ApproveAll, policy.NonInteractiveDeny, nil)
			inner := deciderFunc(func(ctx context.Context, r driver.PermissionRequest) (driver.PermissionDecision, error) {
				asked = true
				if tc.failDuring {
					failed = full
				}
				return eng.Decide(ctx, r)
			})
			g := host.NewGrants("/ws")
			d := decider{inner: inner, onFail: func(error) {}, grants: g, recorded: func() error { return failed }}
			dec, err := d.Decide(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if dec.Verdict != tc.wantVerdict || dec.DecidedBy != tc.wantBy || asked != tc.wantAsked {
				t.Fatalf("decision %+v (asked %v), want %s by %s", dec, asked, tc.wantVerdict, tc.wantBy)
			}
			if dec.Verdict == driver.VerdictDeny && (dec.OptionID != "no" || dec.Reason == "") {
				t.Fatalf("denial %+v", dec)
			}
		})
	}
}
