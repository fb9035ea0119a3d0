package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/internal/lazyre"
)

// Mode switches are policy too. A switch_mode request (an agent asking to
// leave plan mode, say; its allow options are often mode ids) is decided
// like any request, its rule pattern being the target mode; and a mode
// change the agent made without asking can be checked afterwards with
// CheckModeChange. Leaving plan mode asks by default (approve-reads, ask),
// is allowed by approve-all and yolo, denied by deny-all; entering a plan
// mode is allowed by default, since it only restricts the agent.

// expected is a mode change tai knows the reason for.
type expected struct {
	by     driver.Provenance
	reason string
}

func isPlanLike(mode string) bool { return strings.Contains(strings.ToLower(mode), "plan") }

var exitPlanName = lazyre.New(`(?i)exit.?plan`)

// bypassLike are modes that turn the agent's own checks off; policy never
// picks one when the agent offers a choice, unless configured to.
func bypassLike(o driver.PermissionOption) bool {
	s := strings.ToLower(o.ID + " " + o.Name)
	for _, w := range []string{"bypass", "yolo", "dangerous", "full-access", "full_access", "skip-permissions", "skip_permissions"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// switchFacts fills in the target mode and whether the request leaves plan
// mode.
func (e *Engine) switchFacts(req driver.PermissionRequest, raw map[string]any, f *facts) {
	target := str(raw, "to", "mode", "modeId", "mode_id", "target", "targetMode", "target_mode", "newMode", "new_mode")
	from := str(raw, "from", "current", "currentMode", "current_mode")
	if from == "" {
		from = e.sessionMode(req.Session)
	}
	stayInPlan := slices.ContainsFunc(req.Options, func(o driver.PermissionOption) bool {
		return isPlanLike(o.ID) && strings.HasPrefix(OptionKind(o), "reject")
	})
	f.planExit = !isPlanLike(target) &&
		(isPlanLike(from) || stayInPlan || exitPlanName().MatchString(req.ToolCall.Name+" "+req.ToolCall.Title))
	f.target = target
	switch {
	case f.planExit && e.cfg.ModeAfterPlan != "":
		f.mode = e.cfg.ModeAfterPlan
	case target != "":
		f.mode = target
	default:
		if o, ok := e.switchOption(req, f); ok {
			f.mode = o.ID
		}
	}
}

// switchOption is the option that allows a switch_mode request: the
// configured mode_after_plan when leaving plan mode and offered, else the
// requested target, else the first allow option that is not a bypass mode.
func (e *Engine) switchOption(req driver.PermissionRequest, f *facts) (driver.PermissionOption, bool) {
	offered := func(id string) (driver.PermissionOption, bool) {
		for _, o := range req.Options {
			if id != "" && o.ID == id && strings.HasPrefix(OptionKind(o), "allow") {
				return o, true
			}
		}
		return driver.PermissionOption{}, false
	}
	if f.planExit && e.cfg.ModeAfterPlan != "" {
		if o, ok := offered(e.cfg.ModeAfterPlan); ok {
			return o, true
		}
	}
	if o, ok := offered(f.target); ok {
		return o, true
	}
	safe := slices.DeleteFunc(slices.Clone(req.Options), bypassLike)
	if o, ok := ChooseOption(safe, true); ok {
		return o, true
	}
	return ChooseOption(req.Options, true)
}

// approved records an allowed switch_mode: the mode changes it explains,
// and the mode the runner should move to afterwards.
func (e *Engine) approved(req driver.PermissionRequest, f *facts, d *Decision) {
	if f.planExit && e.cfg.ModeAfterPlan != "" && d.OptionID != e.cfg.ModeAfterPlan {
		d.NextMode = e.cfg.ModeAfterPlan
	}
	if f.synthetic {
		return
	}
	why := expected{by: d.DecidedBy, reason: fmt.Sprintf("follows the approved request %s (%s)", req.ID, d.Reason)}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, m := range []string{d.OptionID, f.mode, f.target, d.NextMode} {
		if m != "" {
			e.expectLocked(req.Session, m, why)
		}
	}
}

// ModeAfterApproval returns the mode the runner should move the session to
// after the agent acted on an approved request, or "". It is set for an
// approved exit from plan mode when mode_after_plan is configured and the
// chosen option does not already name that mode. Decision.NextMode carries
// the same.
func (e *Engine) ModeAfterApproval(req driver.PermissionRequest, d driver.PermissionDecision) string {
	if d.Verdict != driver.VerdictAllow || normKind(string(req.ToolCall.Kind)) != kindSwitchMode || e.cfg.ModeAfterPlan == "" {
		return ""
	}
	f := e.facts(req)
	if f.planExit && d.OptionID != e.cfg.ModeAfterPlan {
		return e.cfg.ModeAfterPlan
	}
	return ""
}

// DefaultMode is the policy's starting mode for sessions ("" = none); tai
// run --mode overrides it.
func (e *Engine) DefaultMode() string { return e.cfg.DefaultMode }

// ObserveMode tells the engine a session's current mode: the runner calls
// it with session.started's current mode and on every mode change, so
// that leaving plan mode is recognized.
func (e *Engine) ObserveMode(session, mode string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.modes[session] = mode
}

func (e *Engine) sessionMode(session string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.modes[session]
}

// ExpectMode tells the engine that tai itself is moving the session to mode
// (--mode, default_mode, NextMode, reverting a denied change), so that
// CheckModeChange lets the change through.
func (e *Engine) ExpectMode(session, mode string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.expectLocked(session, mode, expected{by: driver.ByDefault, reason: "tai set this mode"})
}

func (e *Engine) expectLocked(session, mode string, why expected) {
	m := e.expected[session]
	if m == nil {
		m = map[string]expected{}
		e.expected[session] = m
	}
	m[mode] = why
}

// CheckModeChange decides a mode change the session reported (mode.changed)
// that tai did not make and no approved switch_mode request explains: the
// agent changed its own mode. It is decided like a switch_mode request to
// mode to (rules, memory, the human, the mode default); on a denial the
// runner should switch the session back to from (after ExpectMode(session,
// from)). The decision's option ids are "allow" and "reject". It records to
// as the session's current mode either way.
func (e *Engine) CheckModeChange(ctx context.Context, session, from, to string) (ModeDecision, error) {
	e.mu.Lock()
	e.modes[session] = to
	exp, ok := e.expected[session][to]
	if ok {
		delete(e.expected[session], to)
	}
	e.mu.Unlock()
	d := driver.PermissionDecision{RequestID: "mode-change", ToolKind: driver.KindSwitchMode,
		Title: fmt.Sprintf("switch from mode %s to %s", from, to)}
	explained := func(by driver.Provenance, reason string) (ModeDecision, error) {
		d.Outcome, d.OptionID, d.OptionKind, d.Verdict = driver.OutcomeSelected, "allow", driver.OptionAllowOnce, driver.VerdictAllow
		d.DecidedBy, d.Reason = by, reason
		return ModeDecision{PermissionDecision: d, Explained: true}, nil
	}
	switch {
	case from == to:
		return explained(driver.ByDefault, "the mode did not change")
	case ok:
		return explained(exp.by, exp.reason)
	}
	raw, _ := json.Marshal(map[string]string{"from": from, "to": to})
	req := driver.PermissionRequest{
		ID: "mode-change", Session: session,
		ToolCall: driver.ToolCall{ID: "mode-change", Kind: driver.KindSwitchMode, Name: "mode_change", RawInput: raw,
			Title: fmt.Sprintf("switch from mode %s to %s (the agent already did; a denial switches it back)", from, to)},
		Options: []driver.PermissionOption{
			{ID: "allow", Name: "Allow", Kind: driver.OptionAllowOnce},
			{ID: "reject", Name: "Switch back", Kind: driver.OptionRejectOnce},
		},
	}
	dec, err := e.evaluate(ctx, req, func(f *facts) {
		// The agent is already in to: that is the target, whatever
		// mode_after_plan says.
		f.mode, f.synthetic = to, true
	})
	return ModeDecision{PermissionDecision: dec.PermissionDecision}, err
}

// ModeDecision is CheckModeChange's answer. Explained: the change was
// expected (tai made it, an approved switch_mode request asked for it, or
// nothing changed), so no fresh decision was taken and there is nothing
// new to put on the record.
type ModeDecision struct {
	driver.PermissionDecision
	Explained bool
}
