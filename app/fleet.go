package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/ask/tty"
	"github.com/tai-dev/tai/internal/lazyre"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/term"

	"github.com/tai-dev/tai/agentspec"
	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/config"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/elicit"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/feed"
	"github.com/tai-dev/tai/fleet"
	"github.com/tai-dev/tai/internal/safetext"
	"github.com/tai-dev/tai/internal/ttyin"
	"github.com/tai-dev/tai/notify"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/runner"
	"github.com/tai-dev/tai/sandbox"
)

// FleetRun runs `tai fleet run PLAN`.
func FleetRun(ctx context.Context, f FleetFlags, planPath string, std IO) error {
	plan, err := fleet.LoadPlan(planPath)
	if err != nil {
		return exitcode.With(exitcode.Usage, fmt.Errorf("fleet run: %w", err))
	}
	id := f.RunID
	if id == "" {
		id = "fleet-" + strings.TrimPrefix(newRunID(), "run-")
	}
	return runFleet(ctx, f, fleet.Options{Plan: plan, RunID: id, Command: "tai fleet run " + planPath}, std)
}

// FleetResume runs `tai fleet resume RUN`.
func FleetResume(ctx context.Context, f FleetFlags, run string, std IO) error {
	{
		// A run that is running is released by hand: its parks end now
		// (over NATS through its coordinator there: the hub's, for a
		// submitted run).
		var sent bool
		var err error
		if f.NATS.URL != "" {
			sent, err = busHand(ctx, f.NATS, run, fleet.HandResume, std)
		} else {
			sent, err = sendHand(run, fleet.HandResume)
		}
		if err != nil {
			return exitcode.With(exitcode.Usage, err)
		}
		if sent {
			fmt.Fprintf(std.Out, "fleet run %s: its parked tasks resume now\n", run)
			return nil
		}
	}
	return runFleet(ctx, f, fleet.Options{RunID: run, Resume: true, Command: "tai fleet resume " + run}, std)
}

