package policy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/tai-dev/tai/internal/lazyre"
	"github.com/tai-dev/tai/internal/readlimit"
	"github.com/tai-dev/tai/internal/textdist"
)

// Config is a policy: what a policy file says, plus the rule flags. The
// zero Config is the default policy: approve-reads, --non-interactive deny,
// session memory, the built-in floor on.
type Config struct {
	// Path is the file the policy came from ("" for none). Agents may not
	// write it (floor-policy-files).
	Path string
	// Mode is the default stance ("" = approve-reads).
	Mode Mode
	// NonInteractive is what an ask becomes with no terminal ("" = deny).
	NonInteractive NonInteractive
	// Remember is how far a human's "always" reaches ("" = session). The
	// engine does not act on it: whoever builds the engines passes the
	// matching Memory (see Options.Memory).
	Remember Scope
	// DefaultMode is the session mode to start in ("" = the agent's
	// default); tai run --mode overrides it.
	DefaultMode string
	// ModeAfterPlan is the mode an approved exit from plan mode moves the
	// session to ("" = wherever the agent goes).
	ModeAfterPlan string
	// NoFloor turns the whole built-in floor off (file: floor = false).
	NoFloor bool
	// FloorDisable turns single floor rules off by id (file:
	// floor_disable = ["floor-git-force-push"]).
	FloorDisable []string
	// ProtectedBranches are globs of the branches floor-git-force-push
	// protects (nil = DefaultProtectedBranches).
	ProtectedBranches []string
	// WriteRoots are directories outside the workspace where writes are
	// not "outside" for floor-write-outside (absolute, ~/ or relative to
	// the workspace).
	WriteRoots []string
	// Rules in order: flag rules first, then the file's.
	Rules []Rule
	// Elicit are fixed answers to agents' elicitations ([[elicit]]).
	Elicit []ElicitRule
	// Limits cap each process tree tai launches for an agent (limits =
	// {pids, memory}).
	Limits Limits
	// Quota is what a run does at the agent's usage limit (quota =
	// "park" | "wait"; "" = park); QuotaResumes bounds the resumes after
	// one (quota_resumes = N; 0 = the default).
	Quota        QuotaAction
	QuotaResumes int
}

// QuotaAction is what a run does when the agent hits its usage limit.
type QuotaAction string

// The quota actions.
const (
	QuotaPark QuotaAction = "park" // end the run parked, its session kept
	QuotaWait QuotaAction = "wait" // wait for the reset and resume the session
)

// ParseQuotaAction reads a quota action.
func ParseQuotaAction(s string) (QuotaAction, error) {
	switch a := QuotaAction(s); a {
	case QuotaPark, QuotaWait:
		return a, nil
	}
	return "", fmt.Errorf("%q is not park or wait", s)
}

// Flags are the command-line additions to a policy. Empty fields keep the
// file's settings; pass Approve only when --approve was given.
type Flags struct {
	Approve string   // --approve
	Allow   []string // --allow, each KIND[:PATTERN] or tool=NAME
	Ask     []string // --ask
	Deny    []string // --deny
}

// WithFlags returns c with the flags applied: --approve replaces the mode,
// and the rule flags are put before the file's rules (ids flag-1, flag-2,
// ... in the order deny, ask, allow).
func (c Config) WithFlags(f Flags) (Config, error) {
	if f.Approve != "" {
		m, err := ParseMode(f.Approve)
		if err != nil {
			return c, err
		}
		c.Mode = m
	}
	var rules []Rule
	n := 0
	for _, group := range []struct {
		effect Effect
		values []string
	}{{EffectDeny, f.Deny}, {EffectAsk, f.Ask}, {EffectAllow, f.Allow}} {
		for _, v := range group.values {
			r, err := ParseRuleFlag(group.effect, v)
			if err != nil {
				return c, err
			}
			n++
			r.ID = fmt.Sprintf("flag-%d", n)
			rules = append(rules, r)
		}
	}
	c.Rules = append(rules, c.Rules...)
	return c, nil
}

// DefaultPath is the user's policy file, $XDG_CONFIG_HOME/tai/policy.toml
// (~/.config when unset). tai loads it when it exists and --policy is not
// given. A policy file inside a workspace is never loaded by itself: a
// repository must not be able to grant its own agents permissions.
func DefaultPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "tai", "policy.toml"), nil
}

