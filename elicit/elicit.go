// Package elicit answers agents' elicitations (ACP elicitation/create): a
// chain of answerers asked in order — fixed answers from the policy file,
// the fleet's answerer agent, a human at the terminal, the cap-speak
// parent — and, with nobody to ask, decline (or, under --non-interactive
// fail, a stop of the run).
package elicit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/policy"
)

// ErrPass is what an answerer returns to abstain: the next one is asked.
var ErrPass = errors.New("no answer")

// ErrUnanswered: nobody could answer and --non-interactive fail is in
// force. The run stops with exit 5.
var ErrUnanswered = errors.New("elicitation unanswered under --non-interactive fail")

// Provenance values of an answer's decided_by, besides "rule:<id>".
const (
	ByAnswerer = "answerer" // the fleet's answerer agent
	ByHuman    = "human"    // the form on the terminal
	ByParent   = "parent"   // the cap-speak parent
	ByDefault  = "default"  // nobody to ask: declined
	ByCancel   = "cancel"   // the turn was cancelled
)

// Answerer is one link of the chain. It returns ErrPass to abstain; the
// Content of an accept is checked against the form before it is used. An
// answer without DecidedBy gets its link's.
type Answerer interface {
	Answer(ctx context.Context, req driver.ElicitationRequest) (driver.ElicitationAnswer, error)
}

// Link is an answerer with the provenance its answers get.
type Link struct {
	By string
	A  Answerer
}

// Chain is the answer chain. It implements driver.Elicitor.
type Chain struct {
	Rules []policy.ElicitRule
	Links []Link // after the rules, in order
	// Fail: with nobody to answer, stop the run (ErrUnanswered) instead
	// of declining.
	Fail bool
}

// Elicit asks the rules, then each link, until one answers.
func (c *Chain) Elicit(ctx context.Context, req driver.ElicitationRequest) (driver.ElicitationAnswer, error) {
	var passed []string
	for i := range c.Rules {
		r := &c.Rules[i]
		if !r.Matches(string(req.Mode), req.Message, req.URL) {
			continue
		}
		ans, ok := fromRule(r, req)
		if ok {
			return ans, nil
		}
		passed = append(passed, "rule "+r.ID+" lacks required fields")
	}
	for _, l := range c.Links {
		if ctx.Err() != nil {
			return cancelled(ctx), nil
		}
		ans, err := l.A.Answer(ctx, req)
		switch {
		case errors.Is(err, ErrPass):
			continue
		case ctx.Err() != nil:
			return cancelled(ctx), nil
		case err != nil:
			passed = append(passed, fmt.Sprintf("%s failed: %v", l.By, err))
			continue
		}
		if ans.Action == driver.ElicitAccept && req.Mode == driver.ElicitForm {
			content, verr := Validate(req, ans.Content)
			if verr != nil {
				passed = append(passed, fmt.Sprintf("%s answered an invalid form: %v", l.By, verr))
				continue
			}
			ans.Content = content
		}
		if ans.Action == "" {
			ans.Action = driver.ElicitDecline
		}
		if ans.DecidedBy == "" {
			ans.DecidedBy = l.By
		}
		return ans, nil
	}
	why := "nobody to ask"
	if len(passed) > 0 {
		why += " (" + strings.Join(passed, "; ") + ")"
	}
	if c.Fail {
		return driver.ElicitationAnswer{Action: driver.ElicitCancel, DecidedBy: ByCancel, Reason: why}, fmt.Errorf("%w: %s", ErrUnanswered, why)
	}
	return driver.ElicitationAnswer{Action: driver.ElicitDecline, DecidedBy: ByDefault, Reason: why + ": declined"}, nil
}

func cancelled(ctx context.Context) driver.ElicitationAnswer {
	return driver.ElicitationAnswer{Action: driver.ElicitCancel, DecidedBy: ByCancel, Reason: "the turn was cancelled: " + context.Cause(ctx).Error()}
}

// fromRule answers from a policy rule, if it covers the form.
func fromRule(r *policy.ElicitRule, req driver.ElicitationRequest) (driver.ElicitationAnswer, bool) {
	ans := driver.ElicitationAnswer{Action: driver.ElicitAction(r.Action), DecidedBy: string(driver.ByRule(r.ID)), Reason: "policy file [[elicit]] " + r.ID}
	if ans.Action != driver.ElicitAccept || req.Mode != driver.ElicitForm {
		return ans, true
	}
	content := map[string]any{}
	for _, f := range req.Fields {
		if v, ok := r.Answers[f.Name]; ok {
			content[f.Name] = v
		}
	}
	content, err := Validate(req, content)
	if err != nil {
		return ans, false
	}
	ans.Content = content
	return ans, true
}