func runFleet(ctx context.Context, f FleetFlags, o fleet.Options, std IO) error {
	switch f.Output {
	case "", OutputText, OutputJSON, OutputStreamJSON:
	default:
		return exitcode.Usagef("fleet: --output must be text, json or stream-json, not %q", f.Output)
	}
	widenPipe(std.Out)
	logger := newLogger(std.Err, f.Verbose)
	if f.Repo == "" && !o.Resume {
		// A new run works in the current directory's repository, wherever
		// the plan is; a resumed one in its own.
		wd, err := std.Wd()
		if err != nil {
			return exitcode.With(exitcode.Usage, fmt.Errorf("fleet: the current directory: %w", err))
		}
		f.Repo = wd
	}
	if f.Submit || f.Detach {
		return submitFleet(ctx, f, o, std)
	}
	o.Dir = fleet.RunDir(o.RunID)
	o.Repo, o.Concurrency, o.FailFast, o.CancelGrace = f.Repo, f.Concurrency, f.FailFast, f.CancelGrace
	o.Version, o.Logger = Version, logger
	if _, err := sandbox.Preflight(f.Sandbox); err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	sayUnconfined(f.Sandbox, std)
	if o.Resume && f.NATS.URL == "" {
		// Nothing is made for a run that does not exist (its name would
		// then be offered to completion). Over NATS the run's state is
		// JetStream's, which any host may resume.
		if _, err := fleet.LoadState(o.Dir); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return exitcode.Usagef("fleet resume: there is no fleet run %s (tai fleet list shows the runs)", o.RunID)
			}
			return exitcode.With(exitcode.Usage, fmt.Errorf("fleet resume: %w", err))
		}
	}
	made, err := makeRunDir(o.Dir)
	if err != nil {
		return exitcode.With(exitcode.Usage, fmt.Errorf("fleet: %w", err))
	}
	// A run refused before it started (it has no state) leaves no
	// directory behind. Deferred first, so it runs after every close.
	defer func() {
		if _, err := os.Stat(filepath.Join(o.Dir, "state.json")); made && errors.Is(err, os.ErrNotExist) {
			_ = os.RemoveAll(o.Dir)
		}
	}()
	log, err := openFleetAudit(o, logger, std)
	if err != nil {
		return exitcode.With(exitcode.Usage, fmt.Errorf("fleet: %w", err))
	}
	defer func() {
		if err := log.Close(); err != nil {
			logger.Error("closing the audit log", "err", err)
		}
	}()
	o.Audit = log
	// Each task's agent confined like tai run's, by its task's policy: its
	// own state dirs writable, secrets and the policy's deny-read paths
	// hidden, tai's own files (this run's state and audit log included)
	// read-only.
	o.Sandbox = &agentspec.Sandbox{Mode: f.Sandbox, Protect: []string{log.Path()}, Write: f.SandboxWrite}

	lf, closeFeed, err := openFeed(o.RunID, feed.KindFleet, f.Feed, logger, std)
	defer closeFeed()
	if err != nil {
		return exitcode.With(exitcode.Usage, fmt.Errorf("fleet: %w", err))
	}
	guardFeed(lf.srv, log, log.Redactor(), interruptSelf)
	stream, closeStream, err := fleetFrames(&o, f.Output, lf.srv, std)
	if err != nil {
		return exitcode.With(exitcode.Usage, fmt.Errorf("fleet: %w", err))
	}
	defer closeStream()
	table := fleetTable(o.RunID, f.Output, std)
	if tty, ok := std.TTY(); ok {
		defer tty.Close()
		withHuman(&o, tty, table, lf.srv)
	}
	stopTable := fleetProgress(&o, f.Output, table, std)
	defer stopTable()
	watchFleet(&o, stream, lf, logger)

	var st *fleet.State
	hands := feedHands(&o, lf.srv, log)
	if f.NATS.URL != "" {
		st, err = runRemote(ctx, f, o, log, hands, std)
	} else {
		st, err = fleet.Run(ctx, o)
	}
	if err != nil {
		sum := Summary{Run: o.RunID, Status: "error", Audit: log.Path(), Counts: map[fleet.TaskStatus]int{}}
		if st != nil {
			sum = summaryOf(st, log.Path())
		}
		sum.ExitCode, sum.Error = int(exitcode.Of(err)), err.Error()
		stream.result(sum) // a stream always ends with its result
		return exitcode.With(exitcode.Code(sum.ExitCode), fmt.Errorf("fleet: %w", err))
	}
	stream.result(summaryOf(st, log.Path()))
	if f.report != nil {
		return f.report(ctx, o, st, std)
	}
	return reportFleet(f, o.Dir, st, log.Path(), std)
}

// makeRunDir makes a run's directory, saying whether it made it.
func makeRunDir(dir string) (bool, error) {
	if _, err := os.Stat(dir); err == nil {
		return false, nil
	}
	return true, os.MkdirAll(dir, 0o700)
}

// openFleetAudit opens the run's one audit log; a resume continues its
// chain (repairing a last line cut by kill -9).
func openFleetAudit(o fleet.Options, logger *slog.Logger, std IO) (*audit.Log, error) {
	red, err := newRedactor(std.Env(), nil, nil)
	if err != nil {
		return nil, err
	}
	log, err := audit.Open(filepath.Join(o.Dir, "audit.jsonl"), audit.Options{Run: o.RunID, Redactor: red, Logger: logger, TruncatePartial: true})
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	return log, nil
}