// ConfigError is a mistake in a policy file, with where it is.
type ConfigError struct {
	File string
	Line int    // 1-based; 0 when unknown
	Rule string // the rule's id, or [[rule]] #N; "" for top-level keys
	Msg  string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Rule != "" {
		b.WriteString("rule " + e.Rule + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Load reads a policy file (TOML; see the package documentation). Errors
// are *ConfigError, naming the line and the rule.
func Load(path string) (Config, error) {
	data, err := readlimit.ReadFile(path, readlimit.Config)
	if err != nil {
		return Config{}, fmt.Errorf("policy file: %w", err)
	}
	c, err := Parse(path, data)
	if err != nil {
		return c, err
	}
	if abs, err := filepath.Abs(path); err == nil {
		c.Path = abs
	}
	return c, nil
}

// Parse parses a policy file's content; name is used in errors and as
// Config.Path.
func Parse(name string, data []byte) (Config, error) {
	c := Config{Path: name}
	if err := CheckDepth(name, data, MaxDepth); err != nil {
		return c, err
	}
	text := string(data)
	var raw map[string]any
	if _, err := toml.Decode(text, &raw); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return c, &ConfigError{File: name, Line: pe.Position.Line, Msg: strings.TrimPrefix(pe.Message, "toml: ")}
		}
		return c, &ConfigError{File: name, Msg: err.Error()}
	}
	idx := indexLines(text)
	p := &parser{name: name, idx: idx}

	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return idx.topLine(keys[i]) < idx.topLine(keys[j]) })
	home, _ := os.UserHomeDir()
	for _, k := range keys {
		v := raw[k]
		errAt := func(format string, args ...any) error {
			return &ConfigError{File: name, Line: idx.topLine(k), Msg: fmt.Sprintf(format, args...)}
		}
		var err error
		switch k {
		case "version":
			if n, ok := v.(int64); !ok || n != 1 {
				return c, errAt("version = %v: this tai reads version 1", v)
			}
		case "mode":
			c.Mode, err = parseStr(p, k, v, errAt, ParseMode)
		case "non_interactive":
			c.NonInteractive, err = parseStr(p, k, v, errAt, ParseNonInteractive)
		case "remember":
			c.Remember, err = parseStr(p, k, v, errAt, ParseScope)
		case "default_mode":
			c.DefaultMode, err = p.str(v, errAt)
		case "mode_after_plan":
			c.ModeAfterPlan, err = p.str(v, errAt)
		case "floor":
			b, ok := v.(bool)
			if !ok {
				return c, errAt("floor must be true or false, not %s", tomlType(v))
			}
			c.NoFloor = !b
		case "floor_disable":
			if c.FloorDisable, err = p.list(v, errAt); err == nil {
				for _, id := range c.FloorDisable {
					if !floorKnown(id) {
						err = errAt("floor_disable: no floor rule %q (have %s)", id, floorIDs())
						break
					}
				}
			}
		case "protected_branches":
			if c.ProtectedBranches, err = p.list(v, errAt); err == nil {
				for _, b := range c.ProtectedBranches {
					if _, perr := compileTextPattern(b, false); perr != nil {
						err = errAt("protected_branches: %v", perr)
						break
					}
				}
			}
		case "write_roots":
			c.WriteRoots, err = p.list(v, errAt)
		case "limits":
			c.Limits, err = parseLimits(v, errAt)
		case "quota":
			c.Quota, err = parseStr(p, k, v, errAt, ParseQuotaAction)
		case "quota_resumes":
			n, ok := v.(int64)
			if !ok || n < 1 || n > 1000 {
				return c, errAt("quota_resumes must be a number from 1 to 1000, not %v", v)
			}
			c.QuotaResumes = int(n)
		case "rule":
			tables, ok := v.([]map[string]any)
			if !ok {
				return c, errAt("rule must be an array of tables: write each rule as [[rule]]")
			}
			seen := map[string]int{}
			for i, t := range tables {
				r, err := p.rule(i, t, home)
				if err != nil {
					return c, err
				}
				if prev, dup := seen[r.ID]; dup {
					return c, &ConfigError{File: name, Line: idx.ruleKeyLine(i, "id"), Rule: fmt.Sprintf("%q", r.ID),
						Msg: fmt.Sprintf("the id is also used by the rule on line %d", idx.ruleLine(prev))}
				}
				seen[r.ID] = i
				c.Rules = append(c.Rules, r)
			}
		case "elicit":
			tables, ok := v.([]map[string]any)
			if !ok {
				return c, errAt("elicit must be an array of tables: write each answer as [[elicit]]")
			}
			for i, t := range tables {
				r, err := p.elicitRule(i, t)
				if err != nil {
					return c, err
				}
				c.Elicit = append(c.Elicit, r)
			}
		default:
			return c, errAt("unknown key %q%s", k, suggest(k, topKeys))
		}
		if err != nil {
			return c, err
		}
	}
	return c, nil
}

