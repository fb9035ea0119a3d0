package policy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/driver"
)

// Mode is the default stance of the engine: what a request no rule matched
// gets.
type Mode string

// Modes.
const (
	ApproveAll   Mode = "approve-all"
	ApproveReads Mode = "approve-reads"
	Ask          Mode = "ask"
	DenyAll      Mode = "deny-all"
	// Yolo allows everything the built-in floor does not deny. Unlike
	// approve-all it says so in its name; both keep the floor.
	Yolo Mode = "yolo"
)

// Modes lists the modes in a stable order.
var Modes = []Mode{ApproveAll, ApproveReads, Ask, DenyAll, Yolo}

// ParseMode accepts a mode name or the short --approve spellings
// (all, reads, ask, deny, yolo).
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "all", "approve-all", "yes":
		return ApproveAll, nil
	case "reads", "approve-reads", "":
		return ApproveReads, nil
	case "ask":
		return Ask, nil
	case "deny", "deny-all", "no":
		return DenyAll, nil
	case "yolo":
		return Yolo, nil
	}
	return "", fmt.Errorf("unknown approval mode %q (want all, reads, ask, deny or yolo)", s)
}

// NonInteractive says what an "ask" becomes when nobody can be asked.
type NonInteractive string

// What an ask becomes with no TTY.
const (
	NonInteractiveDeny NonInteractive = "deny"
	NonInteractiveFail NonInteractive = "fail"
)

// ParseNonInteractive parses --non-interactive.
func ParseNonInteractive(s string) (NonInteractive, error) {
	switch s {
	case "deny", "":
		return NonInteractiveDeny, nil
	case "fail":
		return NonInteractiveFail, nil
	}
	// The caller names where the value came from (--non-interactive, a
	// file's non_interactive key).
	return "", fmt.Errorf("unknown value %q (want deny or fail)", s)
}

// ErrPromptUnavailable: policy said ask, nobody can be asked, and
// --non-interactive fail is in force. The run stops.
var ErrPromptUnavailable = errors.New("permission prompt unavailable: policy says ask and there is no terminal (--non-interactive fail)")

// ErrNoAnswer is what an Answerer returns to abstain: the request goes on to
// the human, or to the non-interactive rule.
var ErrNoAnswer = errors.New("no answer")

// Answer is a human's answer to a prompt.
type Answer int

// Human answers.
const (
	AllowOnce Answer = iota
	AllowAlways
	DenyOnce
	DenyAlways
)

func (a Answer) allows() bool { return a == AllowOnce || a == AllowAlways }

func (a Answer) always() bool { return a == AllowAlways || a == DenyAlways }

// Prompter asks a human. It is nil when there is no TTY. One that also
// has a Where() string method (an editor: "in the editor") says where the
// human answered, for the decision's reason.
type Prompter interface {
	Ask(ctx context.Context, req driver.PermissionRequest) (Answer, error)
}

// Refusal is a channel's refusal given as an error: an editor that
// answered session/request_permission with a JSON-RPC error. It is a
// denial of that one request, recorded with the error, not a failure of
// the turn.
type Refusal struct{ Err error }

func (r *Refusal) Error() string { return "refused with an error: " + r.Err.Error() }
func (r *Refusal) Unwrap() error { return r.Err }

// Relayed is the provenance of an answer another decider gave: the tai in
// front of this one, whose editor this tai is the agent of.
type Relayed struct {
	By     string // its decided_by
	Reason string
}

// RelayingPrompter is a Prompter that can say who really answered. A nil
// Relayed is a human's answer.
type RelayingPrompter interface {
	AskRelayed(ctx context.Context, req driver.PermissionRequest) (Answer, *Relayed, error)
}

// ByRelayed is the provenance of a relayed answer: "via:<its decided_by>".
func ByRelayed(by string) driver.Provenance { return driver.Provenance("via:" + by) }

