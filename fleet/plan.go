package fleet

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/tai-dev/tai/internal/lazyre"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tai-dev/tai/builtin"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/internal/readlimit"
	"github.com/tai-dev/tai/internal/textdist"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/preset"
	"github.com/tai-dev/tai/worktree"
)

// Plan is a fleet plan file (YAML):
//
//	name: demo
//	goal: "Add a CLI"              # context for the answerer
//	base: HEAD                     # commit the first tasks start from
//	target: tai-fleet/demo         # branch results are fast-forwarded into (never a checked-out one)
//	check: "go test ./..."         # run in each task's worktree after rebasing, before merging, confined like a task
//	check_sandbox: off             # only if the check cannot run confined: tai warns
//	check_timeout: 10m             # a check still running then is killed and fails
//	merge: false                   # keep every result on its branch, scored by the check (tai compare)
//	concurrency: 4
//	fail_fast: false
//	max_questions: 3
//	defaults: {agent: builtin, driver: acp}  # agent, agent_cmd, script, driver, model, mode
//	policy: {approve: all, allow: ["execute:go test *"], ask: [], deny: ["execute:git push *"]}
//	budget: {tokens: 100000, turns: 50, wall_time: 30m, cost: 5, soft: 0.8}
//	answerer: {agent: claude, prompt: "You are the research assistant of ..."}
//	tasks:
//	  - id: setup
//	    prompt: "Lay out the package"
//	    owns: ["go.mod", "cmd/**"]     # the files it may change
//	  - id: build
//	    agent: builtin              # preset, or agent_cmd: "..."; script: F for the built-in agent
//	    prompt: "Build it on {{ .Tasks.setup.Diff }}"  # or prompt_file: build.md; Go template over .Tasks.<dep>
//	    depends_on: [setup]
//	    worktree: new               # new | none | shared:<task>
//	    policy: {approve: reads, allow: ["execute:go test *"]}
//	    budget: {tokens: 2000, turns: 3}
//	    retries: 1
//	  - id: fix
//	    prompt: "Fix the flaky test"
//	    compare: [claude, {id: mine, agent_cmd: "my-agent --acp"}]  # tasks fix-claude, fix-mine: scored, kept; tai compare pick RUN fix-claude
//
// Everything a task needs is checked when the plan is loaded, before
// anything runs: keys, ids and dependencies, agents (a known preset or an
// agent_cmd), script files (they must exist and parse), prompt templates
// and the policies as each task will have them; each problem is reported
// with the file and line.
type Plan struct {
	Name   string `yaml:"name" json:"name"`
	Goal   string `yaml:"goal" json:"goal,omitempty"`
	Base   string `yaml:"base" json:"base,omitempty"`
	Target string `yaml:"target" json:"target,omitempty"`
	Check  string `yaml:"check" json:"check,omitempty"`
	// CheckSandbox "off" runs the check unconfined (tai warns); "" confines
	// it as the tasks' agents are.
	CheckSandbox string `yaml:"check_sandbox" json:"check_sandbox,omitempty"`
	// CheckTimeout kills a check still running after it; the check fails.
	CheckTimeout Duration `yaml:"check_timeout" json:"check_timeout,omitempty"`
	// Merge false keeps each finished task on its branch, with its check
	// run there as its score, for a pick (tai compare); nil merges.
	Merge        *bool     `yaml:"merge" json:"merge,omitempty"`
	Concurrency  int       `yaml:"concurrency" json:"concurrency,omitempty"`
	FailFast     bool      `yaml:"fail_fast" json:"fail_fast,omitempty"`
	MaxQuestions int       `yaml:"max_questions" json:"max_questions,omitempty"`
	Defaults     AgentSpec `yaml:"defaults" json:"defaults"`
	Policy       Policy    `yaml:"policy" json:"policy"`
	Budget       Limits    `yaml:"budget" json:"budget"`
	Quota        Quota     `yaml:"quota" json:"quota"`
	Answerer     *Answerer `yaml:"answerer" json:"answerer,omitempty"`
	Tasks        []Task    `yaml:"tasks" json:"tasks"`

	// Dir is the plan file's directory: prompt_file and script are relative
	// to it.
	Dir  string `yaml:"-" json:"-"`
	File string `yaml:"-" json:"-"`

	lines map[string]int // line of each top-level key, for errors
}