// fleetFrames routes every task's frames, and the fleet's own, to the
// run's frames file (for `tai fleet logs`), to stdout under --output
// stream-json, and to the live feed.
func fleetFrames(o *fleet.Options, output string, srv *feed.Server, std IO) (*fleetStream, func(), error) {
	framesOut, err := os.OpenFile(filepath.Join(o.Dir, framesFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, nil, err
	}
	var streamOut io.Writer = framesOut
	if output == OutputStreamJSON {
		streamOut = io.MultiWriter(framesOut, std.Out) // the file first: a closed stdout must not cut it
	}
	stream := newFleetStream(streamOut, o.RunID, time.Now)
	if srv != nil {
		stream.publish = srv.Publish // the fleet's frames are the feed's too
	}
	o.TaskSink = func(task string) driver.Sink {
		ks := sinks{stream.task(task)}
		if srv != nil {
			ks = append(ks, srv.Sink(task))
		}
		return ks
	}
	return stream, func() { framesOut.Close() }, nil
}

// fleetTable is the live table, for text output to a terminal.
func fleetTable(run, output string, std IO) *fleet.Table {
	if output != OutputText && output != "" {
		return nil
	}
	w, ok := termWidth(std.Out)
	if !ok {
		return nil
	}
	return &fleet.Table{W: std.Out, Now: time.Now, Run: run, Width: w}
}

// withHuman puts a human behind the fleet, when there is a terminal:
// permission asks (one "always" answers every task of the run), forms and
// questions nobody else could answer. tai top answers the same asks
// through the feed: each is one ask race, the first answer wins. Every
// waiting task asks at once; the terminal shows them one at a time.
func withHuman(o *fleet.Options, tty *os.File, table *fleet.Table, srv *feed.Server) {
	h := newHuman(tty)
	h.table = table
	o.Prompter = withFeed(h, srv)
	o.AskHuman = func(ctx context.Context, task, q string) (string, error) {
		chans := []ask.QuestionChannel{{Via: ask.ViaTerminal, Ask: h.askQuestion}}
		if srv != nil {
			chans = append(chans, srv.Questions())
		}
		text, _, err := ask.AskQuestion(ctx, ask.Question{Task: task, Text: q}, chans...)
		return strings.TrimSpace(text), err
	}
	o.ElicitHuman = humanForm{h: h, form: &elicit.Form{In: tty, Out: tty, Lines: h.prompt}}
	if srv != nil {
		o.ElicitHuman = elicit.Race(elicit.Channel(ask.ViaTerminal, o.ElicitHuman), srv.Elicitor())
	}
}

// fleetProgress shows the fleet's events: the live table, redrawn every
// second, or one line each (on stderr when stdout holds the result).
func fleetProgress(o *fleet.Options, output string, table *fleet.Table, std IO) (stop func()) {
	if table == nil {
		progressOut := std.Out
		if output == OutputJSON || output == OutputStreamJSON {
			progressOut = std.Err
		}
		o.Progress = fleet.Lines(progressOut)
		return func() {}
	}
	o.Progress = table.Event
	tick := time.NewTicker(time.Second)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-tick.C:
				table.Tick()
			case <-done:
				return
			}
		}
	}()
	return func() { tick.Stop(); close(done); wg.Wait() }
}

// watchFleet tees the fleet's events to the frames, the live feed (tasks
// and budgets) and the notifier, after the progress display.
func watchFleet(o *fleet.Options, stream *fleetStream, lf liveFeed, logger *slog.Logger) {
	progress, srv := o.Progress, lf.srv
	budget, err := budgetOf(o.Plan, o.Dir, o.Concurrency)
	if err != nil {
		logger.Debug("no budgets on the live feed", "err", err)
	}
	run := o.RunID
	o.Progress = func(e fleet.Event) {
		progress(e)
		if srv != nil {
			budget.publish(srv, e)
			publishTask(srv, e, budget)
		}
		stream.event(e)
		if kind, ok := waitsFor(e); ok {
			lf.notify(notify.Notice{Kind: kind, Run: run, Task: e.Task, Title: e.Detail, Since: e.Time})
		}
	}
}

