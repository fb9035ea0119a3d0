package runner

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
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
		failEntry   bool // it fails on the decision's own entry
		wantVerdict string
		wantBy      driver.Provenance
		wantAsked   bool
	}{
		{"recorded", false, false, false, driver.VerdictAllow, driver.ByDefault, true},
		{"failed before", true, false, false, driver.VerdictDeny, driver.ByAudit, false},
		{"failed while deciding", false, true, false, driver.VerdictDeny, driver.ByAudit, true},
		{"failed on its entry", false, false, true, driver.VerdictDeny, driver.ByAudit, true},
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
			var entries []driver.PermissionDecision
			record := func(_ driver.PermissionRequest, dec driver.PermissionDecision) error {
				if tc.failEntry {
					failed = full // sticky, like audit.Log's
				}
				if failed != nil {
					return failed
				}
				entries = append(entries, dec)
				return nil
			}
			d := decider{inner: inner, onFail: func(error) {}, grants: g, recorded: func() error { return failed }, record: record}
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
			// An allow is given only once its entry is written.
			if dec.Verdict == driver.VerdictAllow && (len(entries) != 1 || entries[0] != dec) {
				t.Fatalf("allowed with entries %+v", entries)
			}
		})
	}
}

// An allow written before it was answered is not written again by its
// event; a decision the driver changed meanwhile is.
func TestAuditDecisionWrittenOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	log, err := audit.Open(path, audit.Options{Run: "r"})
	if err != nil {
		t.Fatal(err)
	}
	a := &auditSink{log: log}
	allow := driver.PermissionDecision{RequestID: "1", Verdict: driver.VerdictAllow, DecidedBy: "default"}
	if err := a.decided("s", allow); err != nil {
		t.Fatal(err)
	}
	a.Emit(driver.Event{Type: driver.EventPermissionDecided, Session: "s", Decision: &allow})
	second := driver.PermissionDecision{RequestID: "2", Verdict: driver.VerdictAllow, DecidedBy: "default"}
	if err := a.decided("s", second); err != nil {
		t.Fatal(err)
	}
	cancelled := second
	cancelled.Verdict, cancelled.Outcome = driver.VerdictCancelled, driver.OutcomeCancelled
	a.Emit(driver.Event{Type: driver.EventPermissionDecided, Session: "s", Decision: &cancelled})
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e struct {
			Kind string `json:"kind"`
			Data struct {
				RequestID string `json:"request_id"`
				Decision  string `json:"decision"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		got = append(got, e.Data.RequestID+":"+e.Data.Decision)
	}
	if strings.Join(got, ",") != "1:allow,2:allow,2:cancelled" {
		t.Fatalf("entries %v", got)
	}
}

// The drivers' side channels (a PTY agent's last screen, a CLI's Stop
// hook) are first-class events; the audit log keeps them exactly as it did
// when they were raw events, byte for byte.
func TestAuditSideChannels(t *testing.T) {
	tests := []struct {
		name     string
		ev       driver.Event
		kind     string
		wantData string
	}{
		{"final screen with scrollback",
			driver.Event{Type: driver.EventScreenFinal, FinalScreen: &driver.FinalScreen{Cols: 80, Rows: 24, Cursor: []int{3, 4}, Text: "hi",
				Scrollback: []string{"a", "b"}, ScrollbackDropped: 2}},
			audit.KindScreenFinal,
			`{"alt_screen":false,"cols":80,"cursor":[3,4],"rows":24,"scrollback":["a","b"],"scrollback_dropped":2,"text":"hi"}`},
		{"final screen without scrollback",
			driver.Event{Type: driver.EventScreenFinal, FinalScreen: &driver.FinalScreen{Cols: 80, Rows: 24, Cursor: []int{0, 0}, AltScreen: true,
				Scrollback: []string{}}},
			audit.KindScreenFinal,
			`{"alt_screen":true,"cols":80,"cursor":[0,0],"rows":24,"text":""}`},
		{"stop hook",
			driver.Event{Type: driver.EventAgentStop, AgentStop: &driver.AgentStop{SessionID: "s1", TranscriptPath: "/t.jsonl", Cwd: "/w",
				PermissionMode: "default"}},
			audit.KindAgentStop,
			`{"cwd":"/w","permission_mode":"default","session_id":"s1","stop_hook_active":false,"transcript_path":"/t.jsonl"}`},
		{"a raw update is not recorded",
			driver.Event{Type: driver.EventRaw, Raw: &driver.RawUpdate{Kind: "pty.final_screen", Data: json.RawMessage(`{}`)}},
			"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a.jsonl")
			log, err := audit.Open(path, audit.Options{Run: "r"})
			if err != nil {
				t.Fatal(err)
			}
			tt.ev.Session = "s"
			(&auditSink{log: log}).Emit(tt.ev)
			if err := log.Close(); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(path)
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				if line == "" {
					continue
				}
				var e struct {
					Kind string          `json:"kind"`
					Data json.RawMessage `json:"data"`
				}
				if err := json.Unmarshal([]byte(line), &e); err != nil {
					t.Fatal(err)
				}
				if e.Kind == audit.KindScreenFinal || e.Kind == audit.KindAgentStop {
					got = append(got, e.Kind+" "+string(e.Data))
				}
			}
			var want []string
			if tt.kind != "" {
				want = []string{tt.kind + " " + tt.wantData}
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("entries\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}
