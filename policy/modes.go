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
	f.selfApproving = e.selfApproving(req.Session, f.mode)
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
	safe := slices.DeleteFunc(slices.Clone(req.Options), func(o driver.PermissionOption) bool {
		return bypassLike(o) || e.selfApproving(req.Session, o.ID)
	})
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
		f.selfApproving = e.selfApproving(session, to)
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

// The agent's own starting mode, and any mode it moves to, are policy too.
// In some modes the agent approves its own requests, which then never
// reach tai (claude-agent-acp starts in auto, "Claude handles permission
// decisions"; codex-acp in agent, "Auto review"). Such a mode is refused
// unless an allow rule names it (switch_mode:<mode>): the mode default
// denies it, whatever --approve says, since approve-all and yolo decide
// the requests that reach tai. A preset names its agent's self-approving
// modes (driver.ModeRule); for other agents the general rule below reads
// the mode's id, name and description.

// selfApprovingWords flag a mode's id or name; selfApprovingPhrases its
// description.
var (
	selfApprovingWords   = lazyre.New(`(?i)(^|[^a-z])(auto|agent|bypass\w*|yolo|full[-_ ]?access|dangerous\w*|skip[-_ ]?permissions)($|[^a-z])`)
	selfApprovingPhrases = lazyre.New(`(?i)approves? (its own|all|every)|permission decisions|accepts? all|without (asking|approval)|only asks? for actions`)
)

// SelfApproving reports whether m is a mode in which the agent approves
// its own requests: one rule names (when it names any), else, by the
// general rule, one whose id or name says auto, agent, bypass, yolo, full
// access, dangerous or skip-permissions, or whose description says it
// approves its own (or all) requests, makes the permission decisions,
// accepts all, acts without asking, or only asks for some actions.
func SelfApproving(m driver.ModeInfo, rule driver.ModeRule) bool {
	if m.ID == "" {
		return false
	}
	if len(rule.SelfApproving) > 0 {
		return slices.Contains(rule.SelfApproving, m.ID)
	}
	if m.ID == rule.Asking {
		return false
	}
	return selfApprovingWords().MatchString(m.ID) || selfApprovingWords().MatchString(m.Name) ||
		selfApprovingPhrases().MatchString(m.Description)
}

var askingPhrase = lazyre.New(`(?i)\bask|requires approval|manual`)

// AskingMode is the mode among modes in which the agent asks before acting:
// the rule's when offered (or when the agent lists no modes), else "default",
// else the first one whose description says it asks and that is neither
// self-approving nor a plan mode.
func AskingMode(modes []driver.ModeInfo, rule driver.ModeRule) (string, bool) {
	offered := func(id string) bool {
		return id != "" && slices.ContainsFunc(modes, func(m driver.ModeInfo) bool { return m.ID == id })
	}
	switch {
	case offered(rule.Asking), rule.Asking != "" && len(modes) == 0:
		return rule.Asking, true
	case offered("default") && !SelfApproving(driver.ModeInfo{ID: "default"}, rule):
		return "default", true
	}
	for _, m := range modes {
		if !SelfApproving(m, rule) && !isPlanLike(m.ID) && askingPhrase().MatchString(m.Name+" "+m.Description) {
			return m.ID, true
		}
	}
	return "", false
}

// ObserveModes tells the engine the modes a session offers (as it
// started), which the general rule reads.
func (e *Engine) ObserveModes(session string, modes []driver.ModeInfo) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.catalog[session] = slices.Clone(modes)
}

// ModeRule is the rule the engine classifies modes by.
func (e *Engine) ModeRule() driver.ModeRule { return e.modeRule }

// selfApproving classifies mode as the session offers it.
func (e *Engine) selfApproving(session, mode string) bool {
	if mode == "" {
		return false
	}
	m := driver.ModeInfo{ID: mode}
	e.mu.Lock()
	if i := slices.IndexFunc(e.catalog[session], func(c driver.ModeInfo) bool { return c.ID == mode }); i >= 0 {
		m = e.catalog[session][i]
	}
	e.mu.Unlock()
	return SelfApproving(m, e.modeRule)
}

// StartModeRequest is the request id of CheckStartMode's decision: tai's
// own check of the mode a session starts in, not one of the agent's
// requests, so not a denial of the agent's when it refuses.
const StartModeRequest = "start-mode"

// CheckStartMode decides whether a session may be in mode, the mode it
// starts in (or the --mode tai was told to set), before its first prompt.
// A mode that is not self-approving is allowed without a decision
// (Explained). A self-approving one is decided like a switch_mode request
// to it: only an allow rule naming it allows it.
func (e *Engine) CheckStartMode(ctx context.Context, session, mode string) (ModeDecision, error) {
	d := driver.PermissionDecision{RequestID: StartModeRequest, ToolKind: driver.KindSwitchMode,
		Title: fmt.Sprintf("start in mode %s", mode)}
	if !e.selfApproving(session, mode) {
		d.Outcome, d.OptionID, d.OptionKind, d.Verdict = driver.OutcomeSelected, "allow", driver.OptionAllowOnce, driver.VerdictAllow
		d.DecidedBy, d.Reason = driver.ByDefault, "the agent asks in this mode"
		return ModeDecision{PermissionDecision: d, Explained: true}, nil
	}
	raw, _ := json.Marshal(map[string]string{"to": mode})
	req := driver.PermissionRequest{
		ID: StartModeRequest, Session: session,
		ToolCall: driver.ToolCall{ID: StartModeRequest, Kind: driver.KindSwitchMode, Name: "start_mode", RawInput: raw,
			Title: fmt.Sprintf("start in mode %s, in which the agent approves its own requests", mode)},
		Options: []driver.PermissionOption{
			{ID: "allow", Name: "Allow", Kind: driver.OptionAllowOnce},
			{ID: "reject", Name: "Move to the asking mode", Kind: driver.OptionRejectOnce},
		},
	}
	dec, err := e.evaluate(ctx, req, func(f *facts) {
		f.mode, f.target, f.planExit, f.synthetic, f.selfApproving = mode, mode, false, true, true
	})
	return ModeDecision{PermissionDecision: dec.PermissionDecision}, err
}