// AgentSpec says which agent runs and how.
type AgentSpec struct {
	Agent    string      `yaml:"agent" json:"agent,omitempty"`
	AgentCmd string      `yaml:"agent_cmd" json:"agent_cmd,omitempty"`
	Script   string      `yaml:"script" json:"script,omitempty"` // built-in agent script
	Driver   driver.Name `yaml:"driver" json:"driver,omitempty"`
	Model    string      `yaml:"model" json:"model,omitempty"`
	Mode     string      `yaml:"mode" json:"mode,omitempty"`
	// Account names whose usage limit the task spends: tasks of one
	// account park together. Default: the agent and a hash of the
	// credentials its preset names (quota.AccountOf).
	Account string `yaml:"account" json:"account,omitempty"`
}

// Policy is a plan's or task's permission policy.
type Policy struct {
	Approve        string   `yaml:"approve" json:"approve,omitempty"`
	NonInteractive string   `yaml:"non_interactive" json:"non_interactive,omitempty"`
	Allow          []string `yaml:"allow" json:"allow,omitempty"`
	Ask            []string `yaml:"ask" json:"ask,omitempty"`
	Deny           []string `yaml:"deny" json:"deny,omitempty"`
	AllowDenials   bool     `yaml:"allow_denials" json:"allow_denials,omitempty"`
}

// Answerer is the agent that answers the questions tasks ask.
type Answerer struct {
	AgentSpec `yaml:",inline"`
	Prompt    string `yaml:"prompt" json:"prompt,omitempty"`
}

// Task is one unit of a plan.
type Task struct {
	ID         string `yaml:"id" json:"id"`
	AgentSpec  `yaml:",inline"`
	Prompt     string   `yaml:"prompt" json:"prompt,omitempty"`
	PromptFile string   `yaml:"prompt_file" json:"prompt_file,omitempty"`
	DependsOn  []string `yaml:"depends_on" json:"depends_on,omitempty"`
	Worktree   string   `yaml:"worktree" json:"worktree,omitempty"`
	Owns       []string `yaml:"owns" json:"owns,omitempty"` // globs of the files the task may change; others fail it before its merge
	Policy     *Policy  `yaml:"policy" json:"policy,omitempty"`
	Budget     Limits   `yaml:"budget" json:"budget"`
	Retries    int      `yaml:"retries" json:"retries,omitempty"`
	// Compare runs the task once per agent (compare: [claude, {id: b,
	// script: b.yaml}]), as tasks ID-AGENT that are scored, not merged;
	// tai compare pick RUN ID-AGENT merges one.
	Compare []CompareAgent `yaml:"compare" json:"compare,omitempty"`
	// CompareOf names the task a candidate was made from by compare:
	// (set by the plan's loading, kept in the run's plan copy); such a
	// task is never merged by the fleet.
	CompareOf string `yaml:"compare_of" json:"compare_of,omitempty"`

	Line int `yaml:"-" json:"-"`

	policyLine int // where its policy: is, for errors
}

// CompareAgent is one candidate of a task's compare: a preset name, or
// a mapping with an id and an agent spec.
type CompareAgent struct {
	ID        string `yaml:"id" json:"id,omitempty"`
	AgentSpec `yaml:",inline"`
}

// UnmarshalYAML reads "claude" as {agent: claude}.
func (c *CompareAgent) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		c.Agent = n.Value
		return nil
	}
	type plain CompareAgent
	return n.Decode((*plain)(c))
}

// MarshalYAML writes the mapping form.
func (c CompareAgent) MarshalYAML() (any, error) {
	type plain CompareAgent
	return plain(c), nil
}

