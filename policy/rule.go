package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tai-dev/tai/policy/shell"
)

// Effect is what a rule does to the requests it matches.
type Effect string

// Effects, in precedence order: a deny beats an ask, an ask beats an allow.
const (
	EffectDeny  Effect = "deny"
	EffectAsk   Effect = "ask"
	EffectAllow Effect = "allow"
)

// Rule is one declarative rule. Every condition that is set must hold;
// within a list, one entry is enough. A rule with no condition matches every
// request.
//
// Paths and commands are quantified by effect, always towards safety: a deny
// or ask rule matches when any path, or any simple command of a command
// line, matches; an allow rule only when all of them do.
type Rule struct {
	// ID names the rule in provenance ("rule:<id>"). Empty: rule-N for the
	// Nth [[rule]] of the file, flag-N for the Nth rule flag. IDs starting
	// with "floor-" are reserved for the built-in floor.
	ID     string
	Effect Effect
	// Kinds are tool kinds (read, edit, delete, move, search, execute,
	// think, fetch, switch_mode, other). A kind an agent sends that tai
	// does not know counts as other.
	Kinds []string
	// Tools are globs on the tool's name (its title when it has no name),
	// case-insensitive.
	Tools []string
	// Paths are path globs (see the package documentation) on the paths a
	// request touches: its locations, diff paths and raw_input path fields.
	Paths []string
	// OutsideWorkspace, when set, requires the paths to be outside (true)
	// or inside (false) the workspace.
	OutsideWorkspace *bool
	// Commands are patterns on the command line: globs, or "re:REGEXP".
	Commands []string
	// URLs are globs on a fetch's URL.
	URLs []string
	// Modes are globs on the mode a switch_mode request moves the session
	// to.
	Modes []string
	// Reason is shown in the decision; empty: a description of the rule.
	Reason string
	// Source says where the rule came from ("policy.toml:12",
	// "--deny 'edit:**/.env'"), for errors and default reasons.
	Source string
}

// flagCategory is what the PATTERN of a KIND:PATTERN flag is matched on.
func flagCategory(kind string) string {
	switch kind {
	case kindRead, kindEdit, kindDelete, kindMove, kindSearch:
		return "path"
	case kindExecute:
		return "command"
	case kindFetch:
		return "url"
	case kindSwitchMode:
		return "mode"
	}
	return "tool"
}

// ParseRuleFlag parses the value of --allow, --ask or --deny:
//
//	KIND[,KIND...][:PATTERN]   execute:go test *    edit,delete:**/.env    fetch
//	tool=NAME                  tool=mcp__github__*
//	*                          every request
//
// PATTERN is matched on what the kind is about: a path glob for read, edit,
// delete, move and search; a command pattern for execute (a glob, or
// re:REGEXP); a URL glob for fetch; the target mode for switch_mode; the
// tool name for think and other. Everything after the first colon is the
// pattern, so it may hold colons itself.
func ParseRuleFlag(effect Effect, s string) (Rule, error) {
	r := Rule{Effect: effect, Source: fmt.Sprintf("--%s %s", effect, joinArgv([]string{s}))}
	if err := checkEffect(effect); err != nil {
		return r, err
	}
	s = strings.TrimSpace(s)
	if name, ok := strings.CutPrefix(s, "tool="); ok {
		if name = strings.TrimSpace(name); name == "" {
			return r, fmt.Errorf("%s: tool= wants a tool name", r.Source)
		}
		r.Tools = []string{name}
		return r, nil
	}
	kinds, pattern, hasPattern := strings.Cut(s, ":")
	kinds = strings.TrimSpace(kinds)
	if kinds == "" {
		return r, fmt.Errorf("%s: want KIND[:PATTERN] or tool=NAME (kinds: %s)", r.Source, strings.Join(knownKinds, ", "))
	}
	if kinds == "*" {
		if hasPattern {
			return r, fmt.Errorf("%s: a pattern needs a kind to know what it matches (e.g. edit:%s or execute:%s)", r.Source, pattern, pattern)
		}
		return r, nil
	}
	category := ""
	for _, k := range strings.Split(kinds, ",") {
		k = strings.TrimSpace(k)
		if !slices.Contains(knownKinds, k) {
			return r, fmt.Errorf("%s: unknown kind %q (want one of %s, or tool=NAME)", r.Source, k, strings.Join(knownKinds, ", "))
		}
		c := flagCategory(k)
		if category != "" && c != category && hasPattern {
			return r, fmt.Errorf("%s: kinds %s match their pattern on different things (%s, %s): give one rule per kind", r.Source, kinds, category, c)
		}
		category = c
		r.Kinds = append(r.Kinds, k)
	}
	if !hasPattern {
		return r, nil
	}
	if strings.TrimSpace(pattern) == "" {
		return r, fmt.Errorf("%s: empty pattern after the colon", r.Source)
	}
	switch category {
	case "path":
		r.Paths = []string{pattern}
	case "command":
		r.Commands = []string{pattern}
	case "url":
		r.URLs = []string{pattern}
	case "mode":
		r.Modes = []string{pattern}
	default:
		r.Tools = []string{pattern}
	}
	return r, nil
}