// reportFleet writes the --junit file and the summary (text or json), and
// returns what went wrong, one error per line, under the fleet's exit code.
func reportFleet(f FleetFlags, dir string, st *fleet.State, auditPath string, std IO) error {
	var errs []error
	if f.JUnit != "" {
		jf, err := os.Create(f.JUnit)
		if err == nil {
			err = fleet.JUnit(jf, *st)
			if cerr := jf.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("fleet: --junit: %w", err))
		}
	}
	switch f.Output {
	case OutputJSON:
		writeSummary(std.Out, st, auditPath)
	case OutputStreamJSON:
	default:
		// Short lines (80 columns hold them); the paths under -v, and in
		// tai fleet status --json.
		fmt.Fprintf(std.Out, "fleet %s: %s (exit %d)\n  results on branch %s\n", st.Run, st.Status, st.ExitCode, st.Target)
		if f.Verbose {
			fmt.Fprintf(std.Out, "  state %s\n  audit %s\n", filepath.Join(dir, "state.json"), auditPath)
		}
		if next := fleet.NextStep(*st); next != "" {
			fmt.Fprintln(std.Out, "next: "+next)
		}
		for _, id := range st.Order {
			ts := st.Tasks[id]
			if ts.Status == fleet.StatusConflict {
				errs = append(errs, fmt.Errorf("fleet: task %s: merge conflict in %s (branch %s kept)", id, strings.Join(ts.ConflictFiles, ", "), ts.Branch))
			} else if ts.Status != fleet.StatusMerged && ts.Status != fleet.StatusDone {
				errs = append(errs, fmt.Errorf("fleet: task %s %s: %s", id, ts.Status, ts.Reason))
			}
		}
	}
	if len(errs) == 0 {
		return exit(st.ExitCode) // the summary said it
	}
	return exitcode.With(exitcode.Code(st.ExitCode), errors.Join(errs...))
}

// Summary is `tai fleet run --output json`'s document.
type Summary struct {
	Run      string                   `json:"run"`
	Status   fleet.RunStatus          `json:"status"`
	ExitCode int                      `json:"exit_code"`
	Target   string                   `json:"target"`
	Base     string                   `json:"base"`
	State    string                   `json:"state"`
	Audit    string                   `json:"audit"`
	Usage    fleet.Usage              `json:"usage"`
	Tasks    []*fleet.TaskState       `json:"tasks"`
	Counts   map[fleet.TaskStatus]int `json:"counts"`
	Error    string                   `json:"error,omitempty"` // why the fleet could not run or finish
	Next     string                   `json:"next,omitempty"`  // the command that takes a stopped run further
}

func summaryOf(st *fleet.State, auditPath string) Summary {
	s := Summary{Run: st.Run, Status: st.Status, ExitCode: st.ExitCode, Target: st.Target, Base: st.Base,
		State: filepath.Join(fleet.RunDir(st.Run), "state.json"), Audit: auditPath, Usage: st.Usage, Counts: map[fleet.TaskStatus]int{},
		Next: fleet.NextStep(*st)}
	for _, id := range st.Order {
		s.Tasks = append(s.Tasks, st.Tasks[id])
		s.Counts[st.Tasks[id].Status]++
	}
	return s
}

func writeSummary(w io.Writer, st *fleet.State, auditPath string) {
	s := summaryOf(st, auditPath)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(s)
}

// FleetStatus runs `tai fleet status [RUN]` (default: the latest run;
// --nats: a run on that server, from the state its coordinator publishes).
func FleetStatus(ctx context.Context, n NATSFlags, run string, asJSON bool, std IO) error {
	s, closeStore, err := fleetStore(ctx, n, "tai fleet status", std)
	if err != nil {
		return err
	}
	defer closeStore()
	if run == "" {
		if run, err = latestRun(ctx, s, n); err != nil {
			return err
		}
	}
	v, err := s.View(ctx, run)
	if err != nil {
		return fmt.Errorf("fleet status: %w", err)
	}
	if v.State == nil {
		fmt.Fprintf(std.Out, "fleet %s: submitted %s, waiting for the hub's coordinator (tai hub --coordinate)\n", run, v.Submitted.Local().Format(time.RFC3339))
		return nil
	}
	printStatus(std, v.State, v.Status, v.Audit, asJSON)
	return nil
}