// Limits are budget limits; zero means none.
type Limits struct {
	Tokens   int64    `yaml:"tokens" json:"tokens,omitempty"`
	Turns    int      `yaml:"turns" json:"turns,omitempty"`
	WallTime Duration `yaml:"wall_time" json:"wall_time,omitempty"`
	Cost     float64  `yaml:"cost" json:"cost,omitempty"`
	// Soft is the fraction of a fleet limit at which a warning is emitted
	// (default 0.8).
	Soft float64 `yaml:"soft" json:"soft,omitempty"`
}

// Duration is a time.Duration written as "30m" in YAML and JSON.
type Duration time.Duration

// UnmarshalYAML reads "90s", "30m".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: duration %q: %w", n.Line, n.Value, err)
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes "30m0s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads "30m".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = Duration(v)
	return err
}

// PlanError is a plan validation error, with the line it is about.
type PlanError struct {
	File string
	Line int
	Msg  string
}

func (e *PlanError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// PlanErrors is every problem found in a plan.
type PlanErrors []*PlanError

func (es PlanErrors) Error() string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// planKeys are the keys a plan's mapping of this kind may hold.
func planKeys(kind string) []string {
	switch kind {
	case "plan":
		return []string{"name", "goal", "base", "target", "check", "check_sandbox", "check_timeout", "merge", "concurrency", "fail_fast", "max_questions", "defaults", "policy", "budget", "quota", "answerer", "tasks"}
	case "agent":
		return []string{"agent", "agent_cmd", "script", "driver", "model", "mode", "account"}
	case "answerer":
		return []string{"agent", "agent_cmd", "script", "driver", "model", "mode", "prompt"}
	case "policy":
		return []string{"approve", "non_interactive", "allow", "ask", "deny", "allow_denials"}
	case "budget":
		return []string{"tokens", "turns", "wall_time", "cost", "soft"}
	case "quota":
		return []string{"wait", "max_resumes", "stagger"}
	case "task":
		return []string{"id", "agent", "agent_cmd", "script", "driver", "model", "mode", "account", "prompt", "prompt_file", "depends_on", "worktree", "owns", "policy", "budget", "retries", "compare", "compare_of"}
	}
	return nil
}

// LoadPlan reads and validates a plan file.
func LoadPlan(path string) (*Plan, error) {
	abs, _ := filepath.Abs(path)
	return loadPlanIn(abs, filepath.Dir(abs))
}

// loadPlanIn loads a plan whose relative paths (scripts) are anchored at
// dir: a run's copy of a plan is anchored where the plan came from.
func loadPlanIn(path, dir string) (*Plan, error) {
	b, err := readlimit.ReadFile(path, readlimit.Plan)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	return parsePlan(b, path, dir)
}

// ParsePlan parses and validates a plan; file names it in errors and
// anchors relative paths.
func ParsePlan(data []byte, file string) (*Plan, error) {
	return parsePlan(data, file, filepath.Dir(file))
}

func parsePlan(data []byte, file, dir string) (*Plan, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line, msg := yamlSyntax(data, err)
		return nil, &PlanError{File: file, Line: line, Msg: msg}
	}
	if len(doc.Content) == 0 {
		return nil, &PlanError{File: file, Msg: "empty plan"}
	}
	root := doc.Content[0]
	var errs PlanErrors
	add := func(line int, f string, a ...any) {
		errs = append(errs, &PlanError{File: file, Line: line, Msg: fmt.Sprintf(f, a...)})
	}
	checkKeys(root, "plan", "", add)
	p := &Plan{File: file, Dir: dir}
	if err := root.Decode(p); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			for _, m := range te.Errors {
				add(yamlTypeError(root, m))
			}
			return nil, errs
		}
		add(root.Line, "%v", err)
		return nil, errs
	}
	// Lines, for errors found after decoding.
	p.lines = map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		p.lines[root.Content[i].Value] = root.Content[i].Line
	}
	if tn := mapValue(root, "tasks"); tn != nil && tn.Kind == yaml.SequenceNode {
		for i, n := range tn.Content {
			if i < len(p.Tasks) {
				p.Tasks[i].Line = n.Line
				p.Tasks[i].policyLine = n.Line
				if pk := mapKey(n, "policy"); pk != nil {
					p.Tasks[i].policyLine = pk.Line
				}
			}
		}
	}
	p.expandCompare(add)
	p.validate(add)
	if len(errs) > 0 {
		return nil, errs
	}
	return p, nil
}