var topKeys = []string{"version", "mode", "non_interactive", "remember", "default_mode", "mode_after_plan", "floor",
	"floor_disable", "protected_branches", "write_roots", "rule", "elicit", "limits", "quota", "quota_resumes"}

var ruleKeys = []string{"id", "effect", "kind", "tool", "path", "command", "url", "mode", "outside_workspace", "reason"}

func floorIDs() string {
	ids := make([]string, len(FloorRules))
	for i, r := range FloorRules {
		ids[i] = r.ID
	}
	return strings.Join(ids, ", ")
}

type parser struct {
	name string
	idx  lineIndex
}

func (p *parser) str(v any, errAt func(string, ...any) error) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", errAt("want a string, not %s", tomlType(v))
	}
	return s, nil
}

// parseStr reads a string value and parses it, placing its error at the
// key's line.
func parseStr[T any](p *parser, key string, v any, errAt func(string, ...any) error, parse func(string) (T, error)) (T, error) {
	var zero T
	s, err := p.str(v, errAt)
	if err != nil {
		return zero, err
	}
	t, err := parse(s)
	if err != nil {
		return zero, errAt("%s: %v", key, err) // the key as the file spells it
	}
	return t, nil
}

// list accepts a string or an array of strings.
func (p *parser) list(v any, errAt func(string, ...any) error) ([]string, error) {
	switch v := v.(type) {
	case string:
		return []string{v}, nil
	case []any:
		out := make([]string, 0, len(v))
		for i, x := range v {
			s, ok := x.(string)
			if !ok {
				return nil, errAt("element %d is %s; want strings", i+1, tomlType(x))
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, errAt("want a string or an array of strings, not %s", tomlType(v))
}

// rule converts and checks the i-th [[rule]].
func (p *parser) rule(i int, t map[string]any, home string) (Rule, error) {
	r := Rule{ID: fmt.Sprintf("rule-%d", i+1)}
	if id, ok := t["id"].(string); ok && strings.TrimSpace(id) != "" {
		r.ID = strings.TrimSpace(id)
	}
	label := fmt.Sprintf("%q", r.ID)
	line := p.idx.ruleLine(i)
	r.Source = fmt.Sprintf("%s:%d", p.name, line)
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool { return p.idx.ruleKeyLine(i, keys[a]) < p.idx.ruleKeyLine(i, keys[b]) })
	for _, k := range keys {
		v := t[k]
		errAt := func(format string, args ...any) error {
			return &ConfigError{File: p.name, Line: p.idx.ruleKeyLine(i, k), Rule: label, Msg: fmt.Sprintf(format, args...)}
		}
		var err error
		switch k {
		case "id":
			var s string
			if s, err = p.str(v, errAt); err == nil && !validID().MatchString(strings.TrimSpace(s)) {
				err = errAt("id %q: use letters, digits, '.', '_' and '-'", s)
			}
		case "effect":
			var s string
			if s, err = p.str(v, errAt); err == nil {
				r.Effect = Effect(strings.ToLower(strings.TrimSpace(s)))
				if cerr := checkEffect(r.Effect); cerr != nil {
					err = errAt("%v", cerr)
				}
			}
		case "kind":
			r.Kinds, err = p.list(v, errAt)
		case "tool":
			r.Tools, err = p.list(v, errAt)
		case "path":
			r.Paths, err = p.list(v, errAt)
		case "command":
			r.Commands, err = p.list(v, errAt)
		case "url":
			r.URLs, err = p.list(v, errAt)
		case "mode":
			r.Modes, err = p.list(v, errAt)
		case "outside_workspace":
			b, ok := v.(bool)
			if !ok {
				err = errAt("outside_workspace must be true or false, not %s", tomlType(v))
			}
			r.OutsideWorkspace = &b
		case "reason":
			r.Reason, err = p.str(v, errAt)
		default:
			err = errAt("unknown key %q%s", k, suggest(k, ruleKeys))
		}
		if err != nil {
			return r, err
		}
	}
	if r.Effect == "" {
		return r, &ConfigError{File: p.name, Line: line, Rule: label, Msg: `no effect: add effect = "allow", "ask" or "deny"`}
	}
	if _, err := compile(r, home); err != nil {
		// compile's errors start with the field they are about.
		field, _, _ := strings.Cut(err.Error(), " ")
		field = strings.TrimSuffix(field, ":")
		return r, &ConfigError{File: p.name, Line: p.idx.ruleKeyLine(i, field), Rule: label, Msg: err.Error()}
	}
	return r, nil
}

var validID = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	case []map[string]any:
		return "an array of tables"
	}
	return fmt.Sprintf("%T", v)
}

