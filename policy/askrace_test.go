package policy

import (
	"context"
	"strings"
	"testing"

	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/driver"
)

// chanPrompter answers what is sent on its channel, and reports how its
// question ended.
type chanPrompter struct {
	answer chan Answer
	err    error
	asked  chan struct{}
	ended  chan error // the cause it saw when withdrawn
}

func newChanPrompter() *chanPrompter {
	return &chanPrompter{answer: make(chan Answer), asked: make(chan struct{}, 1), ended: make(chan error, 1)}
}

func (c *chanPrompter) Ask(ctx context.Context, req driver.PermissionRequest) (Answer, error) {
	c.asked <- struct{}{}
	if c.err != nil {
		return DenyOnce, c.err
	}
	select {
	case a := <-c.answer:
		return a, nil
	case <-ctx.Done():
		c.ended <- context.Cause(ctx)
		return DenyOnce, ctx.Err()
	}
}

// The engine records the channel: decided_by human, via dashboard.
func TestEngineRecordsVia(t *testing.T) {
	dash := newChanPrompter()
	term := newChanPrompter()
	e := New(Ask, NonInteractiveDeny, Race(Channel(ask.ViaTerminal, term), Channel(ask.ViaDashboard, dash)))
	done := decideWrite(t, e)
	<-term.asked
	<-dash.asked
	dash.answer <- AllowOnce
	d := <-done
	if d.DecidedBy != driver.ByHuman || d.Via != string(ask.ViaDashboard) || d.Verdict != driver.VerdictAllow || !strings.Contains(d.Reason, "via dashboard") {
		t.Fatalf("decision %+v", d)
	}
}

// The answerer (a cap-speak parent) raced against the feed: the parent's
// answer is the answerer's, the feed's a human's.
func TestAnswererRace(t *testing.T) {
	for _, tc := range []struct {
		name    string
		parent  bool
		wantBy  driver.Provenance
		wantVia ask.Via
	}{
		{"parent answers", true, driver.ByAnswerer, ""},
		{"dashboard answers", false, driver.ByHuman, ask.ViaDashboard},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent, dash := newChanPrompter(), newChanPrompter()
			e, err := NewEngine(Config{Mode: Ask, NonInteractive: NonInteractiveDeny}, Options{Answerer: Race(Channel(ask.ViaParent, parent), Channel(ask.ViaDashboard, dash))})
			if err != nil {
				t.Fatal(err)
			}
			done := decideWrite(t, e)
			<-parent.asked
			<-dash.asked
			if tc.parent {
				parent.answer <- AllowOnce
			} else {
				dash.answer <- AllowOnce
			}
			d := <-done
			if d.DecidedBy != tc.wantBy || ask.Via(d.Via) != tc.wantVia || d.Verdict != driver.VerdictAllow {
				t.Fatalf("decision %+v", d)
			}
		})
	}
}

// relayingEditor is tai acp's editor: its answer may carry the decision of
// a tai in front of it.
type relayingEditor struct {
	*chanPrompter
	rel *Relayed
}

func (r relayingEditor) AskRelayed(ctx context.Context, req driver.PermissionRequest) (Answer, *Relayed, error) {
	a, err := r.Ask(ctx, req)
	if err != nil {
		return a, nil, err
	}
	return a, r.rel, nil
}

func (relayingEditor) Where() string { return "in the editor" }

// Under tai acp the editor and the feed race: the editor's answer keeps
// its relayed provenance and its place, via editor; the feed's is a
// human's via the dashboard.
func TestEditorRace(t *testing.T) {
	for _, tc := range []struct {
		name       string
		editor     bool
		rel        *Relayed
		wantBy     driver.Provenance
		wantVia    ask.Via
		wantReason string
	}{
		{"editor answers", true, nil, driver.ByHuman, ask.ViaEditor, "answered in the editor"},
		{"a tai editor relays", true, &Relayed{By: "rule:r1", Reason: "rule r1 allows"}, ByRelayed("rule:r1"), ask.ViaEditor, "decided in the editor by rule:r1"},
		{"dashboard answers", false, nil, driver.ByHuman, ask.ViaDashboard, "answered via dashboard"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ed := relayingEditor{newChanPrompter(), tc.rel}
			dash := newChanPrompter()
			e := New(Ask, NonInteractiveDeny, Race(Channel(ask.ViaEditor, ed), Channel(ask.ViaDashboard, dash)))
			done := decideWrite(t, e)
			<-ed.asked
			<-dash.asked
			if tc.editor {
				ed.answer <- AllowOnce
			} else {
				dash.answer <- AllowOnce
			}
			d := <-done
			if d.DecidedBy != tc.wantBy || ask.Via(d.Via) != tc.wantVia || d.Verdict != driver.VerdictAllow || !strings.Contains(d.Reason, tc.wantReason) {
				t.Fatalf("decision %+v", d)
			}
		})
	}
}

// decideWrite asks e about a write ("Write a", allow once or reject once)
// in the background: the test answers through its prompters, then reads
// the decision.
func decideWrite(t *testing.T, e *Engine) <-chan driver.PermissionDecision {
	done := make(chan driver.PermissionDecision, 1)
	go func() {
		d, err := e.Decide(context.Background(), driver.PermissionRequest{ID: "1", Session: "s",
			ToolCall: driver.ToolCall{ID: "t", Title: "Write a", Kind: "edit"},
			Options:  []driver.PermissionOption{{ID: "y", Kind: driver.OptionAllowOnce}, {ID: "n", Kind: driver.OptionRejectOnce}}})
		if err != nil {
			t.Error(err)
		}
		done <- d
	}()
	return done
}
