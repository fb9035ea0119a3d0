package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/tai-dev/tai/agentspec"
	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/fleet"
	"github.com/tai-dev/tai/internal/cut"
	"github.com/tai-dev/tai/internal/safetext"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/worktree"
)

// CompareFlags are `tai compare`'s flags. A compare is a fleet run (the
// fleet flags) of one task per candidate, with merge: false.
type CompareFlags struct {
	Fleet        FleetFlags
	Agents       []string // presets
	AgentCmds    []string // [NAME=]CMD
	Scripts      []string // [NAME=]FILE: the built-in agent with this script
	PromptFile   string
	Check        string
	CheckTimeout time.Duration
	Owns         []string
	Approve      string
	Tokens       int64   // per candidate
	Cost         float64 // per candidate
	WallTime     time.Duration
	Diff         string // "": none; "all": each candidate's; "a,b": between two
	Pick         string // "" | best
}

// Candidate is one agent's result in a compare: measured by tai (the
// check, git's diffstat, the usage accounting, the audit log), never as
// the agent says.
type Candidate struct {
	Agent      string             `json:"agent"`   // the candidate's name (its task id)
	Command    string             `json:"command"` // preset or command
	Status     fleet.TaskStatus   `json:"status"`
	Reason     string             `json:"reason,omitempty"`
	Check      *fleet.CheckResult `json:"check"` // null: no --check, or the agent did not finish
	Files      int                `json:"files"`
	Insertions int                `json:"insertions"`
	Deletions  int                `json:"deletions"`
	OwnsHeld   *bool              `json:"owns_held,omitempty"` // with --owns
	Tokens     int64              `json:"tokens"`
	Cost       float64            `json:"cost"`
	ElapsedMS  int64              `json:"elapsed_ms"`
	Denials    int                `json:"denials"`
	Branch     string             `json:"branch,omitempty"`
	Worktree   string             `json:"worktree,omitempty"`
}

// CompareResult is `tai compare -o json`'s document.
type CompareResult struct {
	Run        string          `json:"run"`
	Status     fleet.RunStatus `json:"status"`
	ExitCode   int             `json:"exit_code"`
	Repo       string          `json:"repo"`
	Base       string          `json:"base"`
	Target     string          `json:"target"`
	Check      string          `json:"check,omitempty"`
	Candidates []Candidate     `json:"candidates"`
	Best       string          `json:"best,omitempty"` // by the check, then the smallest diff; "" on a tie or none
	Why        string          `json:"why"`            // how best was chosen, or why none was
	Picked     string          `json:"picked,omitempty"`
	State      string          `json:"state"`
	Audit      string          `json:"audit"`
	Error      string          `json:"error,omitempty"`
}

// Compare runs `tai compare PROMPT`.
func Compare(ctx context.Context, cf CompareFlags, args []string, std IO) error {
	prompt := strings.Join(args, " ")
	if cf.PromptFile != "" {
		if prompt != "" {
			return exitcode.Usagef("compare: give the prompt as an argument or with -f, not both")
		}
		b, err := os.ReadFile(cf.PromptFile)
		if err != nil {
			return exitcode.With(exitcode.Usage, fmt.Errorf("compare: -f: %w", err))
		}
		prompt = string(b)
	}
	if strings.TrimSpace(prompt) == "" {
		return exitcode.Usagef("compare needs a prompt: tai compare --agents A,B \"PROMPT\" (or -f prompt.md)")
	}
	switch cf.Pick {
	case "", "best":
	default:
		return exitcode.Usagef("compare: --pick takes best, not %q (pick another with: tai compare pick RUN AGENT)", cf.Pick)
	}
	if cf.Fleet.Output == OutputStreamJSON {
		return exitcode.Usagef("compare: --output must be text or json")
	}
	wd, err := std.Wd()
	if err != nil {
		return exitcode.With(exitcode.Usage, fmt.Errorf("compare: the current directory: %w", err))
	}
	plan, err := comparePlan(cf, prompt, wd)
	if err != nil {
		return err
	}
	f := cf.Fleet
	if f.RunID == "" {
		f.RunID = "compare-" + strings.TrimPrefix(newRunID(), "run-")
	}
	if f.Repo == "" {
		f.Repo = wd
	}
	if _, err := worktree.Open(ctx, f.Repo); err != nil {
		return exitcode.Usagef("compare: %s is not in a git repository: a compare runs in the current directory's repository unless -C names one", f.Repo)
	}
	f.report = func(ctx context.Context, o fleet.Options, st *fleet.State, std IO) error {
		return reportCompare(ctx, cf, o, st, std)
	}
	return runFleet(ctx, f, fleet.Options{Plan: plan, RunID: f.RunID, Command: "tai compare"}, std)
}