// printStatus prints a run's state as tai fleet status does.
func printStatus(std IO, st *fleet.State, status, auditPath string, asJSON bool) {
	if asJSON {
		writeSummary(std.Out, st, auditPath)
		return
	}
	fmt.Fprintf(std.Out, "fleet %s: %s\n  target %s\n  used %d tokens, %d turns, %.4g cost; updated %s\n",
		st.Run, status, st.Target, st.Usage.Tokens, st.Usage.Turns, st.Usage.Cost, st.Updated.Format(time.RFC3339))
	if p := filepath.Join(fleet.RunDir(st.Run), "state.json"); fileExists(p) { // a run over NATS may have none here
		fmt.Fprintf(std.Out, "  state %s\n", p)
	}
	for _, r := range fleet.TableRowsWidth(*st, time.Now(), outputWidth(std), nil) {
		fmt.Fprintln(std.Out, safetext.Line(r)) // a row may quote an agent (a reason, a detail)
	}
}

// human asks at the terminal. Permission asks go through the terminal's
// one-key prompter, as in tai run; questions and forms read lines from
// the same reader of the terminal. The tasks ask at once: each waits for
// its turn on the screen, and one answered elsewhere meanwhile (tai top)
// leaves without being shown.
type human struct {
	table  *fleet.Table  // the live table, held while a question is on screen
	turn   chan struct{} // one question on screen at a time; full while one is
	out    io.Writer
	prompt *tty.Prompter
}

func newHuman(t *os.File) *human {
	return &human{out: t, turn: make(chan struct{}, 1), prompt: &tty.Prompter{In: ttyin.New(t), Out: t}}
}

