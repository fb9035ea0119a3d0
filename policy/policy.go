// Package policy is tai's permission decider: the one place that answers an
// agent's permission requests, whatever driver carried them, and records who
// or what decided and why.
package policy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/tai-dev/tai/driver"
)

// Mode is the default stance of the engine.
type Mode string

// Modes.
const (
	ApproveAll   Mode = "approve-all"
	ApproveReads Mode = "approve-reads"
	Ask          Mode = "ask"
	DenyAll      Mode = "deny-all"
)

// Modes lists the modes in a stable order.
var Modes = []Mode{ApproveAll, ApproveReads, Ask, DenyAll}

// ParseMode accepts a mode name or the short --approve spellings
// (all, reads, ask, deny).
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
	}
	return "", fmt.Errorf("unknown approval mode %q (want all, reads, ask or deny)", s)
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
	return "", fmt.Errorf("unknown --non-interactive value %q (want deny or fail)", s)
}

// ErrPromptUnavailable: policy said ask, nobody can be asked, and
// --non-interactive fail is in force. The run stops.
var ErrPromptUnavailable = errors.New("permission prompt unavailable: policy says ask and there is no terminal (--non-interactive fail)")

// Answer is a human's answer to a prompt.
type Answer int

// Human answers.
const (
	AllowOnce Answer = iota
	AllowAlways
	DenyOnce
	DenyAlways
)

// Prompter asks a human. It is nil when there is no TTY.
type Prompter interface {
	Ask(ctx context.Context, req driver.PermissionRequest) (Answer, error)
}

// Provenance values for decided_by.
const (
	ByDefault    = "default"
	ByHuman      = "human"
	ByRemembered = "remembered"
	ByCancel     = "cancel"
)

// Engine decides permission requests. It is safe for concurrent use: ACP
// agents may have several requests outstanding.
type Engine struct {
	Mode           Mode
	NonInteractive NonInteractive
	Prompter       Prompter

	mu       sync.Mutex
	remember map[string]bool // key → allowed
	askMu    sync.Mutex      // one prompt on screen at a time
}

// New returns an engine.
func New(mode Mode, ni NonInteractive, p Prompter) *Engine {
	return &Engine{Mode: mode, NonInteractive: ni, Prompter: p, remember: map[string]bool{}}
}

// readKinds are the tool kinds approve-reads lets through: they cannot
// change anything.
var readKinds = map[string]bool{driver.KindRead: true, driver.KindSearch: true, driver.KindThink: true}

// Decide answers one request. It never invents an option: the answer is
// always one the agent offered, or "cancelled" when the context is done.
func (e *Engine) Decide(ctx context.Context, req driver.PermissionRequest) (driver.PermissionDecision, error) {
	d := driver.PermissionDecision{RequestID: req.ID, ToolCallID: req.ToolCall.ID, Title: req.ToolCall.Title, ToolKind: req.ToolCall.Kind}
	if ctx.Err() != nil {
		return cancelled(d, "the turn was cancelled"), nil
	}
	key := memoryKey(req.ToolCall)
	e.mu.Lock()
	allowed, remembered := e.remember[key]
	e.mu.Unlock()
	if remembered {
		return e.finish(d, req, allowed, ByRemembered, "an earlier always-answer for this kind of request")
	}

	kind := req.ToolCall.Kind
	switch e.Mode {
	case ApproveAll:
		return e.finish(d, req, true, ByDefault, "mode approve-all allows every request")
	case DenyAll:
		return e.finish(d, req, false, ByDefault, "mode deny-all denies every request")
	case ApproveReads:
		if readKinds[kind] {
			return e.finish(d, req, true, ByDefault, fmt.Sprintf("mode approve-reads allows %s", kind))
		}
	}
	// Ask: a human if there is one, else the non-interactive rule.
	if e.Prompter == nil {
		if e.NonInteractive == NonInteractiveFail {
			return cancelled(d, "no terminal to ask on (--non-interactive fail)"), ErrPromptUnavailable
		}
		return e.finish(d, req, false, ByDefault, fmt.Sprintf("mode %s asks, no terminal to ask on: denied (--non-interactive deny)", e.Mode))
	}
	e.askMu.Lock()
	ans, err := e.Prompter.Ask(ctx, req)
	e.askMu.Unlock()
	if err != nil {
		if ctx.Err() != nil {
			return cancelled(d, "the turn was cancelled"), nil
		}
		return cancelled(d, "prompt failed"), fmt.Errorf("asking for permission: %w", err)
	}
	switch ans {
	case AllowAlways, DenyAlways:
		e.mu.Lock()
		e.remember[key] = ans == AllowAlways
		e.mu.Unlock()
	}
	return e.finish(d, req, ans == AllowOnce || ans == AllowAlways, ByHuman, "answered at the terminal")
}

func (e *Engine) finish(d driver.PermissionDecision, req driver.PermissionRequest, allow bool, by, reason string) (driver.PermissionDecision, error) {
	d.DecidedBy, d.Reason = by, reason
	opt, ok := ChooseOption(req.Options, allow)
	if !ok {
		if allow {
			// Nothing to allow with: refusing is the only honest answer.
			opt, ok = ChooseOption(req.Options, false)
			d.Reason += "; the agent offered no allow option"
		}
		if !ok {
			d.Reason += "; the agent offered no reject option, so the request was answered cancelled"
			d.Outcome, d.Verdict = driver.OutcomeCancelled, driver.VerdictDeny
			return d, nil
		}
		allow = false
	}
	d.Outcome, d.OptionID, d.OptionKind = driver.OutcomeSelected, opt.ID, OptionKind(opt)
	d.Verdict = driver.VerdictDeny
	if allow {
		d.Verdict = driver.VerdictAllow
	}
	return d, nil
}

func cancelled(d driver.PermissionDecision, reason string) driver.PermissionDecision {
	d.Outcome, d.Verdict, d.DecidedBy, d.Reason = driver.OutcomeCancelled, driver.VerdictCancelled, ByCancel, reason
	return d
}

func memoryKey(tc driver.ToolCall) string {
	name := tc.Name
	if name == "" {
		name = tc.Title
	}
	return tc.Kind + "\x00" + name
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
