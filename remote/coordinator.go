package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/coder/quartz"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tai-dev/tai/agentspec"
	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/fleet"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/quota"
	"github.com/tai-dev/tai/worktree"
)

// CoordinatorOptions configure a fleet run over NATS.
type CoordinatorOptions struct {
	Bus   *Bus
	Plan  *fleet.Plan // nil on resume: the run's record in JetStream has it
	RunID string
	Dir   string // local run directory (state.json, audit.jsonl); default fleet.RunDir
	Repo  string // a directory in the repository; default the plan's
	// RepoURL is where workers clone and push: the --remote's URL, else
	// the repository itself by path.
	RepoURL string
	Lease   time.Duration
	Resume  bool
	// Concurrency and FailFast override the plan's, as fleet.Options':
	// how many tasks are out on the queue at once (default the plan's,
	// else fleet.DefaultConcurrency).
	Concurrency int
	FailFast    bool
	Audit       *audit.Log // required
	Progress    func(fleet.Event)
	// TaskSink, if set, gets each task's session events as its worker
	// reports them (fleet.Options.TaskSink).
	TaskSink func(task string) driver.Sink
	Command  string
	Clock    quartz.Clock
	Logger   *slog.Logger
	// Who answers the tasks' asks, as in a local fleet: a human for
	// permission asks and for questions the plan's answerer could not
	// answer (nil: headless).
	Prompter policy.Prompter
	AskHuman func(ctx context.Context, task, question string) (string, error)
	// The plan's answerer agent runs here: the built-in agent's binary,
	// and how it is confined (fleet.Options').
	Exe     string
	Version string
	Sandbox *agentspec.Sandbox
	// Hands parks or releases the run's accounts by hand (tai fleet pause
	// and resume through the run's live feed), as fleet.Options.Hands.
	Hands <-chan fleet.Hand
	// KeepPauses: its parks by hand outlive a coordinator's restart
	// (fleet.Options.KeepPauses): the hub's coordinator adopts its runs
	// again on its own, which is nobody's release.
	KeepPauses bool
	// Clones is where a coordinator that adopts a run from another host
	// (tai hub --coordinate) keeps its clones of the runs' repositories.
	Clones string
}

// ErrBusy: another process coordinates the run.
var ErrBusy = fleet.ErrBusy

// engine is the fleet run the coordinator executes tasks for: a
// *fleet.Engine (tests: a stand-in).
type engine interface {
	Task(id string) fleet.TaskState
	SetTask(id string, fn func(*fleet.TaskState))
	Emit(kind fleet.EventKind, task, detail string, data map[string]any)
	EmitAt(t time.Time, kind fleet.EventKind, task, detail string, data map[string]any)
	Prompt(ctx context.Context, t *fleet.Task) (string, error)
	Park(ctx context.Context, id string, l *quota.Limit, tp *fleet.TaskPark) error
	EnterTurn(id string, cancel context.CancelCauseFunc, start func()) func()
}

// coordinator is fleet's executor over NATS: it offers each task the
// fleet hands it on the work queue (its lease first), fences its lease,
// and hands back the accepted attempt's result; the fleet merges it.
type coordinator struct {
	o     CoordinatorOptions
	bus   *Bus
	rec   RunRecord
	plan  *fleet.Plan
	wt    *worktree.Manager
	e     engine // set by Open
	clock quartz.Clock
	log   *slog.Logger

	// mem holds the run's "always" answers, by policy memory key, and
	// the turns of asks for the same thing.
	mem *policy.Memory

	mu      sync.Mutex
	limits  map[string]fleet.Limits // each offered task's reservation, for its offers again
	workers map[string]string       // the worker of each task's accepted attempt, for its merged event
	results map[string]chan Lease   // accepted results, to their task's goroutine
	handed  map[string]int          // the attempt of each task whose result went on results (settle's goroutine only)
	pushTo  string                  // where the target goes after each merge (a clone's origin)
	// recorded: the attempt of each task whose merge this run's audit log
	// records already (read on resume).
	recorded map[string]int
	// The run's durable consumers (made by Open, pulled by Serve).
	evCons, resCons jetstream.Consumer
}

// cloneRepo is this host's clone of the run's repository (made once, then
// fetched), with the target as the repository has it.
func (c *coordinator) cloneRepo(ctx context.Context) (*worktree.Manager, error) {
	sum := sha256.Sum256([]byte(c.rec.RepoURL))
	dir := filepath.Join(c.o.Clones, hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		tmp := dir + ".tmp"
		_ = os.RemoveAll(tmp)
		if err := os.MkdirAll(c.o.Clones, 0o700); err != nil {
			return nil, err
		}
		if err := (&worktree.Git{Network: true}).Clone(ctx, c.rec.RepoURL, tmp, false); err != nil {
			return nil, err
		}
		if err := os.Rename(tmp, dir); err != nil {
			return nil, err
		}
	}
	wt, err := worktree.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	if err := wt.NetGit().Fetch(ctx, c.rec.RepoURL, "+refs/heads/*:refs/remotes/origin/*"); err != nil {
		return nil, err
	}
	// The target as the repository has it (a resumed run's merges so far).
	_ = wt.NetGit().Fetch(ctx, c.rec.RepoURL, "+refs/heads/"+c.rec.Target+":refs/heads/"+c.rec.Target)
	if !wt.IsAncestor(ctx, c.rec.Base, c.rec.Base) {
		return nil, fmt.Errorf("%s does not have the run's base %.12s (push it there)", c.rec.RepoURL, c.rec.Base)
	}
	c.pushTo = c.rec.RepoURL
	return wt, nil
}