// take waits for the screen until ctx ends, then shows task's what on the
// table (which keeps off the screen until the question is answered: it
// must not draw over it).
func (h *human) take(ctx context.Context, task, what string) (release func(), err error) {
	select {
	case h.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if h.table != nil {
		h.table.Hold(task, what)
	}
	return func() {
		if h.table != nil {
			h.table.Release()
		}
		<-h.turn
	}, nil
}

func (h *human) Ask(ctx context.Context, req driver.PermissionRequest) (policy.Answer, error) {
	release, err := h.take(ctx, strings.TrimPrefix(policy.AskerOf(ctx), "task "), "permission: "+req.ToolCall.Title)
	if err != nil {
		return policy.DenyOnce, err
	}
	defer release()
	return h.prompt.Ask(ctx, req)
}

// humanForm is a task's form on the fleet's terminal.
type humanForm struct {
	h    *human
	form *elicit.Form
}

func (f humanForm) Answer(ctx context.Context, req driver.ElicitationRequest) (driver.ElicitationAnswer, error) {
	task := strings.TrimPrefix(policy.AskerOf(ctx), "task ")
	release, err := f.h.take(ctx, task, "form: "+req.Message)
	if err != nil {
		return driver.ElicitationAnswer{}, err
	}
	defer release()
	fmt.Fprintf(f.h.out, "\n[tai fleet] task %s asks:\n", task)
	return f.form.Answer(ctx, req)
}

// askQuestion is the terminal's channel of a task's question: an empty
// line leaves the task blocked.
func (h *human) askQuestion(ctx context.Context, q ask.Question) (string, ask.Via, error) {
	release, err := h.take(ctx, q.Task, "question: "+lastQuestionLine(q.Text))
	if err != nil {
		return "", ask.ViaTerminal, err
	}
	defer release()
	l, err := h.prompt.ReadLine(ctx, fmt.Sprintf("\n[tai fleet] task %s asks:\n%s\nyour answer (empty = leave it blocked): ", q.Task, q.Text), false)
	if err != nil && ctx.Err() != nil {
		fmt.Fprintf(h.out, "\n  %s\n", ask.Note(ctx)) // another channel answered first
	}
	return l, ask.ViaTerminal, err
}

// planPrompt asks an agent for a plan.
const planPrompt = `Split the following goal into a plan of tasks for parallel coding agents.
Reply with only a YAML document (optionally in a yaml code fence) of this shape:

name: <short-name>
goal: <the goal>
tasks:
  - id: <letters, digits, - or _>
    prompt: <what this agent must do; {{ .Tasks.<dep>.Message }}, .Diff and .Branch give a dependency's result>
    depends_on: [<ids of tasks whose result this one needs>]
    owns: [<files or globs this task alone changes>]

Give each file to one task only; tasks that touch the same files must depend on one another.

Goal: `

// builtinPlanScript is a built-in agent script that answers with a valid
// one-task plan for goal.
func builtinPlanScript(goal string) ([]byte, error) {
	name := strings.Trim(nonSlug().ReplaceAllString(strings.ToLower(goal), "-"), "-")
	if len(name) > 40 {
		name = strings.Trim(name[:40], "-")
	}
	if name == "" {
		name = "plan"
	}
	plan, err := yaml.Marshal(map[string]any{
		"name": name, "goal": goal,
		"tasks": []map[string]any{{"id": "goal", "prompt": goal}},
	})
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(map[string]any{"steps": []map[string]any{{"text": "```yaml\n" + string(plan) + "```\n"}}})
}

var nonSlug = lazyre.New(`[^a-z0-9]+`)

var fenceRE = lazyre.New("(?s)```(?:ya?ml)?\\s*\\n(.*?)```")

// FleetPlan runs `tai fleet plan "goal"`: an agent drafts the plan, tai
// validates it against the plan schema and saves it for review.
func FleetPlan(ctx context.Context, f FleetPlanFlags, goal string, std IO) error {
	cwd, err := workdir(f.Cwd, std)
	if err != nil {
		return fmt.Errorf("fleet plan: %w", err)
	}
	rf := RunFlags{Agent: f.Agent, AgentCmd: f.AgentCmd, Cwd: cwd, Approve: f.Approve, NonInteractive: "deny",
		AllowDenials: true, Timeout: f.Timeout, NoAudit: true}
	if rf.Approve == "" {
		rf.Approve = "reads"
	}
	logger := newLogger(std.Err, false)
	// The drafting agent is the flags' alone: no config applies.
	ro := RunOptions{Flags: rf, IO: std, LoadConfig: func(string) (config.Config, error) { return config.Config{}, nil }}
	r, err := resolveRun(ro)
	if err != nil {
		return fmt.Errorf("fleet plan: %w", err)
	}
	opts, cleanup, err := buildRun(ro, r, []string{planPrompt + goal}, logger)
	defer cleanup()
	if err != nil {
		return fmt.Errorf("fleet plan: %w", err)
	}
	if f.AgentCmd == "" && (f.Agent == "" || f.Agent == "builtin") {
		// The built-in agent has no model to split a goal with: it drafts
		// the plan a model would start from, one task with the whole goal.
		script, err := builtinPlanScript(goal)
		if err == nil {
			dir, derr := os.MkdirTemp("", "tai-fleet-plan-")
			if err = derr; err == nil {
				defer os.RemoveAll(dir)
				p := filepath.Join(dir, "plan-script.yaml")
				if err = os.WriteFile(p, script, 0o600); err == nil {
					opts.Argv = append(opts.Argv, "--script", p)
				}
			}
		}
		if err != nil {
			return exitcode.With(exitcode.Usage, fmt.Errorf("fleet plan: %w", err))
		}
		warn(std, "fleet plan: the built-in agent has no model: it drafts a one-task plan; use --agent claude (or another agent) to split the goal")
	}
	res, err := runner.Run(ctx, opts)
	if err != nil || res.ExitCode != 0 {
		return exitcode.With(exitcode.Code(res.ExitCode), fmt.Errorf("fleet plan: the agent failed: %s", res.Error))
	}
	text := res.Message
	if m := fenceRE().FindStringSubmatch(text); m != nil {
		text = m[1]
	}
	out := f.Out
	if out == "" {
		out = "plan.yaml"
	}
	abs, _ := filepath.Abs(out)
	plan, err := fleet.ParsePlan([]byte(text), abs)
	if err != nil {
		return exitcode.With(exitcode.AgentError, fmt.Errorf("fleet plan: the agent's plan is not valid:\n%v\n--- the agent said:\n%s", err, res.Message))
	}
	text = strings.TrimSpace(text) + "\n"
	if !hasPolicy(plan) {
		// Without a policy, every edit waits for a terminal, and a run
		// without one (CI, the hint below) is denied all its work.
		text = draftedPolicy + text
	}
	if err := os.WriteFile(out, []byte(text), 0o644); err != nil {
		return exitcode.With(exitcode.Usage, fmt.Errorf("fleet plan: %w", err))
	}
	fmt.Fprintf(std.Out, "plan saved to %s: review it (its policy: says what the tasks may do unasked), then run: tai fleet run %s\n", out, out)
	return nil
}

// draftedPolicy is the policy a drafted plan without one gets: each task's
// agent works unasked in its own worktree (edits, commands), confined by
// the sandbox, and does not push.
const draftedPolicy = `# What the tasks' agents may do without asking. Each works in its own git worktree,
# confined by the sandbox; without a terminal (CI) anything not allowed is denied.
# approve: reads asks before edits and commands instead.
policy: {approve: all, deny: ["execute:git push *"]}
`

// hasPolicy: the plan or one of its tasks sets a policy.
func hasPolicy(p *fleet.Plan) bool {
	if !reflect.ValueOf(p.Policy).IsZero() {
		return true
	}
	for _, t := range p.Tasks {
		if t.Policy != nil {
			return true
		}
	}
	return false
}

// publishTask keeps the feed's view of a fleet task current.
func publishTask(srv *feed.Server, e fleet.Event, b fleetBudget) {
	if e.Task == "" {
		return
	}
	t := e.State.Tasks[e.Task]
	if t == nil {
		return
	}
	ft := feed.Task{ID: t.ID, Agent: t.Agent, Status: string(t.Status), Detail: e.Detail, Branch: t.Branch, Updated: e.Time.UTC(),
		Budget: b.task(t), Account: t.Account}
	if p := e.State.Parks[t.Account]; t.Status == fleet.StatusParked && p != nil && !p.ByHand {
		ft.ResetsAt = p.ResetsAt.UTC()
	}
	srv.SetTask(ft)
}

func lastQuestionLine(q string) string {
	q = strings.TrimSpace(q)
	if i := strings.LastIndexByte(q, '\n'); i >= 0 {
		q = q[i+1:]
	}
	return q
}

// outputWidth is the width tables on stdout fit: the terminal's, else
// $COLUMNS (a pipe to a pager, a test), else 160.
func outputWidth(std IO) int {
	if w, ok := termWidth(std.Out); ok {
		return w()
	}
	if c, err := strconv.Atoi(std.Getenv("COLUMNS")); err == nil && c > 0 {
		return c
	}
	return 160
}

// termWidth is w's width when it is a terminal.
func termWidth(w io.Writer) (func() int, bool) {
	f, ok := osFile(w)
	if !ok || !isTTY(f) {
		return nil, false
	}
	return func() int {
		if c, _, err := term.GetSize(int(f.Fd())); err == nil && c > 0 {
			return c
		}
		return 80
	}, true
}

// waitsFor says whether a fleet event starts a wait for a human, and of
// what kind (for notifications).
func waitsFor(e fleet.Event) (string, bool) {
	switch e.Kind {
	case "blocked":
		return "question", true
	case "budget":
		return "budget", true
	case "conflict":
		return "conflict", true
	case "parked", "resumed":
		if e.Task == "" { // the account's, once for all its tasks
			return string(e.Kind), true
		}
	}
	return "", false
}

// fileExists: p is there (a file or anything else).
func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