// Options are what an engine needs besides its policy.
type Options struct {
	// Workspace is the workspace root. Relative path globs, the
	// approve-reads "inside" test and floor-write-outside need it; with
	// none, relative globs match only relative paths and nothing is
	// "outside".
	Workspace string
	// Prompter asks a human; nil when there is no terminal.
	Prompter Prompter
	// Answerer, if set, is asked before the human (a supervisor agent, a
	// judge). It returns ErrNoAnswer to pass; any other error denies.
	// Its "always" answers are not remembered.
	Answerer Prompter
	// NonInteractive overrides the policy's when not "".
	NonInteractive NonInteractive
	// Memory holds "always" answers. Nil: a private one (scope session).
	// Share one among engines for a fleet run; use OpenWorkspaceMemory to
	// persist them.
	Memory *Memory
	// Now stamps remembered answers; nil = time.Now.
	Now func() time.Time
	// Home is the home directory for ~ and the floor; "" = $HOME.
	Home string
	// Asker names whose requests these are when several share the
	// prompter (a fleet: "task lint"); the question shows it.
	Asker string
	// Roots are more workspace roots (--add-dir, absolute): paths there
	// are inside the workspace, as under Workspace.
	Roots []string
	// Protected are more of tai's own files (an --audit file) that
	// floor-policy-files keeps agents from writing, besides the policy
	// file, the memory file and tai's config and state directories.
	Protected []string
	// ModeRule names the agent's self-approving modes and its asking mode
	// (its preset's); the zero value leaves them to the general rule (see
	// SelfApproving).
	ModeRule driver.ModeRule
}

// Engine decides permission requests. It is safe for concurrent use: ACP
// agents may have several requests outstanding, and fleets share engines'
// memories.
type Engine struct {
	cfg      Config
	mode     Mode
	ni       NonInteractive
	prompter Prompter
	answerer Prompter
	asker    string
	mem      *Memory
	now      func() time.Time
	ws       workspace
	floor    *floor // nil: off

	deny, ask, allow []*rule

	modeRule driver.ModeRule

	mu       sync.Mutex
	modes    map[string]string              // session → current mode
	expected map[string]map[string]expected // session → mode → why it is expected
	catalog  map[string][]driver.ModeInfo   // session → the modes it offers
}

// New returns an engine with no rules, no workspace and the built-in floor
// (the commands part; with no workspace nothing is "outside"). It is the
// simple path; NewEngine is the full one.
func New(mode Mode, ni NonInteractive, p Prompter) *Engine {
	e, err := NewEngine(Config{Mode: mode, NonInteractive: ni}, Options{Prompter: p})
	if err != nil {
		// A Config without rules, paths or write roots cannot fail.
		panic(err)
	}
	return e
}