// Coordinate runs (or resumes) a fleet whose tasks workers run: fleet's
// engine schedules the DAG, reserves each task's budget, and merges
// through its fast-forward queue; the coordinator is its executor (it
// offers each task and accepts only the attempt holding the task's
// lease). Its state is JetStream's; state.json mirrors it for tai fleet
// status.
func Coordinate(ctx context.Context, o CoordinatorOptions) (*fleet.State, error) {
	if o.Clock == nil {
		o.Clock = quartz.NewReal()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.Dir == "" && worktree.ValidName(o.RunID) {
		o.Dir = fleet.RunDir(o.RunID)
	}
	c := &coordinator{o: o, bus: o.Bus, clock: o.Clock, log: o.Logger, results: map[string]chan Lease{}, limits: map[string]fleet.Limits{},
		workers: map[string]string{}, mem: policy.NewMemory(policy.ScopeRun)}
	st, err := fleet.Run(ctx, fleet.Options{RunID: o.RunID, Dir: o.Dir, Resume: o.Resume, Concurrency: o.Concurrency, FailFast: o.FailFast,
		Audit: o.Audit, Progress: o.Progress,
		Prompter: o.Prompter, TaskSink: o.TaskSink, AskHuman: o.AskHuman, Command: o.Command, Version: o.Version, Clock: o.Clock,
		Logger: o.Logger, Exe: o.Exe, Sandbox: o.Sandbox, Executor: c, Hands: o.Hands, KeepPauses: o.KeepPauses})
	if err == nil && ctx.Err() == nil {
		purgeHuman(context.WithoutCancel(ctx), c.bus, o.RunID) // its asks are over
	}
	return st, err
}

// Open loads (on resume) or creates the run's record, readies the target,
// rebuilds the run's state from what JetStream knows, and makes the run's
// consumers (fleet.Opener).
func (c *coordinator) Open(ctx context.Context, e *fleet.Engine) (fleet.Opened, error) {
	c.e = e
	st, err := c.open(ctx)
	if err != nil {
		return fleet.Opened{}, err
	}
	return fleet.Opened{Plan: c.plan, Repo: c.wt, State: st}, nil
}

func (c *coordinator) open(ctx context.Context) (*fleet.State, error) {
	o := c.o
	load := c.create
	if o.Resume {
		load = c.load
	}
	if err := load(ctx); err != nil {
		return nil, err
	}
	if err := c.readyTarget(ctx); err != nil {
		return nil, err
	}
	st := c.initialState(ctx)
	if o.Resume {
		c.recorded = recordedMerges(o.Audit.Path())
	}
	for _, t := range c.plan.Tasks {
		c.results[t.ID] = make(chan Lease, 1)
		if err := c.bus.SetLease(ctx, AgentToken(c.spec(t.AgentSpec)), c.o.Lease); err != nil {
			return nil, err
		}
	}
	// Workers' events go into this run's audit log as they come, through
	// a durable consumer: a resumed coordinator forwards those that came
	// while none was running, and none twice.
	var err error
	c.evCons, err = c.bus.Events.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "fwd-" + strings.ReplaceAll(token(c.o.RunID), "%", "_"),
		FilterSubject: EventFilter(c.o.RunID), AckPolicy: jetstream.AckAllPolicy, AckWait: time.Minute, MaxDeliver: -1})
	if err != nil {
		return nil, fmt.Errorf("remote: events consumer: %w", err)
	}
	c.resCons, err = c.bus.Results.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "coord-" + strings.ReplaceAll(token(c.o.RunID), "%", "_"),
		FilterSubject: resultSubject(c.o.RunID), AckPolicy: jetstream.AckExplicitPolicy, AckWait: resultAckWait, MaxDeliver: -1})
	if err != nil {
		return nil, fmt.Errorf("remote: results consumer: %w", err)
	}
	return &st, nil
}

// Describe is the run.start event's detail (fleet.Describer).
func (c *coordinator) Describe(st fleet.State) (string, map[string]any) {
	return fmt.Sprintf("%d task(s) over NATS, target %s, workers clone %s", len(st.Tasks), st.Target, c.rec.RepoURL),
		map[string]any{"run": st.Run, "resume": c.o.Resume, "base": st.Base, "target": st.Target, "repo_url": c.rec.RepoURL}
}

// Serve pulls the workers' results, events and asks, and re-offers lost
// messages, until ctx ends (fleet.Server).
func (c *coordinator) Serve(ctx context.Context) {
	var bg sync.WaitGroup
	bg.Go(func() { c.consumeResults(ctx, c.resCons) })
	bg.Go(func() { c.sweep(ctx) })
	bg.Go(func() { c.serveAsks(ctx) })
	bg.Go(func() { c.forwardEvents(ctx, c.evCons) })
	bg.Wait()
}

// load reads a resumed run's record and plan from JetStream, and opens
// its repository.
func (c *coordinator) load(ctx context.Context) error {
	o := c.o
	e, err := c.bus.Runs.Get(ctx, o.RunID)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return exitcode.Usagef("no fleet run %s on this NATS server", o.RunID)
	}
	if err != nil {
		return fmt.Errorf("remote: %w", err)
	}
	if err := json.Unmarshal(e.Value(), &c.rec); err != nil {
		return fmt.Errorf("remote: run %s: %w", o.RunID, err)
	}
	var p fleet.Plan
	if err := json.Unmarshal(c.rec.Plan, &p); err != nil {
		return fmt.Errorf("remote: run %s's plan: %w", o.RunID, err)
	}
	p.Dir = c.rec.PlanDir
	c.plan = &p
	// The run's own lease, unless this resume set one.
	if o.Lease == DefaultLease && c.rec.Lease > 0 {
		c.o.Lease = c.rec.Lease
	}
	wt, err := c.openRepo(ctx)
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	c.wt, wt.Log = wt, c.log
	return nil
}

// openRepo opens a resumed run's repository: the submitter's, or on
// another host a clone of where the workers push.
func (c *coordinator) openRepo(ctx context.Context) (*worktree.Manager, error) {
	wt, err := worktree.Open(ctx, c.rec.Repo)
	if err == nil && !wt.IsAncestor(ctx, c.rec.Base, c.rec.Base) {
		err = fmt.Errorf("%s does not have the run's base %.12s", c.rec.Repo, c.rec.Base)
	}
	if err != nil && c.o.Clones != "" && c.rec.RepoURL != c.rec.Repo {
		// Not the submitter's host: merge in a clone of where the
		// workers push, and push the target back there.
		return c.cloneRepo(ctx)
	}
	return wt, err
}