// comparePlan is the compare's fleet plan: one task per candidate, the
// same prompt, owns, policy and budget for each, no merge. It goes
// through the plan's own validation, as a plan file would.
func comparePlan(cf CompareFlags, prompt, wd string) (*fleet.Plan, error) {
	no := false
	p := fleet.Plan{Name: "compare", Check: cf.Check, CheckTimeout: fleet.Duration(cf.CheckTimeout), Merge: &no,
		Policy: fleet.Policy{Approve: cf.Approve},
		Budget: fleet.Limits{}}
	// The prompt is the user's text, not a template of other tasks'
	// results: its braces stay braces.
	prompt = strings.ReplaceAll(prompt, "{{", `{{"{{"}}`)
	seen := map[string]bool{}
	add := func(name string, a fleet.AgentSpec) error {
		if seen[name] {
			return exitcode.Usagef("compare: two candidates are named %s (name one NAME=...)", name)
		}
		seen[name] = true
		p.Tasks = append(p.Tasks, fleet.Task{ID: name, AgentSpec: a, Prompt: prompt, Owns: cf.Owns,
			Budget: fleet.Limits{Tokens: cf.Tokens, Cost: cf.Cost, WallTime: fleet.Duration(cf.WallTime)}})
		return nil
	}
	for _, a := range cf.Agents {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		if err := add(a, fleet.AgentSpec{Agent: a}); err != nil {
			return nil, err
		}
	}
	for i, c := range cf.AgentCmds {
		name, cmd := splitNamed(c, fmt.Sprintf("cmd%d", i+1))
		if err := add(name, fleet.AgentSpec{AgentCmd: cmd}); err != nil {
			return nil, err
		}
	}
	for i, s := range cf.Scripts {
		name, file := splitNamed(s, fmt.Sprintf("script%d", i+1))
		if !filepath.IsAbs(file) {
			file = filepath.Join(wd, file)
		}
		if err := add(name, fleet.AgentSpec{Agent: "builtin", Script: file}); err != nil {
			return nil, err
		}
	}
	if len(p.Tasks) < 2 {
		return nil, exitcode.Usagef("compare needs two candidates or more (--agents claude,codex, --agent-cmd [NAME=]CMD, --script [NAME=]FILE), not %d", len(p.Tasks))
	}
	b, err := yaml.Marshal(&p)
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	plan, err := fleet.ParsePlan(b, filepath.Join(wd, "(tai compare)"))
	if err != nil {
		var pe fleet.PlanErrors
		if errors.As(err, &pe) {
			msgs := make([]string, len(pe))
			for i, e := range pe {
				msgs[i] = e.Msg
			}
			err = errors.New(strings.Join(msgs, "; "))
		}
		return nil, exitcode.With(exitcode.Usage, fmt.Errorf("compare: %w", err))
	}
	return plan, nil
}

// splitNamed splits "NAME=VALUE" (NAME a valid task id, no spaces) or
// gives VALUE the default name.
func splitNamed(s, def string) (string, string) {
	if n, v, ok := strings.Cut(s, "="); ok && worktree.ValidName(n) && !strings.ContainsAny(n, " \t/") {
		return n, v
	}
	return def, s
}