// NewEngine compiles a policy. Errors name the rule at fault.
func NewEngine(cfg Config, o Options) (*Engine, error) {
	if cfg.Mode == "" {
		cfg.Mode = ApproveReads
	}
	if _, err := ParseMode(string(cfg.Mode)); err != nil {
		return nil, err
	}
	ni := cfg.NonInteractive
	if o.NonInteractive != "" {
		ni = o.NonInteractive
	}
	ni, err := ParseNonInteractive(string(ni))
	if err != nil {
		return nil, fmt.Errorf("non-interactive: %w", err)
	}
	home := o.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	ws, err := newWorkspace(o.Workspace, home, cfg.WriteRoots)
	if err != nil {
		return nil, err
	}
	for _, r := range o.Roots {
		if !filepath.IsAbs(r) {
			return nil, fmt.Errorf("policy: workspace root %q is not absolute", r)
		}
		ws.roots = append(ws.roots, filepath.Clean(r))
	}
	e := &Engine{
		cfg: cfg, mode: cfg.Mode, ni: ni, prompter: o.Prompter, answerer: o.Answerer, asker: o.Asker, mem: o.Memory, now: o.Now, ws: ws,
		modes: map[string]string{}, expected: map[string]map[string]expected{}, catalog: map[string][]driver.ModeInfo{},
		modeRule: o.ModeRule,
	}
	if e.mem == nil {
		e.mem = NewMemory(ScopeSession)
	} else if e.mem.turns == nil {
		return nil, errors.New("policy: Options.Memory must come from NewMemory, OpenMemory or OpenWorkspaceMemory")
	}
	if e.now == nil {
		e.now = time.Now
	}
	if !cfg.NoFloor {
		fl := &floor{off: map[string]bool{}}
		for _, id := range cfg.FloorDisable {
			if !floorKnown(id) {
				return nil, fmt.Errorf("floor_disable: no floor rule %q (have %s)", id, floorIDs())
			}
			fl.off[id] = true
		}
		branches := cfg.ProtectedBranches
		if branches == nil {
			branches = DefaultProtectedBranches
		}
		for _, b := range branches {
			p, err := compileTextPattern(b, false)
			if err != nil {
				return nil, fmt.Errorf("protected_branches: %v", err)
			}
			fl.protected = append(fl.protected, p)
		}
		fl.own(append([]string{cfg.Path, e.mem.Path()}, o.Protected...))
		e.floor = fl
	}
	ids := map[string]bool{}
	for i, r := range cfg.Rules {
		if r.ID == "" {
			r.ID = fmt.Sprintf("rule-%d", i+1)
		}
		if ids[r.ID] {
			return nil, fmt.Errorf("rule %q (%s): the id is used twice", r.ID, r.Source)
		}
		ids[r.ID] = true
		c, err := compile(r, home)
		if err != nil {
			where := r.Source
			if where == "" {
				where = fmt.Sprintf("rule #%d", i+1)
			}
			return nil, fmt.Errorf("rule %q (%s): %v", r.ID, where, err)
		}
		switch r.Effect {
		case EffectDeny:
			e.deny = append(e.deny, c)
		case EffectAsk:
			e.ask = append(e.ask, c)
		default:
			e.allow = append(e.allow, c)
		}
	}
	return e, nil
}

// Mode returns the engine's default stance.
func (e *Engine) Mode() Mode { return e.mode }

// Memory returns the memory the engine remembers "always" answers in.
func (e *Engine) Memory() *Memory { return e.mem }

// Decision is a PermissionDecision plus what the runner needs beyond it.
type Decision struct {
	driver.PermissionDecision
	// NextMode is the mode to move the session to once the agent has acted
	// on this approved request ("" = none): set when an exit from plan
	// mode was approved, mode_after_plan is configured and the option
	// chosen does not already say so. See ModeAfterApproval.
	NextMode string
	// Key is the request's memory key.
	Key string
}

// isReadKind reports whether s is one of the tool kinds approve-reads lets
// through: they cannot change anything.
func isReadKind(s string) bool {
	switch s {
	case kindRead, kindSearch, kindThink:
		return true
	}
	return false
}

// Decide answers one request. It never invents an option: the answer is
// always one the agent offered, or "cancelled" when the context is done.
func (e *Engine) Decide(ctx context.Context, req driver.PermissionRequest) (driver.PermissionDecision, error) {
	d, err := e.Evaluate(ctx, req)
	return d.PermissionDecision, err
}

// Evaluate is Decide with the extras of Decision. Precedence, first hit
// wins:
//
//  1. the built-in floor (rule:floor-...), then deny rules (rule:<id>);
//  2. a remembered "always deny" (remembered);
//  3. ask rules (rule:<id>), answered by a remembered "always allow", the
//     answerer, the human, or --non-interactive;
//  4. allow rules (rule:<id>);
//  5. the mode's default (default), whose asks are answered as in 3.
//
// Within a level the first matching rule in order decides.
func (e *Engine) Evaluate(ctx context.Context, req driver.PermissionRequest) (Decision, error) {
	return e.evaluate(ctx, req, nil)
}