// create makes a new run's record and puts it in JetStream, where only
// one run of that id may be.
func (c *coordinator) create(ctx context.Context) error {
	o := c.o
	c.plan = o.Plan
	rec, wt, err := newRecord(ctx, o.Plan, o.RunID, o.Repo, o.RepoURL, o.Lease, c.clock)
	if err != nil {
		return err
	}
	c.rec, c.wt, wt.Log = rec, wt, c.log
	data, _ := json.Marshal(c.rec)
	if _, err := c.bus.Runs.Create(ctx, o.RunID, data); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return exitcode.Usagef("fleet run %s exists already on this NATS server (use tai fleet resume %s --nats URL)", o.RunID, o.RunID)
		}
		return fmt.Errorf("remote: %w", err)
	}
	return nil
}

// readyTarget makes the target and the plan's copy: on a first run, and
// by the coordinator that adopts a submitted run.
func (c *coordinator) readyTarget(ctx context.Context) error {
	if err := c.wt.EnsureBranch(ctx, c.rec.Target, c.rec.Base); err != nil {
		return err
	}
	if c.pushTo != "" {
		// Workers fetch the target from there.
		if err := c.wt.NetGit().Push(ctx, c.wt.Repo, c.pushTo, "refs/heads/"+c.rec.Target+":refs/heads/"+c.rec.Target); err != nil {
			return fmt.Errorf("pushing the target to %s: %w", c.pushTo, err)
		}
	}
	plan := filepath.Join(c.o.Dir, "plan.json")
	if _, err := os.Stat(plan); err != nil {
		if err := worktree.WriteFileAtomic(plan, c.rec.Plan, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// initialState is the run's state: its tasks pending, then as their
// leases in JetStream say.
func (c *coordinator) initialState(ctx context.Context) fleet.State {
	o := c.o
	st := fleet.State{Version: 1, Run: o.RunID, Plan: filepath.Join(o.Dir, "plan.json"), PlanFrom: c.plan.File, Repo: c.wt.Repo,
		Base: c.rec.Base, Target: c.rec.Target, Created: c.rec.Created, Order: c.plan.Order(), Tasks: map[string]*fleet.TaskState{},
		Status: fleet.RunRunning, PID: os.Getpid()}
	if old, err := fleet.LoadState(o.Dir); err == nil && o.Resume {
		st.Resumes = old.Resumes + 1
	}
	if o.Resume {
		// The accounts parked when the coordinator stopped keep their
		// reset times, and the quota: budget what it spent: the engine
		// brings the parks back (as a local run's).
		if old, ok := c.savedState(ctx); ok {
			st.Parks, st.QuotaResumes, st.QuotaWaitedMS = old.Parks, old.QuotaResumes, old.QuotaWaitedMS
		}
	}
	for _, t := range c.plan.Tasks {
		st.Tasks[t.ID] = &fleet.TaskState{ID: t.ID, Agent: AgentToken(c.spec(t.AgentSpec)), Status: fleet.StatusPending,
			Branch: worktree.Branch(o.RunID, t.ID)}
	}
	// What JetStream knows wins: tasks merged, accepted, or out there.
	for id, ts := range st.Tasks {
		l, _, err := c.bus.GetLease(ctx, o.RunID, id)
		if err != nil {
			continue
		}
		fromLease(ts, l)
		st.Usage = addUsage(st.Usage, l.Usage)
		if l.State == LeaseMerged || l.State == LeaseAccepted {
			ts.Diff = c.attemptDiff(ctx, id, l)
		}
	}
	return st
}

// savedState is the run's state as its last coordinator saved it: in the
// state bucket (any host), else this host's state.json.
func (c *coordinator) savedState(ctx context.Context) (fleet.State, bool) {
	var st fleet.State
	if e, err := c.bus.State.Get(ctx, c.o.RunID); err == nil && json.Unmarshal(e.Value(), &st) == nil {
		return st, true
	}
	old, err := fleet.LoadState(c.o.Dir)
	if err != nil {
		return fleet.State{}, false
	}
	return *old, true
}

// attemptDiff is the change of task id's accepted attempt, what its
// dependents' prompts show of it: Base..its pushed ref (none: it changed
// nothing: "no changes"). nil when there is none or it cannot be read.
func (c *coordinator) attemptDiff(ctx context.Context, id string, l Lease) *worktree.DiffStat {
	ref := attemptRef(c.o.RunID, id, l.Attempt)
	if _, err := c.wt.RevParse(ctx, ref); err != nil || l.Base == "" {
		return nil
	}
	d, err := c.diffStat(ctx, l.Base+".."+ref)
	if err != nil {
		c.log.Warn("a dependency's diff", "task", id, "err", err)
		return nil
	}
	return &d
}

// fromLease sets a task's state from its lease.
func fromLease(ts *fleet.TaskState, l Lease) {
	ts.Attempts, ts.Usage, ts.Message, ts.Head, ts.Base, ts.Questions = l.Attempt, l.Usage, l.Message, l.Head, l.Base, l.Questions
	switch l.State {
	case LeaseMerged:
		ts.Status = fleet.StatusMerged
	case LeaseAccepted:
		ts.Status = fleet.StatusDone
	case LeaseFinal:
		ts.Status, ts.Reason = l.Status, l.Reason
	case LeaseClaimed:
		ts.Status = fleet.StatusRunning
	case LeaseOffered:
		ts.Status = fleet.StatusWaiting
	case LeaseParked:
		ts.Status = fleet.StatusParked
		if p := l.Park; p != nil && p.Started {
			ts.Park = &fleet.TaskPark{Session: p.Session, Resumable: p.Resumable}
		}
	}
}

// newRecord resolves a new run's repository, base and target.
func newRecord(ctx context.Context, plan *fleet.Plan, run, repo, repoURL string, lease time.Duration, clock quartz.Clock) (RunRecord, *worktree.Manager, error) {
	if repo == "" {
		repo = plan.Dir
	}
	wt, err := worktree.Open(ctx, repo)
	if err != nil {
		return RunRecord{}, nil, exitcode.With(exitcode.Usage, err)
	}
	sha, err := wt.RevParse(ctx, cmpOr(plan.Base, "HEAD"))
	if err != nil {
		return RunRecord{}, nil, exitcode.With(exitcode.Usage, fmt.Errorf("base: %w", err))
	}
	target := cmpOr(plan.Target, "tai-fleet/"+run)
	if p, ok, err := wt.CheckedOut(ctx, target); err != nil {
		return RunRecord{}, nil, err
	} else if ok {
		return RunRecord{}, nil, exitcode.Usagef("target branch %s is checked out in %s: tai merges only into branches no checkout has open", target, p)
	}
	planJSON, err := json.Marshal(plan)
	if err != nil {
		return RunRecord{}, nil, err
	}
	if repoURL == "" {
		repoURL = wt.Repo
	}
	if lease <= 0 {
		lease = DefaultLease
	}
	return RunRecord{Run: run, Plan: planJSON, PlanDir: plan.Dir, Repo: wt.Repo, RepoURL: repoURL, Base: sha, Target: target,
		Lease: lease, Created: clock.Now().UTC()}, wt, nil
}

func addUsage(a, b fleet.Usage) fleet.Usage {
	return fleet.Usage{Tokens: a.Tokens + b.Tokens, Turns: a.Turns + b.Turns, Cost: a.Cost + b.Cost}
}

// spec fills a task's agent from the plan's defaults.
func (c *coordinator) spec(a fleet.AgentSpec) fleet.AgentSpec {
	if a.Agent == "" && a.AgentCmd == "" {
		a.Agent, a.AgentCmd = c.plan.Defaults.Agent, c.plan.Defaults.AgentCmd
	}
	return a
}

// Saved puts the run's state in the state bucket, for tai fleet status
// --nats on any host, its messages cut to keep it under the message cap
// (fleet.Recorder).
func (c *coordinator) Saved(s fleet.State) {
	for _, t := range s.Tasks {
		t.Message = truncate(t.Message, 2<<10)
	}
	data, err := json.Marshal(&s)
	if err != nil || len(data) > MaxMessage {
		return
	}
	if _, err := c.bus.State.Put(context.Background(), c.o.RunID, data); err != nil {
		c.log.Warn("publishing the run's state", "err", err)
	}
}

// Emitted puts the run's event on its events stream (fleet.Recorder).
func (c *coordinator) Emitted(ev fleet.Event) {
	c.bus.Event(context.Background(), EventMsg{Time: ev.Time.UTC(), Run: c.o.RunID, Task: ev.Task, Kind: string(ev.Kind), Detail: ev.Detail})
	if ev.Kind == fleet.EventRunEnd {
		_ = c.bus.NC.Flush()
	}
}

func (c *coordinator) task(id string) fleet.TaskState { return c.e.Task(id) }

func (c *coordinator) setTask(id string, fn func(t *fleet.TaskState)) { c.e.SetTask(id, fn) }

// emit records a fleet event (audit log, progress, the events stream).
func (c *coordinator) emit(kind fleet.EventKind, task, detail string, data map[string]any) {
	c.e.Emit(kind, task, detail, data)
}

// forwardEvents records workers' events as the run's: fleet events in the
// audit log and progress, session frames in the run's frames. Each pull is
// a long poll the server answers as soon as an event is there, and ends
// with ctx: the end of the run does not wait for an idle pull to expire.
// It then forwards what the stream holds already (drain), so that the
// run's record has its workers' events up to its end.
func (c *coordinator) forwardEvents(ctx context.Context, cons jetstream.Consumer) {
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, idlePoll)
		batch, err := cons.Fetch(256, jetstream.FetchContext(pctx))
		if err == nil {
			c.forwardBatch(batch)
			err = batch.Error()
		}
		cancel()
		if err != nil && !idle(err) && !errors.Is(err, context.Canceled) && ctx.Err() == nil {
			c.log.Warn("pulling events", "err", err)
			pause(ctx, c.clock)
		}
	}
	c.drainEvents(cons)
}

// drainEvents forwards the events on the stream now, without waiting for
// more: each pull returns at once with what there is, and an empty one
// ends it.
func (c *coordinator) drainEvents(cons jetstream.Consumer) {
	for range maxDrain {
		batch, err := cons.FetchNoWait(256)
		if err != nil || c.forwardBatch(batch) == 0 {
			return
		}
	}
}

// forwardBatch forwards a pull's events and says how many there were.
func (c *coordinator) forwardBatch(batch jetstream.MessageBatch) int {
	n := 0
	for m := range batch.Messages() {
		c.forward(m)
		_ = m.Ack() // at once: a coordinator killed after this does not forward it again
		n++
	}
	return n
}

// forward records one of the run's events if a worker sent it.
func (c *coordinator) forward(m jetstream.Msg) {
	var ev EventMsg
	if json.Unmarshal(m.Data(), &ev) != nil || ev.Worker == "" {
		return // the coordinator's own
	}
	if ev.Kind == KindFrame {
		// A task's session frame: into this run's frames, as a local
		// task's would be.
		var de driver.Event
		if c.o.TaskSink != nil && ev.Task != "" && json.Unmarshal(ev.Frame, &de) == nil {
			c.o.TaskSink(ev.Task).Emit(de)
		}
		return
	}
	c.e.EmitAt(ev.Time, fleet.WorkerEvent(ev.Kind), ev.Task, ev.Worker+": "+ev.Detail, map[string]any{"worker": ev.Worker, "attempt": ev.Attempt, "forwarded": true})
}

// consumeResults reads workers' results and settles each by the lease.
func (c *coordinator) consumeResults(ctx context.Context, cons jetstream.Consumer) {
	for ctx.Err() == nil {
		msg, err := next(ctx, cons)
		if err != nil {
			if !idle(err) && ctx.Err() == nil {
				c.log.Warn("pulling results", "err", err)
				pause(ctx, c.clock)
			}
			continue
		}
		var r ResultMsg
		if err := json.Unmarshal(msg.Data(), &r); err != nil {
			_ = msg.Term()
			continue
		}
		if err := c.settle(ctx, r); err != nil {
			c.log.Warn("settling a result", "task", r.Task, "err", err)
			_ = msg.Nak()
			continue
		}
		_ = msg.Ack()
	}
}

// settle accepts a result only from the attempt that holds the task's
// lease, by compare-and-swap: a later claim and this acceptance cannot
// both win.
func (c *coordinator) settle(ctx context.Context, r ResultMsg) error {
	ch, ok := c.results[r.Task]
	if !ok || r.Run != c.o.RunID {
		return nil // not this run's task: dropped
	}
	for {
		l, rev, err := c.bus.GetLease(ctx, c.o.RunID, r.Task)
		if err != nil {
			return err
		}
		mine := l.Attempt == r.Attempt && l.Worker == r.Worker
		switch {
		case mine && (l.State == LeaseAccepted || l.State == LeaseMerged || l.State == LeaseFinal || l.State == LeaseParked):
			// A redelivered result, settled already. Settled by this
			// coordinator's write whose reply was lost (a timeout), it
			// was never handed to its task, which still waits for it.
			if l.State != LeaseMerged && c.handed[r.Task] != r.Attempt {
				if st := c.task(r.Task).Status; st == fleet.StatusRunning || st == fleet.StatusWaiting {
					c.hand(ch, r, l)
				}
			}
			return nil
		case !mine || l.State != LeaseClaimed || r.Lost:
			why := fmt.Sprintf("attempt %d by %s is not the lease holder (lease: %s, attempt %d by %s)", r.Attempt, r.Worker, l.State, l.Attempt, l.Worker)
			if mine && r.Lost {
				why = fmt.Sprintf("attempt %d by %s reports it lost its lease", r.Attempt, r.Worker)
			}
			c.emit(fleet.EventRefused, r.Task, "stale result: "+why, map[string]any{"attempt": r.Attempt, "worker": r.Worker, "lease_attempt": l.Attempt, "head": r.Head})
			return nil
		}
		next := Lease{State: LeaseAccepted, Worker: r.Worker, Attempt: r.Attempt, Head: r.Head, Status: r.Outcome.Status, Reason: r.Outcome.Reason,
			Usage: r.Outcome.Usage, Message: truncate(r.Outcome.Message, 16<<10), Base: r.Base, Questions: r.Outcome.Questions}
		switch {
		case r.Outcome.Status == fleet.StatusParked:
			// Its account is at a limit: Run parks it, and offers it
			// again at the reset, from this attempt's work and session.
			next.State, next.Park = LeaseParked, r.Outcome.Park
		case r.Outcome.Status != fleet.StatusDone:
			next.State = LeaseFinal
		}
		if next.State != LeaseAccepted {
		} else if err := c.checkRef(ctx, r); err != nil {
			next.State, next.Status, next.Reason = LeaseFinal, fleet.StatusFailed, err.Error()
		}
		if _, err := c.bus.PutLease(ctx, c.o.RunID, r.Task, next, rev); err != nil {
			if isConflict(err) {
				continue // the lease moved (a new claim): judge again
			}
			return err
		}
		c.hand(ch, r, next)
		return nil
	}
}

// hand announces an accepted result and hands it to its task.
func (c *coordinator) hand(ch chan Lease, r ResultMsg, l Lease) {
	c.emit(fleet.EventAccepted, r.Task, fmt.Sprintf("attempt %d by %s: %s", r.Attempt, r.Worker, l.Status),
		map[string]any{"attempt": r.Attempt, "worker": r.Worker, "head": r.Head, "audit_head": r.AuditHead, "audit_seq": r.AuditSeq, "usage": r.Outcome.Usage})
	if c.handed == nil {
		c.handed = map[string]int{}
	}
	c.handed[r.Task] = r.Attempt
	select {
	case ch <- l:
	default:
	}
}

// checkRef: the pushed ref holds the reported commit.
func (c *coordinator) checkRef(ctx context.Context, r ResultMsg) error {
	want := attemptRef(c.o.RunID, r.Task, r.Attempt)
	if r.Ref == "" {
		// No change: the head is a commit of the target's history.
		if r.Head == "" || !c.wt.IsAncestor(ctx, r.Head, "refs/heads/"+c.rec.Target) {
			return fmt.Errorf("the result reports no change, but its head %.12s is not in %s", r.Head, c.rec.Target)
		}
		return nil
	}
	if r.Ref != want {
		return fmt.Errorf("the result names ref %q, not %s", r.Ref, want)
	}
	got, err := c.wt.RevParse(ctx, want)
	if err != nil {
		if c.rec.RepoURL != c.wt.Repo {
			if ferr := c.wt.NetGit().Fetch(ctx, c.rec.RepoURL, "+"+want+":"+want); ferr != nil {
				return fmt.Errorf("fetching %s: %w", want, ferr)
			}
			got, err = c.wt.RevParse(ctx, want)
		}
		if err != nil {
			return fmt.Errorf("the attempt's ref %s is not in the repository: %w", want, err)
		}
	}
	if got != r.Head {
		return fmt.Errorf("ref %s is %.12s, the result says %.12s", want, got, r.Head)
	}
	return nil
}

// sweep re-offers, once per lease period, a task whose message is gone
// while nobody holds it: an ack from an attempt that had lost its lease
// removes the message its successor worked on (nats-server#4786), and a
// coordinator killed between offering and publishing leaves none.
func (c *coordinator) sweep(ctx context.Context) {
	tk := c.clock.NewTicker(c.o.Lease, "coordinator", "sweep")
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
		for _, id := range c.plan.Order() {
			ts := c.task(id)
			if ts.Status != fleet.StatusRunning && ts.Status != fleet.StatusWaiting {
				continue
			}
			c.ensureOffered(ctx, id, false)
		}
	}
}