// compareResult scores a compare's state: diffstats and usage from the
// state, denials from the run's audit log, owns from the diff.
func compareResult(st *fleet.State, plan *fleet.Plan, auditPath string) CompareResult {
	r := CompareResult{Run: st.Run, Status: st.Status, ExitCode: st.ExitCode, Repo: st.Repo, Base: st.Base, Target: st.Target,
		State: filepath.Join(fleet.RunDir(st.Run), "state.json"), Audit: auditPath}
	if plan != nil {
		r.Check = plan.Check
	}
	denials := countDenials(auditPath)
	for _, id := range st.Order {
		ts := st.Tasks[id]
		c := Candidate{Agent: id, Command: ts.Agent, Status: ts.Status, Reason: ts.Reason, Check: ts.Check,
			Tokens: ts.Usage.Tokens, Cost: ts.Usage.Cost, ElapsedMS: ts.ElapsedMS, Denials: denials[id],
			Branch: ts.Branch, Worktree: ts.Worktree}
		if ts.Diff != nil {
			c.Files, c.Insertions, c.Deletions = len(ts.Diff.Files), ts.Diff.Insertions, ts.Diff.Deletions
		}
		if t := planTask(plan, id); t != nil && len(t.Owns) > 0 && ts.Diff != nil {
			held := true
			if owns, err := policy.CompilePathSet(t.Owns); err == nil {
				for _, fs := range ts.Diff.Files {
					held = held && owns.Match(fs.Path)
				}
			}
			c.OwnsHeld = &held
		}
		if ts.Status == fleet.StatusMerged && ts.Branch != "" {
			r.Picked = id
		}
		r.Candidates = append(r.Candidates, c)
	}
	r.Best, r.Why = best(r.Candidates, r.Check != "")
	return r
}

func planTask(p *fleet.Plan, id string) *fleet.Task {
	if p == nil {
		return nil
	}
	return p.Task(id)
}

// best is the candidate to keep: of those that finished (and passed the
// check, when there is one) and kept within their owns, the smallest diff
// (lines added and deleted, then files). Two equal at the top are a tie:
// none is chosen, the user picks.
func best(cs []Candidate, checked bool) (string, string) {
	var ok []Candidate
	for _, c := range cs {
		if c.Status != fleet.StatusDone && c.Status != fleet.StatusMerged {
			continue
		}
		if checked && (c.Check == nil || !c.Check.Passed) {
			continue
		}
		if c.OwnsHeld != nil && !*c.OwnsHeld {
			continue
		}
		ok = append(ok, c)
	}
	if len(ok) == 0 {
		if checked {
			return "", "no candidate finished and passed the check"
		}
		return "", "no candidate finished"
	}
	size := func(c Candidate) int { return c.Insertions + c.Deletions }
	win := ok[0]
	for _, c := range ok[1:] {
		if size(c) < size(win) || (size(c) == size(win) && c.Files < win.Files) {
			win = c
		}
	}
	var tied []string
	for _, c := range ok {
		if size(c) == size(win) && c.Files == win.Files {
			tied = append(tied, c.Agent)
		}
	}
	how := "finished"
	if checked {
		how = "passed the check"
	}
	if len(tied) > 1 {
		return "", fmt.Sprintf("tie: %s %s with the same diff size (+/- %d in %d file(s))", strings.Join(tied, ", "), how, size(win), win.Files)
	}
	return win.Agent, fmt.Sprintf("%s %s with the smallest diff (+/- %d in %d file(s))", win.Agent, how, size(win), win.Files)
}

// countDenials counts, per task, the permission decisions of a run's
// audit log that refused the agent: as a run's result does, not tai's own
// check of the mode the agent started in (a refused self-approving mode
// is replaced by the asking one; the agent asked nothing).
func countDenials(path string) map[string]int {
	n := map[string]int{}
	f, err := os.Open(path)
	if err != nil {
		return n
	}
	defer f.Close()
	_ = audit.Read(f, func(_ int, e audit.Entry) error {
		var d audit.PermissionDecision
		if e.Kind != audit.KindPermissionDecision || e.Task == "" || json.Unmarshal(e.Data, &d) != nil || d.RequestID == policy.StartModeRequest {
			return nil
		}
		if d.Decision != "allow" && d.Decision != "cancelled" && d.Decision != "" {
			n[e.Task]++
		}
		return nil
	})
	return n
}