// evaluate is Evaluate; adjust, if set, corrects the facts of a request tai
// made up itself.
func (e *Engine) evaluate(ctx context.Context, req driver.PermissionRequest, adjust func(*facts)) (Decision, error) {
	d := Decision{PermissionDecision: driver.PermissionDecision{
		RequestID: req.ID, ToolCallID: req.ToolCall.ID, Title: req.ToolCall.Title, ToolKind: req.ToolCall.Kind,
	}}
	if ctx.Err() != nil {
		return cancelled(d, "the turn was cancelled"), nil
	}
	f := e.facts(req)
	if adjust != nil {
		adjust(f)
	}
	d.Key = memoryKey(f)

	if id, why := e.floorCheck(f); id != "" {
		return e.finish(d, req, f, false, driver.ByRule(id), why), nil
	}
	for _, r := range e.deny {
		if r.match(f) {
			return e.finish(d, req, f, false, driver.ByRule(r.ID), r.describe()), nil
		}
	}
	if m, ok := e.mem.Lookup(d.Key); ok && !m.Allow {
		return e.finish(d, req, f, false, driver.ByRemembered, e.rememberedReason(m)), nil
	}
	for _, r := range e.ask {
		if r.match(f) {
			return e.askFor(ctx, d, req, f, driver.ByRule(r.ID), r.describe())
		}
	}
	for _, r := range e.allow {
		if r.match(f) {
			return e.finish(d, req, f, true, driver.ByRule(r.ID), r.describe()), nil
		}
	}
	verdict, why := e.modeDefault(f)
	switch verdict {
	case driver.VerdictAllow:
		return e.finish(d, req, f, true, driver.ByDefault, why), nil
	case driver.VerdictDeny:
		return e.finish(d, req, f, false, driver.ByDefault, why), nil
	}
	return e.askFor(ctx, d, req, f, driver.ByDefault, why)
}

// modeDefault is the mode's answer to a request no rule matched: allow,
// deny, or "" for ask.
func (e *Engine) modeDefault(f *facts) (verdict, why string) {
	if e.mode == DenyAll {
		return driver.VerdictDeny, "mode deny-all denies every request"
	}
	if f.kind == kindSwitchMode && f.selfApproving {
		// approve-all and yolo decide the requests that reach tai; a mode in
		// which none do is allowed only by a rule naming it.
		return driver.VerdictDeny, fmt.Sprintf("in mode %s the agent approves its own requests without asking tai; only an allow rule names it allowed (--allow 'switch_mode:%s')", f.mode, f.mode)
	}
	if f.kind == kindSwitchMode && !f.planExit && isPlanLike(f.mode) {
		return driver.VerdictAllow, fmt.Sprintf("switching to %s only restricts the agent", f.mode)
	}
	switch e.mode {
	case ApproveAll:
		return driver.VerdictAllow, "mode approve-all allows every request"
	case Yolo:
		return driver.VerdictAllow, "mode yolo allows every request the floor does not deny"
	case ApproveReads:
		if isReadKind(f.kind) {
			for _, p := range f.paths {
				if p.outside {
					return "", fmt.Sprintf("mode approve-reads asks for a %s outside the workspace (%s)", f.kind, p.raw)
				}
			}
			return driver.VerdictAllow, fmt.Sprintf("mode approve-reads allows %s", f.kind)
		}
		return "", fmt.Sprintf("mode approve-reads asks for %s", f.kind)
	}
	return "", fmt.Sprintf("mode %s asks for every request", e.mode)
}

// askContext tells a prompter shared by several engines (a fleet's tasks)
// whose question it is and the workspace its paths are relative to.
func (e *Engine) askContext(ctx context.Context) context.Context {
	return WithWorkspace(WithAsker(ctx, e.asker), e.ws.root)
}