// expandCompare replaces each task with a compare: list by one task per
// candidate, ID-NAME (NAME the candidate's id, else its preset, else
// cmdN), the same prompt, owns, policy and budget, marked CompareOf.
func (p *Plan) expandCompare(add func(int, string, ...any)) {
	var tasks []Task
	compared := map[string]bool{}
	for _, t := range p.Tasks {
		if len(t.Compare) == 0 {
			tasks = append(tasks, t)
			continue
		}
		compared[t.ID] = true
		if len(t.Compare) < 2 {
			add(t.Line, "task %q: compare: needs two agents or more", t.ID)
		}
		if t.Agent != "" || t.AgentCmd != "" || t.Script != "" {
			add(t.Line, "task %q: compare: names the agents; the task has no agent:, agent_cmd: or script: of its own", t.ID)
		}
		for i, c := range t.Compare {
			name := c.ID
			if name == "" {
				name = c.Agent
			}
			if name == "" {
				name = fmt.Sprintf("cmd%d", i+1)
			}
			n := t
			n.ID, n.AgentSpec, n.Compare, n.CompareOf = t.ID+"-"+name, c.AgentSpec, nil, t.ID
			tasks = append(tasks, n)
		}
	}
	for _, t := range tasks {
		for _, d := range t.DependsOn {
			if compared[d] {
				add(t.Line, "task %q: depends_on %q, a compare: nothing can depend on it (its result is the one picked later)", t.ID, d)
			}
		}
	}
	p.Tasks = tasks
}

// Merges says whether the fleet merges this task when it is done: not
// under merge: false, nor a compare's candidate.
func (t *Task) Merges(p *Plan) bool { return p.Merges() && t.CompareOf == "" }

// yamlLine is the "line N: " the YAML decoder puts before its messages.
var yamlLine = lazyre.New(`^(?:yaml: )?line (\d+): `)

// yamlParserProblems are the decoder's parser (not scanner) errors, whose
// line it reports counting from 0 (go.yaml.in/yaml/v3 decode.go, fail).
var yamlParserProblems = []string{"did not find expected <stream-start>", "did not find expected <document start>",
	"did not find expected node content", "did not find expected '-' indicator", "did not find expected key",
	"did not find expected ',' or ']'", "did not find expected ',' or '}'", "found duplicate %TAG directive",
	"found duplicate %YAML directive", "found incompatible YAML document"}

// yamlSyntax is a plan's YAML syntax error as a line (0: unknown) and the
// message without the decoder's prefixes. The decoder's parser errors give
// the line where the enclosing block starts (its context mark), not the bad
// line, so those are located by badLine.
func yamlSyntax(data []byte, err error) (int, string) {
	msg := err.Error()
	m := yamlLine().FindStringSubmatch(msg)
	if m == nil {
		return 0, strings.TrimPrefix(msg, "yaml: ")
	}
	line, _ := strconv.Atoi(m[1])
	msg = msg[len(m[0]):]
	for _, p := range yamlParserProblems {
		if strings.HasSuffix(msg, p) {
			line++
			if bad := badLine(data, line); bad > line {
				return bad, fmt.Sprintf("%s (in the block that starts at line %d)", msg, line)
			}
			break
		}
	}
	return line, msg
}

// maxBadLineScan bounds badLine's parses (each of a prefix), so a large plan
// with an error far from its block's start costs at most this many.
const maxBadLineScan = 500

