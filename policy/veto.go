package policy

import (
	"context"

	"github.com/tai-dev/tai/driver"
)

// Veto checks a tool call the agent may run without asking (a CLI that
// allows it by its own settings or mode) against what tai refuses no
// matter what: the built-in floor, deny rules and a remembered "always
// deny". It never asks anyone and never allows: ok is false unless one of
// those denies, and then the decision carries its provenance like
// Decide's. Asks, allow rules and the mode's default are left to the
// agent's own permission request, so nobody is asked twice. It waits for
// nothing, so a cancelled ctx changes nothing: a tool call must not slip
// past the floor because the turn is being interrupted.
func (e *Engine) Veto(_ context.Context, req driver.PermissionRequest) (driver.PermissionDecision, bool) {
	d := Decision{PermissionDecision: driver.PermissionDecision{
		RequestID: req.ID, ToolCallID: req.ToolCall.ID, Title: req.ToolCall.Title, ToolKind: req.ToolCall.Kind,
	}}
	f := e.facts(req)
	d.Key = memoryKey(f)
	deny := func(by driver.Provenance, why string) (driver.PermissionDecision, bool) {
		return e.finish(d, req, f, false, by, why).PermissionDecision, true
	}
	if id, why := e.floorCheck(f); id != "" {
		return deny(driver.ByRule(id), why)
	}
	for _, r := range e.deny {
		if r.match(f) {
			return deny(driver.ByRule(r.ID), r.describe())
		}
	}
	if m, ok := e.mem.Lookup(d.Key); ok && !m.Allow {
		return deny(driver.ByRemembered, e.rememberedReason(m))
	}
	return driver.PermissionDecision{}, false
}