// ensureOffered republishes task id when its lease is open (offered, or
// claimed and run out) and no message for it is on the queue.
func (c *coordinator) ensureOffered(ctx context.Context, id string, now bool) {
	l, rev, err := c.bus.GetLease(ctx, c.o.RunID, id)
	if err != nil {
		return
	}
	open := l.State == LeaseOffered || (l.State == LeaseClaimed && c.clock.Now().After(l.Deadline.Add(c.o.Lease)))
	if !open && !(now && l.State == LeaseClaimed && c.clock.Now().After(l.Deadline)) {
		return
	}
	c.mu.Lock()
	limits, handed := c.limits[id]
	c.mu.Unlock()
	if !handed {
		return // the fleet has not handed it over (yet): it offers it then
	}
	t := c.plan.Task(id)
	subj := taskSubject(AgentToken(c.spec(t.AgentSpec)), c.o.RunID, id)
	if _, err := c.bus.Tasks.GetLastMsgForSubject(ctx, subj); err == nil || !errors.Is(err, jetstream.ErrMsgNotFound) {
		return // still queued (or the server cannot say)
	}
	tm, err := c.taskMsg(ctx, t, limits)
	if err != nil {
		return
	}
	if err := c.bus.Publish(ctx, subj, tm, jetstream.WithMsgID(fmt.Sprintf("%s/%s/%d", c.o.RunID, id, rev))); err == nil {
		c.emit(fleet.EventReoffered, id, fmt.Sprintf("no message on the queue and the lease (attempt %d) is open", l.Attempt), nil)
	}
}