// badLine is the first line, from the block starting at from, whose prefix
// of the plan no longer parses: the line the parser stumbled on. A prefix of
// a block document ends its blocks cleanly, so only a bad line fails it.
// 0 when none is found.
func badLine(data []byte, from int) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	for n := max(from, 1); n <= len(lines) && n < from+maxBadLineScan; n++ {
		var v yaml.Node
		if yaml.Unmarshal(bytes.Join(lines[:n], nil), &v) != nil {
			return n
		}
	}
	return 0
}

// yamlTypeError places one of the decoder's type errors ("line 5: cannot
// unmarshal !!str `many` into int") on its line, named by its key as the
// plan spells it: "retries: cannot unmarshal !!str `many` into int".
func yamlTypeError(root *yaml.Node, m string) (int, string, string) {
	loc := yamlLine().FindStringSubmatch(m)
	if loc == nil {
		return 0, "%s", m
	}
	line, _ := strconv.Atoi(loc[1])
	msg := m[len(loc[0]):]
	if key := keyAt(root, line); key != "" {
		msg = key + ": " + msg
	}
	return line, "%s", msg
}

// keyAt is the key whose value starts on line (its innermost), or "".
func keyAt(n *yaml.Node, line int) string {
	key := ""
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if v := n.Content[i+1]; v.Line == line {
				key = n.Content[i].Value
			}
		}
	}
	for _, c := range n.Content {
		if k := keyAt(c, line); k != "" {
			key = k
		}
	}
	return key
}