// Validate checks form content against the request's fields, fills in
// defaults and normalises values to their JSON types (integers as int64,
// numbers as float64, lists as []string). Unknown keys are dropped.
func Validate(req driver.ElicitationRequest, content map[string]any) (map[string]any, error) {
	out := map[string]any{}
	var errs []error
	for _, f := range req.Fields {
		v, ok := content[f.Name]
		if !ok || v == nil {
			if f.Default != nil {
				v, ok = f.Default, true
			}
		}
		if !ok || v == nil {
			if f.Required {
				errs = append(errs, fmt.Errorf("%s is required", f.Name))
			}
			continue
		}
		nv, err := CheckValue(f, v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.Name, err))
			continue
		}
		out[f.Name] = nv
	}
	return out, errors.Join(errs...)
}

// CheckValue checks one value against its field and normalises it.
func CheckValue(f driver.ElicitField, v any) (any, error) {
	switch f.Type {
	case "string":
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("want text, not %T", v)
		}
		return s, checkString(f, s)
	case "boolean":
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("want true or false, not %T", v)
		}
		return b, nil
	case "integer", "number":
		n, err := number(v)
		if err != nil {
			return nil, err
		}
		if f.Type == "integer" {
			if n != math.Trunc(n) || math.Abs(n) > 1<<53 {
				return nil, fmt.Errorf("%v is not a whole number", n)
			}
		}
		if f.Minimum != nil && n < *f.Minimum {
			return nil, fmt.Errorf("%v is below the minimum %v", n, *f.Minimum)
		}
		if f.Maximum != nil && n > *f.Maximum {
			return nil, fmt.Errorf("%v is above the maximum %v", n, *f.Maximum)
		}
		if f.Type == "integer" {
			return int64(n), nil
		}
		return n, nil
	case "array":
		var list []string
		switch x := v.(type) {
		case []string:
			list = x
		case []any:
			for _, e := range x {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("a list of choices takes text, not %T", e)
				}
				list = append(list, s)
			}
		default:
			return nil, fmt.Errorf("want a list, not %T", v)
		}
		for _, s := range list {
			if len(f.Enum) > 0 && !slices.Contains(f.Enum, s) {
				return nil, fmt.Errorf("%q is not one of %s", s, strings.Join(f.Enum, ", "))
			}
		}
		if f.MinLength != nil && len(list) < *f.MinLength {
			return nil, fmt.Errorf("choose at least %d", *f.MinLength)
		}
		if f.MaxLength != nil && len(list) > *f.MaxLength {
			return nil, fmt.Errorf("choose at most %d", *f.MaxLength)
		}
		if list == nil {
			list = []string{}
		}
		return list, nil
	}
	return nil, fmt.Errorf("unknown field type %q", f.Type)
}

func number(v any) (float64, error) {
	switch x := v.(type) {
	case float64:
		return x, nil
	case float32:
		return float64(x), nil
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case string:
		n, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a number", x)
		}
		return n, nil
	}
	return 0, fmt.Errorf("want a number, not %T", v)
}

func checkString(f driver.ElicitField, s string) error {
	if len(f.Enum) > 0 && !slices.Contains(f.Enum, s) {
		return fmt.Errorf("%q is not one of %s", s, strings.Join(f.Enum, ", "))
	}
	n := len([]rune(s))
	if f.MinLength != nil && n < *f.MinLength {
		return fmt.Errorf("at least %d characters", *f.MinLength)
	}
	if f.MaxLength != nil && n > *f.MaxLength {
		return fmt.Errorf("at most %d characters", *f.MaxLength)
	}
	if f.Pattern != "" {
		re, err := regexp.Compile(f.Pattern)
		if err == nil && !re.MatchString(s) {
			return fmt.Errorf("%q does not match %s", s, f.Pattern)
		}
	}
	switch f.Format {
	case "email":
		if _, err := mail.ParseAddress(s); err != nil || !strings.Contains(s, "@") {
			return fmt.Errorf("%q is not an email address", s)
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || u.Scheme == "" {
			return fmt.Errorf("%q is not a URI", s)
		}
	case "date":
		// A full-date of RFC 3339, as JSON Schema's format says: a real
		// day, not only its shape.
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return fmt.Errorf("%q is not a date (YYYY-MM-DD)", s)
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339Nano, strings.ToUpper(s)); err != nil || !strings.ContainsAny(s, "Tt") {
			return fmt.Errorf("%q is not a date and time (RFC 3339, like 2026-12-07T09:30:00Z)", s)
		}
	}
	return nil
}