// taskMsg renders a task's offer: its prompt with its dependencies'
// results, and the target's commit now (they are merged into it).
func (c *coordinator) taskMsg(ctx context.Context, t *fleet.Task, limits fleet.Limits) (TaskMsg, error) {
	prompt, err := c.e.Prompt(ctx, t)
	if err != nil {
		return TaskMsg{}, err
	}
	base, err := c.wt.RevParse(ctx, "refs/heads/"+c.rec.Target)
	if err != nil {
		return TaskMsg{}, err
	}
	return TaskMsg{Run: c.o.RunID, Task: t.ID, Plan: c.rec.Plan, PlanDir: c.rec.PlanDir, Prompt: prompt, RepoURL: c.rec.RepoURL,
		Target: c.rec.Target, Base: base, Limits: limits, Lease: c.o.Lease, Interactive: c.o.Prompter != nil}, nil
}

// diffStat is the change of a commit range (worktree.Manager.Diff is a
// worktree's, untracked files included).
func (c *coordinator) diffStat(ctx context.Context, rng string) (worktree.DiffStat, error) {
	return c.wt.Git().NumStat(ctx, c.wt.Repo, rng)
}

// Run offers a task the fleet handed over, waits for the attempt holding
// its lease to report, and records that result as the task's
// (fleet.Executor). A task offered before the coordinator stopped is out
// there already: it is offered again only if its message went missing.
// An attempt that reports parked (its account at a usage limit) parks
// the task in the engine, as a local one is; when its account is
// released the task is offered again, from that attempt's work and
// session. While an attempt runs, a park of its account tells its worker
// to stop it and report it parked (parkLease).
func (c *coordinator) Run(ctx context.Context, r *fleet.TaskRun) fleet.Usage {
	t := r.Task
	c.mu.Lock()
	c.limits[t.ID] = r.Res.Limits
	c.mu.Unlock()
	prev := r.Prev.Status
	if tp := r.Prev.Park; prev == fleet.StatusParked && tp != nil {
		// Parked when the coordinator stopped: it resumes where it was.
		how := "in its own session " + tp.Session
		if !tp.Resumable {
			how = "in a new session told what was done so far (its agent cannot resume one)"
		}
		c.emit(fleet.EventResumed, t.ID, "resumed after the run's restart, "+how, map[string]any{"account": r.Prev.Account, "session": tp.Session, "resumable": tp.Resumable})
	}
	var spent fleet.Usage
	for {
		// Offered only while its account is not parked (a park after the
		// offer reaches its worker through the lease).
		offered := false
		var err error
		leave := c.e.EnterTurn(t.ID, func(cause error) {
			if offered && fleet.ParkedCause(cause) {
				c.parkLease(context.WithoutCancel(ctx), t.ID, cause.Error())
			}
		}, func() {
			offered, err = true, c.offer(ctx, t, prev, r.Res.Limits)
		})
		if !offered {
			// Its account parked as it was to be offered: it waits with it.
			leave()
			var tp *fleet.TaskPark
			if prev == fleet.StatusParked {
				tp = r.Prev.Park
			}
			if c.parkEnds(ctx, t.ID, c.e.Park(ctx, t.ID, nil, tp)) {
				return spent
			}
			continue
		}
		if err != nil {
			leave()
			c.setTask(t.ID, func(x *fleet.TaskState) {
				x.Status, x.Reason, x.ExitCode = fleet.StatusFailed, err.Error(), int(exitcode.AgentError)
			})
			c.emit(fleet.EventFailed, t.ID, "offering: "+err.Error(), nil)
			return spent
		}
		var accepted Lease
		select {
		case accepted = <-c.results[t.ID]:
		case <-ctx.Done():
			leave()
			// Still out there: a resumed coordinator takes its result.
			c.setTask(t.ID, func(x *fleet.TaskState) { x.Reason = "coordinator stopped: " + context.Cause(ctx).Error() })
			return spent
		}
		leave()
		spent = addUsage(spent, accepted.Usage)
		if accepted.State != LeaseParked {
			c.accepted(ctx, t, accepted, spent)
			return spent
		}
		prev = fleet.StatusParked
		var l *quota.Limit
		var tp *fleet.TaskPark // nil: it parked before its agent had a session
		if p := accepted.Park; p != nil {
			l = p.Limit
			if p.Started {
				tp = &fleet.TaskPark{Session: p.Session, Resumable: p.Resumable}
			}
		}
		c.setTask(t.ID, func(x *fleet.TaskState) {
			x.Attempts, x.Usage, x.Message, x.Head, x.Base = accepted.Attempt, spent, accepted.Message, accepted.Head, accepted.Base
		})
		if c.parkEnds(ctx, t.ID, c.e.Park(ctx, t.ID, l, tp)) {
			return spent
		}
	}
}