// suggest proposes the closest known key for a misspelt one.
func suggest(k string, known []string) string {
	best := textdist.Closest(k, known)
	if best == "" {
		return " (known keys: " + strings.Join(known, ", ") + ")"
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// lineIndex finds where keys and [[rule]] tables are in the file: the TOML
// decoder keeps positions to itself, and errors must name lines.
type lineIndex struct {
	lines      []string
	firstTable int   // index of the first table header line; len(lines) if none
	rules      []int // index of each [[rule]] header line
	tables     []int // index of every table header line
}

var (
	ruleHeader  = lazyre.New(`^\s*\[\[\s*rule\s*\]\]`)
	tableHeader = lazyre.New(`^\s*\[`)
)

func indexLines(text string) lineIndex {
	idx := lineIndex{lines: strings.Split(text, "\n")}
	idx.firstTable = len(idx.lines)
	inMultiline := false
	for i, l := range idx.lines {
		// Skip the inside of multi-line strings: a line there is not a
		// header even if it starts with "[".
		if n := strings.Count(l, `"""`) + strings.Count(l, `'''`); n%2 == 1 {
			inMultiline = !inMultiline
			continue
		}
		if inMultiline {
			continue
		}
		if !tableHeader().MatchString(l) {
			continue
		}
		if idx.firstTable == len(idx.lines) {
			idx.firstTable = i
		}
		idx.tables = append(idx.tables, i)
		if ruleHeader().MatchString(l) {
			idx.rules = append(idx.rules, i)
		}
	}
	return idx
}

func keyLineRe(key string) *regexp.Regexp {
	q := regexp.QuoteMeta(key)
	return regexp.MustCompile(`^\s*(` + q + `|"` + q + `"|'` + q + `')\s*=`)
}

// find returns the 1-based line of key between lines [from, to), or 0.
func (x lineIndex) find(key string, from, to int) int {
	re := keyLineRe(key)
	for i := from; i < to && i < len(x.lines); i++ {
		if re.MatchString(x.lines[i]) {
			return i + 1
		}
	}
	return 0
}

func (x lineIndex) topLine(key string) int {
	if l := x.find(key, 0, x.firstTable); l > 0 {
		return l
	}
	if key == "rule" && len(x.rules) > 0 {
		return x.rules[0] + 1
	}
	return 0
}

// ruleLine is the 1-based line of the i-th [[rule]] header, or 0.
func (x lineIndex) ruleLine(i int) int {
	if i < len(x.rules) {
		return x.rules[i] + 1
	}
	return 0
}

// ruleKeyLine is the line of key inside the i-th rule, else the rule's.
func (x lineIndex) ruleKeyLine(i int, key string) int {
	if i >= len(x.rules) {
		return 0
	}
	start := x.rules[i]
	end := len(x.lines)
	for _, t := range x.tables {
		if t > start {
			end = t
			break
		}
	}
	if l := x.find(key, start+1, end); l > 0 {
		return l
	}
	return start + 1
}
