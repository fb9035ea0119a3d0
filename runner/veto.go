package runner

import (
	"context"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/driver/streamjson"
	"github.com/tai-dev/tai/policy"
)

// Veto passes a driver's no-prompt check (streamjson.Vetoer: the floor and
// deny rules, for tool calls the agent runs without asking) through to the
// policy, when the policy offers one.
func (d decider) Veto(ctx context.Context, req driver.PermissionRequest) (driver.PermissionDecision, bool) {
	v, ok := d.inner.(interface {
		Veto(context.Context, driver.PermissionRequest) (driver.PermissionDecision, bool)
	})
	if !ok {
		return driver.PermissionDecision{}, false
	}
	return v.Veto(ctx, req)
}

// The driver finds the check by a type assertion: keep both sides in step.
var (
	_ streamjson.Vetoer = decider{}
	_ streamjson.Vetoer = (*policy.Engine)(nil)
)