// parkEnds records how a parked task ends when the engine's Park says it
// does not resume (err: *fleet.ParkEnd, or the run's end), and says so.
func (c *coordinator) parkEnds(ctx context.Context, id string, err error) bool {
	var pe *fleet.ParkEnd
	switch {
	case errors.As(err, &pe):
		c.setTask(id, func(x *fleet.TaskState) {
			x.Status, x.Reason, x.ExitCode, x.Finished = pe.Status, pe.Reason, int(pe.Code), c.clock.Now().UTC()
		})
		return true
	case err != nil || ctx.Err() != nil:
		return true
	}
	return false
}

// accepted records an accepted (or final) attempt as the task's; spent is
// what the task's attempts in this run spent in all.
func (c *coordinator) accepted(ctx context.Context, t *fleet.Task, accepted Lease, spent fleet.Usage) {
	c.setTask(t.ID, func(x *fleet.TaskState) {
		x.Attempts, x.Usage, x.Message, x.Head, x.Status, x.Reason = accepted.Attempt, spent, accepted.Message, accepted.Head, accepted.Status, accepted.Reason
		x.Questions, x.Base = accepted.Questions, accepted.Base
		x.Finished = c.clock.Now().UTC()
		x.ExitCode = 0
		x.Park = nil
		if accepted.State != LeaseAccepted {
			if x.Status == fleet.StatusDone {
				x.Status = fleet.StatusFailed // its ref did not check out
			}
			x.ExitCode = int(exitcode.AgentError)
			if accepted.Status == fleet.StatusBudget {
				x.ExitCode = int(exitcode.BudgetExceeded)
			}
		}
	})
	if accepted.State != LeaseAccepted {
		c.emit(fleet.EventFailed, t.ID, accepted.Reason, nil)
	} else if !t.Merges(c.plan) {
		// Kept, not merged (a compare's candidate): its work comes home on
		// its branch, where the engine scores it and a pick takes it.
		if err := c.keep(ctx, t.ID, accepted); err != nil {
			c.setTask(t.ID, func(x *fleet.TaskState) {
				x.Status, x.Reason, x.ExitCode = fleet.StatusFailed, "bringing its work home: "+err.Error(), int(exitcode.AgentError)
			})
			c.emit(fleet.EventFailed, t.ID, "bringing its work home: "+err.Error(), nil)
		}
	}
}

