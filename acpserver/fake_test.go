package acpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/runner"
)

// fakeSession is a live session without an agent behind it.
type fakeSession struct {
	id     string
	exited chan struct{}
}

func (f *fakeSession) ID() string { return f.id }
func (f *fakeSession) Capabilities() driver.Capabilities {
	return driver.Capabilities{LoadSession: true}
}
func (f *fakeSession) Cancel(context.Context, error) error    { return nil }
func (f *fakeSession) Close(context.Context) error            { return nil }
func (f *fakeSession) CurrentMode() string                    { return "default" }
func (f *fakeSession) SetModel(context.Context, string) error { return driver.ErrUnsupported }
func (f *fakeSession) Exited() <-chan struct{}                { return f.exited }
func (f *fakeSession) Pid() int                               { return 0 }
func (f *fakeSession) SetMode(_ context.Context, m string) error {
	if m != "default" && m != "plan" {
		return fmt.Errorf("%w: mode %q", driver.ErrBadValue, m)
	}
	return nil
}
func (f *fakeSession) SetConfigOption(context.Context, string, string) error {
	return driver.ErrUnsupported
}
func (f *fakeSession) Prompt(context.Context, []driver.Content) (driver.TurnResult, error) {
	return driver.TurnResult{}, errors.New("the fake run plays turns itself")
}

// fakeControl is the run's handle on a fake session.
type fakeControl struct{ s *fakeSession }

func (c fakeControl) Session() runner.Session { return c.s }
func (c fakeControl) SetMode(ctx context.Context, m string) error {
	return c.s.SetMode(ctx, m)
}
func (c fakeControl) SetConfigOption(ctx context.Context, id, v string) error {
	return c.s.SetConfigOption(ctx, id, v)
}

// fakeRun plays each turn as: a message, a tool call with a diff, an ask
// to the editor, the turn's end (cancelled if interrupted while asking).
func fakeRun(ctx context.Context, spec Spec, h Hooks) error {
	if spec.ResumeID == "missing" {
		return fmt.Errorf("resume: %w", driver.ErrNoSession)
	}
	id := "fake-1"
	if spec.ResumeID != "" {
		id = spec.ResumeID
	}
	s := &fakeSession{id: id, exited: make(chan struct{})}
	h.Sink.Emit(driver.Event{Type: driver.EventSessionStarted, Session: id, Started: &driver.SessionStarted{
		Driver: "acp", Cwd: spec.Cwd, Modes: []driver.ModeInfo{{ID: "default"}, {ID: "plan"}}, CurrentMode: "default",
		Capabilities: s.Capabilities()}})
	h.OnSession(fakeControl{s})
	old := ""
	for n := 1; ; n++ {
		var p []driver.Content
		select {
		case p0, ok := <-h.Turns:
			if !ok {
				return nil
			}
			p = p0
		case <-ctx.Done():
			return ctx.Err()
		}
		h.Sink.Emit(driver.Event{Type: driver.EventMessage, Message: &driver.MessageChunk{Role: driver.RoleAgent, Text: p[0].Text}})
		h.Sink.Emit(driver.Event{Type: driver.EventRaw, Raw: &driver.RawUpdate{Kind: "future", Data: json.RawMessage(`{"sessionUpdate":"future","n":1}`)}})
		tc := driver.ToolCall{ID: fmt.Sprint("t", n), Title: "Write f.txt", Kind: driver.KindEdit, Status: "pending",
			Locations: []driver.Location{{Path: "/w/f.txt", Line: 1}},
			Content:   []driver.ToolContent{{Type: "diff", Path: "/w/f.txt", OldText: &old, NewText: "new"}}}
		h.Sink.Emit(driver.Event{Type: driver.EventToolCall, ToolCall: &tc})
		actx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-h.Interrupts:
				cancel()
			case <-actx.Done():
			}
		}()
		ans, err := h.Prompter.Ask(actx, driver.PermissionRequest{ID: "r", ToolCall: tc, Options: []driver.PermissionOption{
			{ID: "a", Name: "Allow", Kind: driver.OptionAllowOnce}, {ID: "r", Name: "Reject", Kind: driver.OptionRejectOnce}}})
		stop := driver.StopEndTurn
		if actx.Err() != nil {
			stop = driver.StopCancelled
		}
		cancel()
		tc.Status = "completed"
		if err != nil || ans == policy.DenyOnce || ans == policy.DenyAlways {
			tc.Status = "failed"
		}
		h.Sink.Emit(driver.Event{Type: driver.EventToolCall, ToolCall: &tc})
		h.Sink.Emit(driver.Event{Type: driver.EventTurnEnded, Turn: &driver.TurnEnded{StopReason: stop}})
	}
}