func mapKey(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i]
		}
	}
	return nil
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// checkKeys reports unknown keys, with a suggestion, recursively.
func checkKeys(n *yaml.Node, kind, where string, add func(int, string, ...any)) {
	if n.Kind != yaml.MappingNode {
		if kind == "plan" {
			add(n.Line, "a plan is a mapping (name:, tasks:, ...)")
		}
		return
	}
	allowed := planKeys(kind)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !contains(allowed, k.Value) {
			msg := fmt.Sprintf("%sunknown key %q", where, k.Value)
			if s := textdist.Closest(k.Value, allowed); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			add(k.Line, "%s", msg)
			continue
		}
		switch {
		case kind == "plan" && k.Value == "defaults":
			checkKeys(v, "agent", "defaults: ", add)
		case k.Value == "policy":
			checkKeys(v, "policy", where+"policy: ", add)
		case k.Value == "budget":
			checkKeys(v, "budget", where+"budget: ", add)
		case kind == "plan" && k.Value == "quota":
			checkKeys(v, "quota", "quota: ", add)
		case kind == "plan" && k.Value == "answerer":
			checkKeys(v, "answerer", "answerer: ", add)
		case kind == "plan" && k.Value == "tasks":
			if v.Kind != yaml.SequenceNode {
				add(v.Line, "tasks must be a list")
				continue
			}
			for j, t := range v.Content {
				id := ""
				if idn := mapValue(t, "id"); idn != nil {
					id = idn.Value
				}
				checkKeys(t, "task", fmt.Sprintf("task %d %q: ", j+1, id), add)
			}
		}
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

var taskRefRE = lazyre.New(`\.Tasks\.([A-Za-z0-9_]+)|index\s+\.Tasks\s+"([^"]+)"`)

// adder records a mistake in a plan at a line.
type adder func(line int, format string, args ...any)

func (p *Plan) validate(add adder) {
	if p.Name == "" {
		p.Name = strings.TrimSuffix(filepath.Base(p.File), filepath.Ext(p.File))
	}
	if p.Concurrency < 0 {
		add(0, "concurrency must be >= 0")
	}
	if p.Target != "" && !validRef(p.Target) {
		add(0, "target %q is not a valid branch name", p.Target)
	}
	if len(p.Tasks) == 0 {
		add(0, "no tasks")
	}
	switch p.CheckSandbox {
	case "", CheckSandboxOff:
	default:
		add(p.lines["check_sandbox"], "check_sandbox %q: the only value is off (leave it out to confine the check)", p.CheckSandbox)
	}
	checkLimits(add, 0, "", p.Budget)
	if q := p.Quota; q.Wait < 0 || q.MaxResumes < 0 || q.Stagger < 0 {
		add(p.lines["quota"], "quota: wait, max_resumes and stagger must be >= 0")
	}
	p.checkAgent(add, p.lines["defaults"], "defaults: ", p.Defaults)
	if p.Answerer != nil {
		p.checkAgent(add, p.lines["answerer"], "answerer: ", p.Answerer.AgentSpec)
	}
	if _, err := checkPolicy(p.effectivePolicy(nil)); err != nil {
		add(p.lines["policy"], "policy: %v", err)
	}
	byID := map[string]*Task{}
	for i := range p.Tasks {
		t := &p.Tasks[i]
		switch {
		case t.ID == "":
			add(t.Line, "task %d has no id", i+1)
			continue
		case !worktree.ValidName(t.ID):
			add(t.Line, "task id %q: use letters, digits, _, - and . (it names a branch and a directory)", t.ID)
		case byID[t.ID] != nil:
			add(t.Line, "task id %q is used twice (first at line %d)", t.ID, byID[t.ID].Line)
			continue
		}
		byID[t.ID] = t
		p.checkTask(add, t)
	}
	for i := range p.Tasks {
		if t := &p.Tasks[i]; t.ID != "" {
			p.checkLinks(add, t, byID)
		}
	}
	if cyc := p.cycle(byID); len(cyc) > 0 {
		add(byID[cyc[0]].Line, "dependency cycle: %s", strings.Join(cyc, " -> "))
	}
}

func checkLimits(add adder, line int, where string, l Limits) {
	if l.Tokens < 0 || l.Turns < 0 || l.WallTime < 0 || l.Cost < 0 || l.Soft < 0 || l.Soft > 1 {
		add(line, "%sbudget: limits must be >= 0 and soft in [0,1]", where)
	}
}

// checkAgent checks an agent spec as far as a plan can without running
// it: the resolver (package agentspec) finds the rest when the task runs.
func (p *Plan) checkAgent(add adder, line int, where string, a AgentSpec) {
	if a.Agent != "" && a.AgentCmd != "" && a.Agent != "builtin" && a.Script != "" {
		add(line, "%sscript is only for the built-in agent", where)
	}
	if a.Script != "" && a.AgentCmd != "" {
		add(line, "%sscript and agent_cmd are exclusive", where)
	}
	if a.AgentCmd != "" {
		if _, _, err := preset.Custom(a.AgentCmd); err != nil {
			add(line, "%sagent_cmd: %v", where, err)
		}
	} else if a.Agent != "" {
		known, ok := preset.Lookup(a.Agent)
		if !ok {
			add(line, "%sunknown agent %q (known: %s; or set agent_cmd)", where, a.Agent, strings.Join(preset.Names(), ", "))
		} else if a.Script != "" && !known.Builtin {
			add(line, "%sscript is only for the built-in agent, not %s", where, a.Agent)
		}
	}
	if a.Driver != "" && !a.Driver.Known() {
		known := make([]string, 0, len(driver.Names()))
		for _, n := range driver.Names() {
			known = append(known, string(n))
		}
		add(line, "%sunknown driver %q (drivers: %s)", where, a.Driver, strings.Join(known, ", "))
	}
	if a.Script != "" {
		if _, err := builtin.LoadScript(p.path(a.Script)); err != nil {
			add(line, "%sscript: %v", where, err)
		}
	}
}

// checkTask checks one task on its own (its prompt file is inlined).
func (p *Plan) checkTask(add adder, t *Task) {
	where := fmt.Sprintf("task %q: ", t.ID)
	if (t.Prompt == "") == (t.PromptFile == "") {
		add(t.Line, "%sexactly one of prompt and prompt_file is needed", where)
	}
	if t.PromptFile != "" {
		b, err := readlimit.ReadFile(p.path(t.PromptFile), readlimit.Plan)
		if err != nil {
			add(t.Line, "%sprompt_file: %v", where, err)
		} else {
			t.Prompt, t.PromptFile = string(b), ""
		}
	}
	if _, err := template.New(t.ID).Option("missingkey=error").Parse(t.Prompt); err != nil {
		add(t.Line, "%sprompt template: %v", where, err)
	}
	p.checkAgent(add, t.Line, where, t.AgentSpec)
	if t.Policy != nil {
		if _, err := checkPolicy(p.effectivePolicy(t.Policy)); err != nil {
			add(t.policyLine, "%spolicy: %v", where, err)
		}
	}
	checkLimits(add, t.Line, where, t.Budget)
	if t.Retries < 0 {
		add(t.Line, "%sretries must be >= 0", where)
	}
	if _, err := policy.CompilePathSet(t.Owns); err != nil {
		add(t.Line, "%sowns: %v", where, err)
	}
	switch wt := t.Worktree; {
	case wt == "" || wt == "new" || wt == "none":
	case strings.HasPrefix(wt, "shared:"):
	default:
		add(t.Line, "%sworktree must be new, none or shared:<task>, not %q", where, wt)
	}
}

// checkLinks checks what a task says of others: its dependencies, the
// worktree it shares, the results its prompt uses.
func (p *Plan) checkLinks(add adder, t *Task, byID map[string]*Task) {
	where := fmt.Sprintf("task %q: ", t.ID)
	for _, d := range t.DependsOn {
		if byID[d] == nil {
			add(t.Line, "%sdepends_on %q: no such task%s", where, d, suggest(d, byID))
		} else if d == t.ID {
			add(t.Line, "%sdepends on itself", where)
		}
	}
	if s, ok := strings.CutPrefix(t.Worktree, "shared:"); ok {
		o := byID[s]
		switch {
		case o == nil:
			add(t.Line, "%sworktree shared:%s: no such task%s", where, s, suggest(s, byID))
		case !p.reaches(t.ID, s, byID):
			// Sharing a directory is only safe if the two never run at once.
			add(t.Line, "%sworktree shared:%s needs %q in its depends_on (directly or not), so they never run at once", where, s, s)
		case o.Worktree == "none" || strings.HasPrefix(o.Worktree, "shared:"):
			add(t.Line, "%sworktree shared:%s: that task has no worktree of its own", where, s)
		}
	}
	for _, m := range taskRefRE().FindAllStringSubmatch(t.Prompt, -1) {
		ref := m[1] + m[2]
		if !contains(t.DependsOn, ref) {
			add(t.Line, "%sprompt uses the result of %q, which is not in its depends_on", where, ref)
		}
	}
}

// effectivePolicy is a task's policy: the plan's, then the task's
// overrides.
func (p *Plan) effectivePolicy(tp *Policy) Policy {
	pol := p.Policy
	if tp != nil {
		if tp.Approve != "" {
			pol.Approve = tp.Approve
		}
		if tp.NonInteractive != "" {
			pol.NonInteractive = tp.NonInteractive
		}
		pol.Allow = append(append([]string{}, tp.Allow...), pol.Allow...)
		pol.Ask = append(append([]string{}, tp.Ask...), pol.Ask...)
		pol.Deny = append(append([]string{}, tp.Deny...), pol.Deny...)
		pol.AllowDenials = pol.AllowDenials || tp.AllowDenials
	}
	return pol
}

// checkPolicy compiles a policy as the engine will.
func checkPolicy(p Policy) (policy.Config, error) {
	var cfg policy.Config
	cfg, err := cfg.WithFlags(policy.Flags{Approve: p.Approve, Allow: p.Allow, Ask: p.Ask, Deny: p.Deny})
	if err != nil {
		return cfg, err
	}
	if p.NonInteractive != "" {
		if _, err := policy.ParseNonInteractive(p.NonInteractive); err != nil {
			return cfg, fmt.Errorf("non_interactive: %w", err)
		}
	}
	return cfg, nil
}

func suggest(s string, byID map[string]*Task) string {
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	if c := textdist.Closest(s, ids); c != "" {
		return fmt.Sprintf(" (did you mean %q?)", c)
	}
	return ""
}

func validRef(s string) bool {
	return s != "" && !strings.ContainsAny(s, " ~^:?*[\\") && !strings.Contains(s, "..") && !strings.HasPrefix(s, "-") && !strings.HasSuffix(s, "/") && !strings.HasSuffix(s, ".lock")
}

// reaches: from depends (transitively) on to.
func (p *Plan) reaches(from, to string, byID map[string]*Task) bool {
	seen := map[string]bool{}
	var walk func(string) bool
	walk = func(id string) bool {
		if seen[id] {
			return false
		}
		seen[id] = true
		t := byID[id]
		if t == nil {
			return false
		}
		for _, d := range t.DependsOn {
			if d == to || walk(d) {
				return true
			}
		}
		return false
	}
	return walk(from)
}

// cycle returns a dependency cycle, or nil.
func (p *Plan) cycle(byID map[string]*Task) []string {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var found []string
	var visit func(id string) bool
	visit = func(id string) bool {
		color[id] = grey
		stack = append(stack, id)
		for _, d := range byID[id].DependsOn {
			if byID[d] == nil {
				continue
			}
			switch color[d] {
			case grey:
				for i, s := range stack {
					if s == d {
						found = append(append([]string{}, stack[i:]...), d)
					}
				}
				return true
			case white:
				if visit(d) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[id] = black
		return false
	}
	for _, t := range p.Tasks {
		if byID[t.ID] != nil && color[t.ID] == white && visit(t.ID) {
			return found
		}
	}
	return nil
}

func (p *Plan) path(rel string) string {
	if filepath.IsAbs(rel) {
		return rel
	}
	return filepath.Join(p.Dir, rel)
}

// Order returns the task ids in a dependency order (plan order among
// independent tasks).
func (p *Plan) Order() []string {
	done := map[string]bool{}
	var out []string
	for len(out) < len(p.Tasks) {
		progress := false
		for _, t := range p.Tasks {
			if done[t.ID] {
				continue
			}
			ready := true
			for _, d := range t.DependsOn {
				ready = ready && done[d]
			}
			if ready {
				done[t.ID] = true
				out = append(out, t.ID)
				progress = true
			}
		}
		if !progress {
			break // a cycle; validate reports it
		}
	}
	return out
}

// Task returns the task with id.
func (p *Plan) Task(id string) *Task {
	for i := range p.Tasks {
		if p.Tasks[i].ID == id {
			return &p.Tasks[i]
		}
	}
	return nil
}

func marshalPlan(p *Plan) ([]byte, error) {
	b, err := yaml.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	return append([]byte("# the plan of this run, as it was started (prompt files inlined)\n"), b...), nil
}

// TaskResult is what a finished task gives its dependents' prompt
// templates: {{ .Tasks.build.Message }}, .Branch, .Diff, .Status, .Files.
type TaskResult struct {
	Message string
	Branch  string
	Diff    string // summary: files changed, +/-
	Patch   string // the unified diff, cut
	Status  TaskStatus
	Files   []string
}

// RenderPrompt fills a task's prompt template.
func RenderPrompt(t *Task, plan *Plan, results map[string]TaskResult) (string, error) {
	tpl, err := template.New(t.ID).Option("missingkey=error").Parse(t.Prompt)
	if err != nil {
		return "", fmt.Errorf("task %s: prompt template: %w", t.ID, err)
	}
	var b bytes.Buffer
	data := map[string]any{"Tasks": results, "Task": map[string]any{"ID": t.ID}, "Plan": map[string]any{"Name": plan.Name, "Goal": plan.Goal}}
	if err := tpl.Execute(&b, data); err != nil {
		return "", fmt.Errorf("task %s: prompt template: %w", t.ID, err)
	}
	return b.String(), nil
}