// parkLease tells the worker of task id's attempt that its account
// parked: Parking on its claim (or on its offer, for the worker that
// claims it), by compare-and-swap. Its worker stops the attempt and
// reports it parked; a lease that is settled already is left alone.
func (c *coordinator) parkLease(ctx context.Context, id, why string) {
	for range 10 {
		l, rev, err := c.bus.GetLease(ctx, c.o.RunID, id)
		if err != nil || (l.State != LeaseClaimed && l.State != LeaseOffered) || l.Parking != "" {
			return
		}
		l.Parking = why
		if _, err = c.bus.PutLease(ctx, c.o.RunID, id, l, rev); err == nil {
			c.emit(fleet.EventParked, id, fmt.Sprintf("told attempt %d (%s) to stop and hand back parked: %s", l.Attempt, cmpOr(l.Worker, "not claimed yet"), why),
				map[string]any{"attempt": l.Attempt, "worker": l.Worker})
			return
		}
		if !isConflict(err) {
			c.log.Warn("parking a lease", "task", id, "err", err)
			return
		}
	}
}

// keep puts an accepted attempt that is not merged on the task's branch
// here, with its change against its base.
func (c *coordinator) keep(ctx context.Context, id string, l Lease) error {
	if l.Base == "" || l.Head == "" {
		return fmt.Errorf("attempt %d's result names no base or head commit", l.Attempt)
	}
	branch := worktree.Branch(c.o.RunID, id)
	c.dropStaleRefLock(branch)
	if err := c.wt.SetBranch(ctx, branch, l.Head); err != nil {
		return err
	}
	d, err := c.diffStat(ctx, l.Base+".."+l.Head)
	if err != nil {
		return err
	}
	c.setTask(id, func(x *fleet.TaskState) { x.Branch, x.Base, x.Diff = branch, l.Base, &d })
	return nil
}

// offer puts the task on the queue, its lease first (so a worker finds
// it), with a message id the server deduplicates on.
func (c *coordinator) offer(ctx context.Context, t *fleet.Task, prev fleet.TaskStatus, limits fleet.Limits) error {
	if prev == fleet.StatusRunning || prev == fleet.StatusWaiting {
		// Offered before the coordinator stopped: it is out there already,
		// unless its message went missing.
		c.ensureOffered(ctx, t.ID, true)
		return nil
	}
	tm, err := c.taskMsg(ctx, t, limits)
	if err != nil {
		return err
	}
	rev, err := c.bus.PutLease(ctx, c.o.RunID, t.ID, Lease{State: LeaseOffered}, 0)
	if errors.Is(err, jetstream.ErrKeyExists) {
		// A parked attempt's task, offered again: from its work and
		// session.
		rev, tm.Resume, err = c.unpark(ctx, t.ID)
	}
	if err != nil {
		return err
	}
	if err := c.bus.Publish(ctx, taskSubject(AgentToken(c.spec(t.AgentSpec)), c.o.RunID, t.ID), tm, jetstream.WithMsgID(fmt.Sprintf("%s/%s/%d", c.o.RunID, t.ID, rev))); err != nil {
		return err
	}
	c.setTask(t.ID, func(x *fleet.TaskState) { x.Status, x.Started = fleet.StatusWaiting, c.clock.Now().UTC() })
	c.emit(fleet.EventOffered, t.ID, "agent "+AgentToken(c.spec(t.AgentSpec)), map[string]any{"base": tm.Base})
	return nil
}

// unpark offers a parked task's lease again (the next claim is the next
// attempt) and names the parked attempt the offer resumes; a lease that
// is not parked is left as it is (rev 0).
func (c *coordinator) unpark(ctx context.Context, id string) (uint64, *Resume, error) {
	for range 10 {
		l, rev, err := c.bus.GetLease(ctx, c.o.RunID, id)
		if err != nil {
			return 0, nil, err
		}
		if l.State != LeaseParked {
			return 0, nil, nil
		}
		var rs *Resume // none: the attempt parked before its first turn
		if p := l.Park; p != nil && p.Started {
			rs = &Resume{Attempt: l.Attempt, Worker: l.Worker, Session: p.Session, Resumable: p.Resumable}
		}
		nrev, err := c.bus.PutLease(ctx, c.o.RunID, id, Lease{State: LeaseOffered, Attempt: l.Attempt}, rev)
		if err == nil {
			return nrev, rs, nil
		}
		if !isConflict(err) {
			return 0, nil, err
		}
	}
	return 0, nil, fmt.Errorf("the parked lease of %s kept changing", id)
}

