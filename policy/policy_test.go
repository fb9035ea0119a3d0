package policy

import (
	"context"
	"errors"
	"testing"

	"github.com/tai-dev/tai/driver"
)

var (
	acpOpts = []driver.PermissionOption{
		{ID: "allow", Name: "Allow this change", Kind: "allow_once"},
		{ID: "reject", Name: "Skip this change", Kind: "reject_once"},
	}
	fullOpts = []driver.PermissionOption{
		{ID: "proceed_always", Name: "Always", Kind: "allow_always"},
		{ID: "proceed_once", Name: "Once", Kind: "allow_once"},
		{ID: "never", Name: "Never", Kind: "reject_always"},
		{ID: "cancel", Name: "Reject", Kind: "reject_once"},
	}
	codexOpts  = []driver.PermissionOption{{ID: "approved", Name: "Approve"}, {ID: "abort", Name: "Abort"}}
	alwaysOnly = []driver.PermissionOption{{ID: "a", Kind: "allow_always"}, {ID: "r", Kind: "reject_always"}}
)

func TestChooseOption(t *testing.T) {
	tests := []struct {
		name   string
		opts   []driver.PermissionOption
		allow  bool
		wantID string
		wantOK bool
	}{
		{"allow picks allow_once", acpOpts, true, "allow", true},
		{"deny picks reject_once", acpOpts, false, "reject", true},
		{"allow prefers once over always", fullOpts, true, "proceed_once", true},
		{"deny prefers once over always", fullOpts, false, "cancel", true},
		{"always when only always", alwaysOnly, true, "a", true},
		{"reject always when only always", alwaysOnly, false, "r", true},
		{"kind inferred from id: allow", codexOpts, true, "approved", true},
		{"kind inferred from id: abort", codexOpts, false, "abort", true},
		{"no reject offered", []driver.PermissionOption{{ID: "ok", Kind: "allow_once"}}, false, "", false},
		{"nothing offered", nil, true, "", false},
		{"unknown kind never chosen", []driver.PermissionOption{{ID: "x", Name: "frobnicate", Kind: "_custom"}}, true, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ChooseOption(tt.opts, tt.allow)
			if ok != tt.wantOK || got.ID != tt.wantID {
				t.Fatalf("ChooseOption = %q,%v; want %q,%v", got.ID, ok, tt.wantID, tt.wantOK)
			}
		})
	}
}

type fakePrompter struct {
	answers []Answer
	asked   int
}

func (f *fakePrompter) Ask(ctx context.Context, req driver.PermissionRequest) (Answer, error) {
	a := f.answers[f.asked]
	f.asked++
	return a, nil
}

func req(kind, title string, opts []driver.PermissionOption) driver.PermissionRequest {
	return driver.PermissionRequest{ID: "1", ToolCall: driver.ToolCall{ID: "tc", Kind: driver.ToolKind(kind), Title: title}, Options: opts}
}

func TestDecideModes(t *testing.T) {
	tests := []struct {
		name        string
		mode        Mode
		ni          NonInteractive
		kind        string
		wantVerdict string
		wantOption  string
		wantBy      driver.Provenance
		wantErr     error
	}{
		{"approve-all edit", ApproveAll, NonInteractiveDeny, "edit", "allow", "allow", driver.ByDefault, nil},
		{"deny-all read", DenyAll, NonInteractiveDeny, "read", "deny", "reject", driver.ByDefault, nil},
		{"approve-reads read", ApproveReads, NonInteractiveDeny, "read", "allow", "allow", driver.ByDefault, nil},
		{"approve-reads search", ApproveReads, NonInteractiveDeny, "search", "allow", "allow", driver.ByDefault, nil},
		{"approve-reads edit headless deny", ApproveReads, NonInteractiveDeny, "edit", "deny", "reject", driver.ByDefault, nil},
		{"ask headless deny", Ask, NonInteractiveDeny, "read", "deny", "reject", driver.ByDefault, nil},
		{"ask headless fail", Ask, NonInteractiveFail, "execute", "cancelled", "", driver.ByCancel, ErrPromptUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := New(tt.mode, tt.ni, nil)
			d, err := e.Decide(context.Background(), req(tt.kind, "x", acpOpts))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if d.Verdict != tt.wantVerdict || d.OptionID != tt.wantOption || d.DecidedBy != tt.wantBy {
				t.Fatalf("decision = %+v", d)
			}
			if d.Reason == "" {
				t.Fatal("decision without a reason")
			}
		})
	}
}

func TestDecideNeverAnswersCancelledForADenial(t *testing.T) {
	e := New(DenyAll, NonInteractiveDeny, nil)
	d, _ := e.Decide(context.Background(), req("edit", "x", fullOpts))
	if d.Outcome != driver.OutcomeSelected || d.OptionKind != driver.OptionRejectOnce {
		t.Fatalf("denial must select a reject option, got %+v", d)
	}
}

func TestDecideCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, err := New(ApproveAll, NonInteractiveDeny, nil).Decide(ctx, req("edit", "x", acpOpts))
	if err != nil || d.Outcome != driver.OutcomeCancelled || d.Verdict != driver.VerdictCancelled {
		t.Fatalf("got %+v, %v", d, err)
	}
}

func TestHumanAlwaysIsRemembered(t *testing.T) {
	p := &fakePrompter{answers: []Answer{AllowAlways, DenyAlways}}
	e := New(Ask, NonInteractiveDeny, p)
	for i := 0; i < 3; i++ {
		d, err := e.Decide(context.Background(), req("edit", "Write a.txt", acpOpts))
		if err != nil || d.Verdict != driver.VerdictAllow {
			t.Fatalf("round %d: %+v %v", i, d, err)
		}
		want := driver.ByHuman
		if i > 0 {
			want = driver.ByRemembered
		}
		if d.DecidedBy != want {
			t.Fatalf("round %d decided_by %q, want %q", i, d.DecidedBy, want)
		}
	}
	if p.asked != 1 {
		t.Fatalf("asked %d times, want 1", p.asked)
	}
	d, _ := e.Decide(context.Background(), req("execute", "rm -rf build", acpOpts))
	if d.Verdict != driver.VerdictDeny || d.DecidedBy != driver.ByHuman {
		t.Fatalf("deny always: %+v", d)
	}
	d, _ = e.Decide(context.Background(), req("execute", "rm -rf build", acpOpts))
	if d.Verdict != driver.VerdictDeny || d.DecidedBy != driver.ByRemembered {
		t.Fatalf("deny remembered: %+v", d)
	}
}

func TestNoRejectOptionAnswersCancelled(t *testing.T) {
	d, _ := New(DenyAll, NonInteractiveDeny, nil).Decide(context.Background(), req("edit", "x", []driver.PermissionOption{{ID: "ok", Kind: "allow_once"}}))
	if d.Outcome != driver.OutcomeCancelled || d.Verdict != driver.VerdictDeny {
		t.Fatalf("got %+v", d)
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"all": ApproveAll, "reads": ApproveReads, "": ApproveReads, "ask": Ask, "deny": DenyAll, "deny-all": DenyAll} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseMode("sometimes"); err == nil {
		t.Error("ParseMode accepted nonsense")
	}
}
