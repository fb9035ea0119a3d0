package driver

import (
	"context"
	"errors"
	"testing"
)

type deciderFunc func(ctx context.Context, req PermissionRequest) (PermissionDecision, error)

func (f deciderFunc) Decide(ctx context.Context, req PermissionRequest) (PermissionDecision, error) {
	return f(ctx, req)
}

func TestAskPermission(t *testing.T) {
	req := PermissionRequest{ID: "r1", ToolCall: ToolCall{ID: "tc1", Title: "Write a", Kind: KindEdit}}
	allow := PermissionDecision{Outcome: OutcomeSelected, OptionID: "yes", Verdict: VerdictAllow, DecidedBy: ByRule("edits")}
	boom := errors.New("boom")
	tests := []struct {
		name    string
		decide  deciderFunc
		cancel  bool // ctx ends before the decision returns
		reason  func(error) string
		want    PermissionDecision
		wantErr error
	}{
		{"decided, ids filled", func(context.Context, PermissionRequest) (PermissionDecision, error) { return allow, nil }, false, nil,
			PermissionDecision{RequestID: "r1", ToolCallID: "tc1", Title: "Write a", ToolKind: KindEdit, Outcome: OutcomeSelected,
				OptionID: "yes", Verdict: VerdictAllow, DecidedBy: ByRule("edits")}, nil},
		{"the decider's ids kept", func(context.Context, PermissionRequest) (PermissionDecision, error) {
			d := allow
			d.RequestID, d.ToolCallID = "other", "tc-other"
			return d, nil
		}, false, nil,
			PermissionDecision{RequestID: "other", ToolCallID: "tc-other", Title: "Write a", ToolKind: KindEdit, Outcome: OutcomeSelected,
				OptionID: "yes", Verdict: VerdictAllow, DecidedBy: ByRule("edits")}, nil},
		{"error: cancelled by the driver with the error's text", func(context.Context, PermissionRequest) (PermissionDecision, error) {
			return allow, boom
		}, false, nil,
			PermissionDecision{RequestID: "r1", ToolCallID: "tc1", Title: "Write a", ToolKind: KindEdit, Outcome: OutcomeCancelled,
				Verdict: VerdictCancelled, DecidedBy: ByRule("edits"), Reason: "boom"}, boom},
		{"error with no provenance: tai", func(context.Context, PermissionRequest) (PermissionDecision, error) {
			return PermissionDecision{}, boom
		}, false, func(error) string { return "the turn was cancelled" },
			PermissionDecision{RequestID: "r1", ToolCallID: "tc1", Title: "Write a", ToolKind: KindEdit, Outcome: OutcomeCancelled,
				Verdict: VerdictCancelled, DecidedBy: ByDriver, Reason: "the turn was cancelled"}, boom},
		{"ctx ended: cancelled even if the decider answered", func(context.Context, PermissionRequest) (PermissionDecision, error) {
			return PermissionDecision{Outcome: OutcomeSelected, OptionID: "yes", Verdict: VerdictAllow}, nil
		}, true, nil,
			PermissionDecision{RequestID: "r1", ToolCallID: "tc1", Title: "Write a", ToolKind: KindEdit, Outcome: OutcomeCancelled,
				Verdict: VerdictCancelled, DecidedBy: ByDriver, Reason: "context canceled"}, nil},
		{"unrequested: marked so", func(context.Context, PermissionRequest) (PermissionDecision, error) {
			return PermissionDecision{Outcome: OutcomeSelected, OptionID: "no", Verdict: VerdictDeny, DecidedBy: ByDefault}, nil
		}, false, nil,
			PermissionDecision{RequestID: "r1", ToolCallID: "tc1", Title: "Write a", ToolKind: KindEdit, Outcome: OutcomeSelected,
				OptionID: "no", Verdict: VerdictDeny, DecidedBy: ByDefault, Unrequested: true}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel {
				cancel()
			}
			var evs []Event
			r := req
			r.Unrequested = tt.want.Unrequested
			got, err := AskPermission(ctx, tt.decide, func(e Event) { evs = append(evs, e) }, r, tt.reason)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Fatalf("decision\n got %+v\nwant %+v", got, tt.want)
			}
			if len(evs) != 2 || evs[0].Type != EventPermissionAsked || evs[0].Permission.ID != "r1" ||
				evs[1].Type != EventPermissionDecided || *evs[1].Decision != got {
				t.Fatalf("events %+v, want asked then the decision", evs)
			}
		})
	}
}