// reportCompare writes a finished compare's result (table or JSON), its
// JUnit file and diffs, and with --pick best merges the best candidate.
func reportCompare(ctx context.Context, cf CompareFlags, o fleet.Options, st *fleet.State, std IO) error {
	r := compareResult(st, o.Plan, o.Audit.Path())
	var errs []error
	if cf.Fleet.JUnit != "" {
		if err := writeJUnit(cf.Fleet.JUnit, st); err != nil {
			errs = append(errs, fmt.Errorf("compare: --junit: %w", err))
		}
	}
	code := exitcode.Code(st.ExitCode)
	if cf.Pick == "best" {
		if r.Best == "" {
			errs = append(errs, fmt.Errorf("compare: --pick best: %s: nothing merged (pick one with: tai compare pick %s AGENT)", r.Why, r.Run))
			if code == exitcode.OK {
				code = exitcode.AgentError
			}
		} else {
			po := fleet.Options{RunID: o.RunID, Dir: o.Dir, Audit: o.Audit, Command: "tai compare --pick best", Sandbox: o.Sandbox, Logger: o.Logger, Version: Version}
			if after, err := fleet.Pick(ctx, po, r.Best); err != nil {
				errs = append(errs, fmt.Errorf("compare: --pick best: %w", err))
				code = exitcode.Of(err)
			} else {
				r = compareResult(after, o.Plan, o.Audit.Path())
			}
		}
	}
	r.ExitCode = int(code)
	if cf.Fleet.Output == OutputJSON {
		if len(errs) > 0 {
			r.Error = errors.Join(errs...).Error()
		}
		enc := json.NewEncoder(std.Out)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		_ = enc.Encode(r)
	} else {
		writeCompareTable(std.Out, r)
		if cf.Diff != "" {
			if err := writeCompareDiff(ctx, std.Out, r, cf.Diff); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) == 0 {
		return exit(int(code))
	}
	if code == exitcode.OK {
		code = exitcode.AgentError
	}
	return exitcode.With(code, errors.Join(errs...))
}

func writeJUnit(path string, st *fleet.State) error {
	jf, err := os.Create(path)
	if err != nil {
		return err
	}
	err = fleet.JUnit(jf, *st)
	if cerr := jf.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeCompareTable is the side-by-side table, then the verdict.
func writeCompareTable(w io.Writer, r CompareResult) {
	fmt.Fprintf(w, "compare %s: %s\n", r.Run, r.Status)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tCHECK\tFILES\t+/-\tTOKENS\tCOST\tTIME\tDENIALS\tSTATUS")
	for _, c := range r.Candidates {
		check := "-"
		switch {
		case c.Check == nil:
		case c.Check.Passed:
			check = "pass"
		case c.Check.TimedOut:
			check = "timeout"
		default:
			check = "FAIL"
		}
		status := string(c.Status)
		if c.OwnsHeld != nil && !*c.OwnsHeld {
			status += " (outside owns)"
		} else if c.Status != fleet.StatusDone && c.Status != fleet.StatusMerged && c.Reason != "" {
			status += ": " + c.Reason
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t+%d -%d\t%d\t%.4g\t%s\t%d\t%s\n", safetext.Line(c.Agent), check, c.Files, c.Insertions, c.Deletions,
			c.Tokens, c.Cost, (time.Duration(c.ElapsedMS) * time.Millisecond).Round(100*time.Millisecond), c.Denials, safetext.Line(cut.End(status, 61)))
	}
	_ = tw.Flush()
	switch {
	case r.Picked != "":
		fmt.Fprintf(w, "picked %s: merged into %s\n", r.Picked, r.Target)
	case r.Best != "":
		fmt.Fprintf(w, "best: %s\nkeep it: tai compare pick %s %s\n", r.Why, r.Run, r.Best)
	default:
		fmt.Fprintf(w, "best: none (%s)\n", r.Why)
	}
}

// writeCompareDiff writes each candidate's diff against the base
// ("all"), or the diff between two candidates ("a,b"), from git.
func writeCompareDiff(ctx context.Context, w io.Writer, r CompareResult, which string) error {
	branch := map[string]string{}
	for _, c := range r.Candidates {
		if c.Branch != "" {
			branch[c.Agent] = c.Branch
		}
	}
	// Through worktree's one hardened git: the branches are the agents'
	// work, and their .gitattributes must run no diff driver.
	m, err := worktree.Open(ctx, r.Repo)
	if err != nil {
		return fmt.Errorf("compare: --diff: %w", err)
	}
	gitDiff := func(from, to string) error {
		out, err := m.Patch(ctx, m.Repo, from+".."+to, 0)
		if err != nil {
			return fmt.Errorf("compare: --diff: git diff %s %s: %w", from, to, err)
		}
		_, err = io.WriteString(w, out)
		return err
	}
	if which == "all" {
		for _, c := range r.Candidates {
			if b := branch[c.Agent]; b != "" {
				fmt.Fprintf(w, "\n=== %s (%s)\n", c.Agent, b)
				if err := gitDiff(r.Base, "refs/heads/"+b); err != nil {
					return err
				}
			}
		}
		return nil
	}
	a, b, ok := strings.Cut(which, ",")
	if !ok || branch[a] == "" || branch[b] == "" {
		return exitcode.Usagef("compare: --diff takes two candidates that have a branch, as A,B, or all, not %q", which)
	}
	fmt.Fprintf(w, "\n=== %s .. %s\n", a, b)
	return gitDiff("refs/heads/"+branch[a], "refs/heads/"+branch[b])
}

// ComparePick runs `tai compare pick RUN AGENT`: the candidate is merged
// into the run's target through the fleet's merge queue (rebase, the
// check, fast-forward), from the saved state.
func ComparePick(ctx context.Context, f FleetFlags, run, agent string, std IO) error {
	dir := fleet.RunDir(run)
	st, err := fleet.LoadState(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return exitcode.Usagef("compare pick: there is no run %s (tai fleet list shows the runs)", run)
		}
		return exitcode.With(exitcode.Usage, fmt.Errorf("compare pick: %w", err))
	}
	logger := newLogger(std.Err, f.Verbose)
	o := fleet.Options{RunID: run, Dir: dir, Logger: logger, Command: "tai compare pick " + run + " " + agent, Version: Version}
	log, err := openFleetAudit(o, logger, std)
	if err != nil {
		return exitcode.With(exitcode.Usage, fmt.Errorf("compare pick: %w", err))
	}
	defer func() { _ = log.Close() }()
	o.Audit = log
	o.Sandbox = &agentspec.Sandbox{Mode: f.Sandbox, Protect: []string{log.Path()}, Write: f.SandboxWrite}
	after, err := fleet.Pick(ctx, o, agent)
	if after != nil {
		st = after
	}
	if err != nil {
		return fmt.Errorf("compare pick: %w", err)
	}
	fmt.Fprintf(std.Out, "picked %s: merged into %s at %.12s (the other candidates' branches are kept until tai worktree gc)\n", agent, st.Target, st.Tasks[agent].Head)
	return nil
}

// NewCmdCompare is `tai compare` and `tai compare pick`.
func NewCmdCompare(std IO, g *Globals) *cobra.Command {
	var cf CompareFlags
	c := &cobra.Command{
		Use:   "compare [flags] PROMPT",
		Short: "Run one prompt with several agents, each in its own worktree, score them side by side, keep one",
		Long: "Run the prompt with each candidate (--agents, --agent-cmd, --script) as a fleet of one task each:\n" +
			"every one in its own worktree from the same base, under the same policy, sandbox and budget, at most -j at once.\n" +
			"Nothing is merged: each result is scored by tai (the --check run confined in its worktree, git's diffstat,\n" +
			"tokens, cost, time, denials) and kept on its branch until tai worktree gc. Keep one with\n" +
			"tai compare pick RUN AGENT, or --pick best (the check, then the smallest diff; a tie picks none).\n" +
			"Exit 0 if every candidate finished (and --pick best merged one); 1 a candidate failed, or --pick best found a tie\n" +
			"or no passing candidate; 6 a budget ran out; 7 the pick's merge conflicted; 130 interrupted.",
		Example: "  tai compare --agents claude,codex,qwen --approve all --check \"go test ./...\" \"fix the flaky test in store_test.go\"\n" +
			"  tai compare --script a=a.yaml --script b=b.yaml --check ./check.sh --diff a,b \"add a LICENSE\"\n" +
			"  tai compare pick compare-20261207-043000-1a2b3c codex",
		RunE: func(cmd *cobra.Command, args []string) error {
			cf.Fleet.Verbose = g.Verbose
			return Compare(cmd.Context(), cf, args, std)
		},
	}
	fl := c.Flags()
	fl.StringSliceVar(&cf.Agents, "agents", nil, "candidate agents, by preset (claude,codex,qwen; see tai agents)")
	fl.StringArrayVar(&cf.AgentCmds, "agent-cmd", nil, "a candidate launched by this command, as in tai run; NAME=CMD names it (default cmd1, cmd2, ...) (repeatable)")
	fl.StringArrayVar(&cf.Scripts, "script", nil, "a candidate: the built-in agent with this script; NAME=FILE names it (default script1, ...) (repeatable)")
	fl.StringVarP(&cf.PromptFile, "file", "f", "", "read the prompt from this file")
	fl.StringVar(&cf.Check, "check", "", "score each candidate by this command's exit status, run confined in its worktree (sh -c)")
	fl.DurationVar(&cf.CheckTimeout, "check-timeout", 10*time.Minute, "kill a check still running after this long; it fails (0: none)")
	fl.StringSliceVar(&cf.Owns, "owns", nil, "globs of the files the candidates may change; one that changes others is marked and never picked")
	fl.StringVar(&cf.Approve, "approve", "", "permission mode for every candidate (default: tai's)")
	fl.Int64Var(&cf.Tokens, "max-tokens", 0, "each candidate's token budget (0: none)")
	fl.Float64Var(&cf.Cost, "max-cost", 0, "each candidate's cost budget (0: none)")
	fl.DurationVar(&cf.WallTime, "max-time", 0, "each candidate's wall time (0: none)")
	fl.StringVar(&cf.Diff, "diff", "", "after the table: the diff between two candidates (--diff A,B), or each one's against the base (--diff all)")
	fl.StringVar(&cf.Pick, "pick", "", "best: merge the best candidate into the run's target (the check, then the smallest diff)")
	fl.StringVar(&cf.Fleet.RunID, "run-id", "", "name the run (default: compare-DATE-TIME-RANDOM)")
	fl.StringVarP(&cf.Fleet.Repo, "repo", "C", "", "repository (default: the current directory's)")
	fl.IntVarP(&cf.Fleet.Concurrency, "concurrency", "j", 0, "candidates at a time (default 4)")
	fl.StringVarP(&cf.Fleet.Output, "output", "o", "text", "output: text (a table) | json (one document)")
	fl.StringVar(&cf.Fleet.JUnit, "junit", "", "write a JUnit XML report here: one case per candidate")
	cf.Fleet.NATS.addFlags(fl, "a NATS server with JetStream (nats://host:4222): tai workers there run the candidates, each on one that has its agent")
	addTaskSandbox(fl, &cf.Fleet.Sandbox)
	addSandboxWrite(fl, &cf.Fleet.SandboxWrite)
	c.AddCommand(newCmdComparePick(std, g), newCmdCompareHistory(std))
	return c
}

func newCmdCompareHistory(std IO) *cobra.Command {
	var o outputFlag
	c := &cobra.Command{
		Use:     "history",
		Short:   "Show, per repository, which agent each earlier compare picked, whether it passed its check, and its cost",
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return CompareHistory(o.asJSON(), std) },
		Example: "  tai compare history\n  tai compare history -o json",
	}
	o.add(c)
	return c
}

func newCmdComparePick(std IO, g *Globals) *cobra.Command {
	var f FleetFlags
	c := &cobra.Command{
		Use:   "pick [flags] RUN AGENT",
		Short: "Merge a compare's candidate into its target through the merge queue (rebase, check, fast-forward)",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 2 {
				return exitcode.Usagef("compare pick needs the run and the candidate: tai compare pick RUN AGENT")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			f.Verbose = g.Verbose
			return ComparePick(cmd.Context(), f, args[0], args[1], std)
		},
		Example: "  tai compare pick compare-20261207-043000-1a2b3c codex",
	}
	c.ValidArgsFunction = completeFleetRuns
	addTaskSandbox(c.Flags(), &f.Sandbox)
	addSandboxWrite(c.Flags(), &f.SandboxWrite)
	return c
}