// PrepareMerge puts a done task's accepted attempt on its branch for
// fleet's merge queue (fleet.Merger), from its lease: also the merge of a
// task accepted before a coordinator restart. An attempt that changed
// nothing (its head is in the target's history) has nothing to integrate:
// it is merged here, with no worktree made.
func (c *coordinator) PrepareMerge(ctx context.Context, r *fleet.TaskRun) (bool, error) {
	id := r.Task.ID
	l, _, err := c.bus.GetLease(ctx, c.o.RunID, id)
	if err != nil {
		return false, err
	}
	c.mu.Lock()
	c.workers[id] = l.Worker
	c.mu.Unlock()
	target := "refs/heads/" + c.rec.Target
	if l.Head != "" && c.wt.IsAncestor(ctx, l.Head, target) {
		head, err := c.wt.RevParse(ctx, target)
		if err != nil {
			return false, err
		}
		c.setTask(id, func(x *fleet.TaskState) {
			x.Status, x.Head, x.ExitCode, x.Diff, x.Worktree = fleet.StatusMerged, head, 0, &worktree.DiffStat{}, ""
		})
		// An accepted attempt already in the target may be one a killed
		// coordinator merged, and recorded, before it marked the lease.
		if c.recorded[id] != l.Attempt {
			c.emit(fleet.EventMerged, id, fmt.Sprintf("attempt %d -> %s at %.12s (no changes)", l.Attempt, c.rec.Target, head),
				map[string]any{"attempt": l.Attempt, "worker": l.Worker, "head": head, "target": c.rec.Target})
		}
		c.finalLease(ctx, id, func(x *Lease) { x.State, x.Head = LeaseMerged, head })
		return true, nil
	}
	branch := worktree.Branch(c.o.RunID, id)
	// The merge worktree is the coordinator's scratch space (the work is
	// in the attempt's ref): one a killed coordinator left, half made or
	// behind the branch, is made again.
	if p := c.wt.Path(c.o.RunID, id); fileExists(p) {
		_ = c.wt.NetGit().RemoveWorktree(ctx, p)
	}
	c.dropStaleRefLock(branch)
	if err := c.wt.SetBranch(ctx, branch, l.Head); err != nil {
		return false, err
	}
	// Its change, which the merge queue checks against the task's owns: a
	// change that cannot be read is not merged.
	if l.Base == "" {
		return false, fmt.Errorf("attempt %d's result names no base commit", l.Attempt)
	}
	d, err := c.diffStat(ctx, l.Base+".."+l.Head)
	if err != nil {
		return false, err
	}
	c.setTask(id, func(x *fleet.TaskState) { x.Branch, x.Base, x.Diff = branch, l.Base, &d })
	return false, nil
}

// Merged names the accepted attempt in the merged event (fleet.Merger).
func (c *coordinator) Merged(ts fleet.TaskState) (string, map[string]any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("attempt %d", ts.Attempts), map[string]any{"attempt": ts.Attempts, "worker": c.workers[ts.ID]}
}

// MergeEnded pushes the target where the workers fetch it, and records
// the merge's end in the task's lease (fleet.Merger). The merged event is
// in the audit log before the lease says merged: a coordinator killed
// between the two leaves the lease accepted, and its successor finds the
// attempt in the target and the merge in the audit log.
func (c *coordinator) MergeEnded(ctx context.Context, ts fleet.TaskState) {
	if ts.Status != fleet.StatusMerged {
		c.finalLease(ctx, ts.ID, func(x *Lease) { x.State, x.Status, x.Reason = LeaseFinal, ts.Status, ts.Reason })
		return
	}
	if c.pushTo != "" {
		if err := c.wt.NetGit().Push(ctx, c.wt.Repo, c.pushTo, "refs/heads/"+c.rec.Target+":refs/heads/"+c.rec.Target); err != nil {
			c.emit(fleet.EventWarning, ts.ID, "pushing the target: "+err.Error(), nil)
		}
	}
	c.finalLease(ctx, ts.ID, func(x *Lease) { x.State, x.Head = LeaseMerged, ts.Head })
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// recordedMerges reads the merges an audit log records, task to attempt.
// An unreadable log records none: a merge is then recorded again rather
// than not at all.
func recordedMerges(path string) map[string]int {
	out := map[string]int{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	_ = audit.Read(f, func(_ int, e audit.Entry) error {
		if e.Kind != audit.KindFleet {
			return nil
		}
		var d struct {
			Event   string `json:"event"`
			Task    string `json:"task"`
			Attempt int    `json:"attempt"`
		}
		if json.Unmarshal(e.Data, &d) == nil && d.Event == string(fleet.EventMerged) && d.Task != "" {
			out[d.Task] = d.Attempt
		}
		return nil
	})
	return out
}

// dropStaleRefLock removes the ref lock a coordinator killed while
// updating one of the run's task branches left (git's "cannot lock ref":
// seen when kill -9 came during the update-ref). This process holds the
// run's lock, and only the run's coordinator writes those branches.
func (c *coordinator) dropStaleRefLock(branch string) {
	if !strings.HasPrefix(branch, worktree.BranchPrefix+c.o.RunID+"/") || strings.Contains(branch, "..") {
		return
	}
	_ = os.Remove(filepath.Join(c.wt.CommonDir, "refs", "heads", filepath.FromSlash(branch)+".lock"))
}

// finalLease updates the coordinator's own record of a settled task.
func (c *coordinator) finalLease(ctx context.Context, id string, fn func(*Lease)) {
	for range 10 {
		l, rev, err := c.bus.GetLease(ctx, c.o.RunID, id)
		if err != nil {
			c.log.Error("lease", "task", id, "err", err)
			return
		}
		fn(&l)
		_, err = c.bus.PutLease(ctx, c.o.RunID, id, l, rev)
		if err == nil {
			return
		}
		if !isConflict(err) {
			// The task's outcome is in the run's state and audit log; a
			// resumed coordinator goes by those (recordedMerges).
			c.log.Error("lease", "task", id, "err", err)
			return
		}
	}
	c.log.Error("lease", "task", id, "err", "still changing after 10 tries")
}

// Finished records a run that is over in its record, so that a hub's
// coordinator does not adopt it again (fleet.Finisher).
func (c *coordinator) Finished(ctx context.Context, st fleet.State) {
	if st.Status == fleet.RunInterrupted {
		return
	}
	rec := c.rec
	rec.Finished, rec.Status, rec.ExitCode = c.clock.Now().UTC(), st.Status, st.ExitCode
	if data, err := json.Marshal(rec); err == nil {
		if _, err := c.bus.Runs.Put(context.WithoutCancel(ctx), c.o.RunID, data); err != nil {
			c.log.Warn("recording the run's end", "err", err)
		}
	}
}