// askFor answers an ask: from memory, the answerer, the human, or the
// non-interactive rule. by and why say who asked for the ask.
func (e *Engine) askFor(ctx context.Context, d Decision, req driver.PermissionRequest, f *facts, by driver.Provenance, why string) (Decision, error) {
	if m, ok := e.mem.Lookup(d.Key); ok {
		return e.finish(d, req, f, m.Allow, driver.ByRemembered, e.rememberedReason(m)), nil
	}
	if e.answerer != nil {
		actx := withAskInfo(e.askContext(ctx), AskInfo{By: string(by), Why: why})
		// The answerer may race a human channel (the cap-speak parent and
		// the feed): a human who answered first is recorded as one.
		rep, via, err := askReply(actx, e.answerer, req)
		if err == nil && rep.Refusal != nil {
			err = rep.Refusal
		}
		switch {
		case errors.Is(err, ErrNoAnswer):
		case err != nil && ctx.Err() != nil:
			return cancelled(d, "the turn was cancelled"), nil
		case err != nil:
			// A judge that cannot judge must not let things through.
			return e.finish(d, req, f, false, driver.ByAnswerer, fmt.Sprintf("%s; the answerer failed: %v", why, err)), nil
		case via == ask.ViaDashboard || via == ask.ViaFeed:
			d.Via = string(via)
			return e.finish(d, req, f, rep.Answer.allows(), driver.ByHuman, "answered via "+string(via)+"; asked because "+why), nil
		default:
			return e.finish(d, req, f, rep.Answer.allows(), driver.ByAnswerer, "answered by the answerer; asked because "+why), nil
		}
	}
	if e.prompter == nil {
		if e.ni == NonInteractiveFail {
			return cancelled(d, why+"; no terminal to ask on (--non-interactive fail)"), ErrPromptUnavailable
		}
		return e.finish(d, req, f, false, by, why+"; no terminal to ask on: denied (--non-interactive deny)"), nil
	}
	// Asks for the same thing wait for each other, so that one "always"
	// answers them all; the others are asked at once (a fleet's tasks, in
	// tai top and at the terminal in turn).
	if err := e.mem.acquireTurn(ctx, d.Key); err != nil {
		return cancelled(d, "the turn was cancelled"), nil
	}
	defer e.mem.releaseTurn(d.Key)
	if m, ok := e.mem.Lookup(d.Key); ok {
		return e.finish(d, req, f, m.Allow, driver.ByRemembered, e.rememberedReason(m)), nil
	}
	actx := withAskInfo(e.askContext(ctx), AskInfo{By: string(by), Why: why})
	rep, via, err := askReply(actx, e.prompter, req)
	ans, rel := rep.Answer, rep.Relayed
	where := "at the terminal"
	if rep.Where != "" {
		where = rep.Where
	}
	if err == nil && rep.Refusal != nil {
		d.Via = string(via)
		return e.finish(d, req, f, false, driver.ByHuman, fmt.Sprintf("refused %s, which answered with an error (%v); asked because %s", where, rep.Refusal.Err, why)), nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return cancelled(d, "the turn was cancelled"), nil
		}
		return cancelled(d, "prompt failed"), fmt.Errorf("asking for permission: %w", err)
	}
	if via != "" && via != ask.ViaTerminal && via != ask.ViaEditor {
		where = "via " + string(via) // another channel of the race answered first
	}
	reason := "answered " + where + "; asked because " + why
	d.Via = string(via)
	if rel != nil {
		// Another tai's policy answered: its provenance is the decision's,
		// and its "always" is its own to keep.
		return e.finish(d, req, f, ans.allows(), ByRelayed(rel.By), fmt.Sprintf("decided %s by %s: %s; asked because %s", where, rel.By, rel.Reason, why)), nil
	}
	if ans.always() {
		m := Remembered{Allow: ans.allows(), At: e.now().UTC(), Title: req.ToolCall.Title, Session: req.Session}
		if err := e.mem.Remember(d.Key, m); err != nil {
			reason += fmt.Sprintf("; kept in memory but not saved for the %s: %v", e.mem.Scope(), err)
		} else {
			reason += fmt.Sprintf("; remembered for the %s as %q", e.mem.Scope(), d.Key)
		}
	}
	return e.finish(d, req, f, ans.allows(), driver.ByHuman, reason), nil
}

