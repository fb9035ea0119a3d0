package driver

import (
	"context"
	"errors"
)

// AskPermission is the permission round trip every driver makes: it emits
// req as permission.asked, asks dec, and emits the decision as
// permission.decided. When no decision comes (dec fails, or ctx ends
// first) the decision is a cancellation, decided by ByDriver unless the
// decider said who, for the reason reason(err) gives (err is ctx's cause
// when dec did not fail; reason nil records the error's text). The ids,
// title and kind a decision leaves empty are req's, and so is
// Unrequested. dec's error is
// returned with the decision for the driver to log.
func AskPermission(ctx context.Context, dec PermissionDecider, emit func(Event), req PermissionRequest, reason func(error) string) (PermissionDecision, error) {
	emit(Event{Type: EventPermissionAsked, Permission: &req})
	d, err := dec.Decide(ctx, req)
	if err != nil || ctx.Err() != nil {
		why := err
		if ctx.Err() != nil && (why == nil || errors.Is(why, context.Canceled) || errors.Is(why, context.DeadlineExceeded)) {
			// Withdrawn: what withdrew it says why (a fleet's park, an
			// interrupt), where its channels' bare context error does not.
			why = context.Cause(ctx)
		}
		by := d.DecidedBy
		if by == "" {
			by = ByDriver
		}
		d = PermissionDecision{Outcome: OutcomeCancelled, Verdict: VerdictCancelled, DecidedBy: by}
		if reason != nil {
			d.Reason = reason(why)
		} else {
			d.Reason = why.Error()
		}
	}
	fillDecision(&d, req)
	emit(Event{Type: EventPermissionDecided, Decision: &d})
	return d, err
}

// fillDecision gives d what it leaves empty from the request it answers.
func fillDecision(d *PermissionDecision, req PermissionRequest) {
	if d.RequestID == "" {
		d.RequestID = req.ID
	}
	if d.ToolCallID == "" {
		d.ToolCallID = req.ToolCall.ID
	}
	if d.Title == "" {
		d.Title = req.ToolCall.Title
	}
	if d.ToolKind == "" {
		d.ToolKind = req.ToolCall.Kind
	}
	if req.Unrequested {
		d.Unrequested = true
	}
}