func checkEffect(e Effect) error {
	switch e {
	case EffectAllow, EffectAsk, EffectDeny:
		return nil
	}
	return fmt.Errorf("unknown effect %q (want allow, ask or deny)", e)
}

// rule is a compiled Rule.
type rule struct {
	Rule
	kinds    map[string]bool
	tools    []textPattern
	paths    []pathPattern
	commands []textPattern
	urls     []textPattern
	modes    []textPattern
}

// compile checks r and builds its matchers. Errors name the field; the
// caller adds the rule and its place.
func compile(r Rule, home string) (*rule, error) {
	c := &rule{Rule: r}
	if err := checkEffect(r.Effect); err != nil {
		return nil, err
	}
	if strings.HasPrefix(r.ID, "floor-") {
		return nil, fmt.Errorf("id %q: ids starting with floor- are reserved for the built-in floor", r.ID)
	}
	for _, k := range r.Kinds {
		if k == "*" {
			continue
		}
		if !slices.Contains(knownKinds, k) {
			return nil, fmt.Errorf("kind %q is not a tool kind (want one of %s)", k, strings.Join(knownKinds, ", "))
		}
		if c.kinds == nil {
			c.kinds = map[string]bool{}
		}
		c.kinds[k] = true
	}
	if slices.Contains(r.Kinds, "*") {
		c.kinds = nil
	}
	text := func(field string, in []string, fold bool) ([]textPattern, error) {
		var out []textPattern
		for _, s := range in {
			p, err := compileTextPattern(s, fold)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", field, err)
			}
			out = append(out, p)
		}
		return out, nil
	}
	var err error
	if c.tools, err = text("tool", r.Tools, true); err != nil {
		return nil, err
	}
	if c.commands, err = text("command", r.Commands, false); err != nil {
		return nil, err
	}
	if c.urls, err = text("url", r.URLs, true); err != nil {
		return nil, err
	}
	if c.modes, err = text("mode", r.Modes, false); err != nil {
		return nil, err
	}
	for _, s := range r.Paths {
		p, err := compilePathPattern(s, home)
		if err != nil {
			return nil, fmt.Errorf("path: %v", err)
		}
		c.paths = append(c.paths, p)
	}
	return c, nil
}

// match reports whether the rule matches the request.
func (r *rule) match(f *facts) bool {
	if r.kinds != nil && !r.kinds[f.kind] {
		return false
	}
	if len(r.tools) > 0 && !anyText(r.tools, f.tool) {
		return false
	}
	if len(r.urls) > 0 && (f.url == "" || !anyText(r.urls, f.url)) {
		return false
	}
	if len(r.modes) > 0 && (f.mode == "" || !anyText(r.modes, f.mode)) {
		return false
	}
	if (len(r.paths) > 0 || r.OutsideWorkspace != nil) && !r.matchPaths(f) {
		return false
	}
	if len(r.commands) > 0 && !r.matchCommand(f) {
		return false
	}
	return true
}

func anyText(ps []textPattern, s string) bool {
	for _, p := range ps {
		if p.match(s) {
			return true
		}
	}
	return false
}

func (r *rule) matchPaths(f *facts) bool {
	if len(f.paths) == 0 {
		return false
	}
	one := func(p pathFact) bool {
		if r.OutsideWorkspace != nil && p.outside != *r.OutsideWorkspace {
			return false
		}
		if len(r.paths) == 0 {
			return true
		}
		for _, g := range r.paths {
			if g.match(p) {
				return true
			}
		}
		return false
	}
	if r.Effect == EffectAllow {
		for _, p := range f.paths {
			if !one(p) {
				return false
			}
		}
		return true
	}
	for _, p := range f.paths {
		if one(p) {
			return true
		}
	}
	return false
}

func (r *rule) matchCommand(f *facts) bool {
	if r.Effect != EffectAllow {
		for _, s := range f.denySeg {
			if anyText(r.commands, s) {
				return true
			}
		}
		return false
	}
	// An allow covers a command line only when it covers each of its
	// commands, and none of them writes a file through a redirection.
	if len(f.allowSeg) == 0 {
		return false
	}
	for _, s := range f.allowSeg {
		if shell.HasOutputRedirect(s) || !anyText(r.commands, s) {
			return false
		}
	}
	return true
}

// describe is the default reason of a rule.
func (r *rule) describe() string {
	if r.Reason != "" {
		return r.Reason
	}
	if r.Source != "" {
		return r.Source
	}
	var parts []string
	add := func(name string, v []string) {
		if len(v) > 0 {
			parts = append(parts, name+" "+strings.Join(v, "|"))
		}
	}
	add("kind", r.Kinds)
	add("tool", r.Tools)
	add("path", r.Paths)
	add("command", r.Commands)
	add("url", r.URLs)
	add("mode", r.Modes)
	if r.OutsideWorkspace != nil {
		parts = append(parts, fmt.Sprintf("outside_workspace %v", *r.OutsideWorkspace))
	}
	if len(parts) == 0 {
		return string(r.Effect) + " every request"
	}
	return string(r.Effect) + " " + strings.Join(parts, ", ")
}