func (e *Engine) rememberedReason(m Remembered) string {
	verb := "denied"
	if m.Allow {
		verb = "allowed"
	}
	where := string(e.mem.Scope())
	if p := e.mem.Path(); p != "" {
		where += " (" + p + ")"
	}
	return fmt.Sprintf("%s always by a human at %s, remembered for the %s", verb, m.At.UTC().Format(time.RFC3339), where)
}

// finish picks the option that carries the verdict.
func (e *Engine) finish(d Decision, req driver.PermissionRequest, f *facts, allow bool, by driver.Provenance, reason string) Decision {
	d.DecidedBy, d.Reason = by, reason
	var opt driver.PermissionOption
	ok := false
	if allow && f.kind == kindSwitchMode {
		opt, ok = e.switchOption(req, f)
	} else {
		opt, ok = ChooseOption(req.Options, allow)
	}
	if !ok {
		if allow {
			// Nothing to allow with: refusing is the only honest answer.
			opt, ok = ChooseOption(req.Options, false)
			d.Reason += "; the agent offered no allow option"
		}
		if !ok {
			d.Reason += "; the agent offered no reject option, so the request was answered cancelled"
			d.Outcome, d.Verdict = driver.OutcomeCancelled, driver.VerdictDeny
			return d
		}
		allow = false
	}
	d.Outcome, d.OptionID, d.OptionKind = driver.OutcomeSelected, opt.ID, OptionKind(opt)
	d.Verdict = driver.VerdictDeny
	if allow {
		d.Verdict = driver.VerdictAllow
		if f.kind == kindSwitchMode {
			e.approved(req, f, &d)
		}
	}
	return d
}

func cancelled(d Decision, reason string) Decision {
	d.Outcome, d.Verdict, d.DecidedBy, d.Reason = driver.OutcomeCancelled, driver.VerdictCancelled, driver.ByCancel, reason
	d.OptionID, d.OptionKind = "", ""
	return d
}

// ChooseOption picks the option to answer with by its kind: allow_once over
// allow_always (so tai, not the agent, keeps deciding later requests), and
// reject_once over reject_always. An option without a known kind is
// classified from its id and name. It never returns an option not offered.
func ChooseOption(opts []driver.PermissionOption, allow bool) (driver.PermissionOption, bool) {
	prefs := []string{driver.OptionRejectOnce, driver.OptionRejectAlways}
	if allow {
		prefs = []string{driver.OptionAllowOnce, driver.OptionAllowAlways}
	}
	for _, want := range prefs {
		for _, o := range opts {
			if OptionKind(o) == want {
				return o, true
			}
		}
	}
	return driver.PermissionOption{}, false
}

// OptionKind returns the option's kind, inferring it from its id and name
// when the agent sent none or one tai does not know.
func OptionKind(o driver.PermissionOption) string {
	switch o.Kind {
	case driver.OptionAllowOnce, driver.OptionAllowAlways, driver.OptionRejectOnce, driver.OptionRejectAlways:
		return o.Kind
	}
	s := strings.ToLower(o.ID + " " + o.Name)
	always := strings.Contains(s, "always") || strings.Contains(s, "never") || strings.Contains(s, "don't ask")
	for _, w := range []string{"reject", "deny", "decline", "abort", "cancel", "never", "skip", "no,", "disallow", "refuse"} {
		if strings.Contains(s, w) {
			if always {
				return driver.OptionRejectAlways
			}
			return driver.OptionRejectOnce
		}
	}
	for _, w := range []string{"allow", "approve", "accept", "proceed", "yes", "ok", "continue", "trust"} {
		if strings.Contains(s, w) {
			if always {
				return driver.OptionAllowAlways
			}
			return driver.OptionAllowOnce
		}
	}
	return ""
}
