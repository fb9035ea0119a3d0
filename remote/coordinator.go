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
	"github.com/gofrs/flock"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tai-dev/tai/agentspec"
	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/fleet"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/sandbox"
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
	RepoURL  string
	Lease    time.Duration
	Resume   bool
	Audit    *audit.Log // required
	Progress func(fleet.Event)
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
	// Clones is where a coordinator that adopts a run from another host
	// (tai hub --coordinate) keeps its clones of the runs' repositories.
	Clones string
}

// ErrBusy: another process coordinates the run.
var ErrBusy = errors.New("already being coordinated by another process")

type coordinator struct {
	o     CoordinatorOptions
	bus   *Bus
	rec   RunRecord
	plan  *fleet.Plan
	wt    *worktree.Manager
	meter *fleet.Meter
	clock quartz.Clock
	log   *slog.Logger

	// mem holds the run's "always" answers, by policy memory key;
	// humanTurn lets one permission ask at a time reach the human.
	mem       *policy.Memory
	humanTurn chan struct{}

	mu      sync.Mutex
	st      fleet.State
	evMu    sync.Mutex
	mergeMu sync.Mutex
	done    map[string]chan struct{}
	results map[string]chan Lease // accepted results, to their task's goroutine
	handed  map[string]bool       // tasks whose result went on results (settle's goroutine only)
	pushTo  string                // where the target goes after each merge (a clone's origin)
	// recorded: the attempt of each task whose merge this run's audit log
	// records already (read on resume).
	recorded map[string]int
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

// Coordinate runs (or resumes) a fleet whose tasks workers run: it
// schedules the DAG, reserves each task's budget before offering it,
// accepts only the attempt holding a task's lease, and merges through the
// fast-forward queue. Its state is JetStream's; state.json mirrors it for
// tai fleet status.
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
	if !worktree.ValidName(o.RunID) {
		return nil, exitcode.Usagef("invalid run id %q", o.RunID)
	}
	if o.Dir == "" {
		o.Dir = fleet.RunDir(o.RunID)
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("remote: %w", err)
	}
	lk := flock.New(filepath.Join(o.Dir, "run.lock"))
	got, err := lk.TryLock()
	if err != nil {
		return nil, fmt.Errorf("remote: %w", err)
	}
	if !got {
		return nil, exitcode.With(exitcode.Usage, fmt.Errorf("fleet run %s is %w", o.RunID, ErrBusy))
	}
	defer func() { _ = lk.Unlock() }()
	c := &coordinator{o: o, bus: o.Bus, clock: o.Clock, log: o.Logger, done: map[string]chan struct{}{}, results: map[string]chan Lease{},
		mem: policy.NewMemory(policy.ScopeRun), humanTurn: make(chan struct{}, 1)}
	if err := c.init(ctx); err != nil {
		return nil, err
	}
	return c.run(ctx)
}

// init loads (on resume) or creates the run's record, readies the target,
// and rebuilds the run's state from what JetStream knows.
func (c *coordinator) init(ctx context.Context) error {
	o := c.o
	load := c.create
	if o.Resume {
		load = c.load
	}
	if err := load(ctx); err != nil {
		return err
	}
	if err := c.readyTarget(ctx); err != nil {
		return err
	}
	c.st = c.initialState(ctx)
	if o.Resume {
		c.recorded = recordedMerges(o.Audit.Path())
	}
	for _, t := range c.plan.Tasks {
		if err := c.bus.SetLease(ctx, AgentToken(c.spec(t.AgentSpec)), c.o.Lease); err != nil {
			return err
		}
	}
	c.meter = fleet.NewMeter(c.plan.Budget, max(c.plan.Concurrency, 1), c.st.Usage, func(dim string, used, limit float64) {
		c.emit(fleet.EventBudget, "", fmt.Sprintf("soft limit: the fleet has used %.4g of %.4g %s", used, limit, dim), nil)
	})
	return c.save()
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
	}
	return st
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

func (c *coordinator) save() error {
	c.mu.Lock()
	c.st.Updated = c.clock.Now().UTC()
	data, err := json.MarshalIndent(&c.st, "", "  ")
	c.mu.Unlock()
	if err != nil {
		return err
	}
	// The bus has it too, for tai fleet status --nats on any host.
	c.pubState()
	return worktree.WriteFileAtomic(filepath.Join(c.o.Dir, "state.json"), data, 0o600)
}

// pubState puts the run's state in the state bucket, its messages cut to
// keep it under the message cap.
func (c *coordinator) pubState() {
	s := c.snapshot()
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

func (c *coordinator) task(id string) fleet.TaskState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return *c.st.Tasks[id]
}

func (c *coordinator) setTask(id string, fn func(t *fleet.TaskState)) {
	c.mu.Lock()
	fn(c.st.Tasks[id])
	c.mu.Unlock()
	if err := c.save(); err != nil {
		c.log.Error("saving fleet state", "err", err)
	}
}

func (c *coordinator) snapshot() fleet.State {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.st
	s.Tasks = map[string]*fleet.TaskState{}
	for k, v := range c.st.Tasks {
		cp := *v
		s.Tasks[k] = &cp
	}
	return s
}

// emit records a fleet event (audit log, progress, the events stream).
func (c *coordinator) emit(kind fleet.EventKind, task, detail string, data map[string]any) {
	c.emitAt(c.clock.Now(), kind, task, detail, data)
}

// emitAt records an event that happened at t (a worker's, forwarded).
func (c *coordinator) emitAt(t time.Time, kind fleet.EventKind, task, detail string, data map[string]any) {
	if data == nil {
		data = map[string]any{}
	}
	data["event"], data["task"] = kind, task
	if detail != "" {
		data["detail"] = detail
	}
	k := audit.KindFleet
	if kind == fleet.EventBudget {
		k = audit.KindBudget
	}
	// The audit log, then the progress line, then the event stream: the
	// two local records come first and together, so a coordinator killed
	// in the network round trip has shown what it recorded.
	if err := c.o.Audit.Append(k, "", data); err != nil {
		c.log.Error("audit", "err", err)
	}
	c.evMu.Lock()
	if c.o.Progress != nil {
		c.o.Progress(fleet.Event{Time: t, Kind: kind, Task: task, Detail: detail, State: c.snapshot()})
	}
	c.evMu.Unlock()
	c.bus.Event(context.Background(), EventMsg{Time: t.UTC(), Run: c.o.RunID, Task: task, Kind: string(kind), Detail: detail})
}

func (c *coordinator) run(ctx context.Context) (*fleet.State, error) {
	st := c.snapshot()
	c.emit(fleet.EventRunStart, "", fmt.Sprintf("%d task(s) over NATS, target %s, workers clone %s", len(st.Tasks), st.Target, c.rec.RepoURL),
		map[string]any{"run": st.Run, "resume": c.o.Resume, "base": st.Base, "target": st.Target, "repo_url": c.rec.RepoURL})
	if w := c.plan.CheckWarning(); w != "" {
		c.emit(fleet.EventWarning, "", w, map[string]any{"check": c.plan.Check, "check_sandbox": c.plan.CheckSandbox})
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	for _, id := range st.Order {
		c.done[id] = make(chan struct{})
		c.results[id] = make(chan Lease, 1)
	}
	// Workers' events go into this run's audit log as they come, through
	// a durable consumer: a resumed coordinator forwards those that came
	// while none was running, and none twice.
	evCons, err := c.bus.Events.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "fwd-" + strings.ReplaceAll(token(c.o.RunID), "%", "_"),
		FilterSubject: EventFilter(c.o.RunID), AckPolicy: jetstream.AckAllPolicy, AckWait: time.Minute, MaxDeliver: -1})
	if err != nil {
		return nil, fmt.Errorf("remote: events consumer: %w", err)
	}

	cons, err := c.bus.Results.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "coord-" + strings.ReplaceAll(token(c.o.RunID), "%", "_"),
		FilterSubject: resultSubject(c.o.RunID), AckPolicy: jetstream.AckExplicitPolicy, AckWait: resultAckWait, MaxDeliver: -1})
	if err != nil {
		return nil, fmt.Errorf("remote: results consumer: %w", err)
	}
	var bg sync.WaitGroup
	bgCtx, stopBg := context.WithCancel(runCtx)
	bg.Go(func() { c.consumeResults(bgCtx, cons) })
	bg.Go(func() { c.sweep(bgCtx) })
	bg.Go(func() { c.serveAsks(bgCtx) })
	bg.Go(func() { c.forwardEvents(bgCtx, evCons) })

	var g sync.WaitGroup
	for _, id := range st.Order {
		g.Go(func() {
			defer close(c.done[id])
			c.schedule(runCtx, id)
		})
	}
	g.Wait()
	stopBg()
	bg.Wait()
	end := c.finish(ctx)
	if ctx.Err() == nil {
		purgeHuman(context.WithoutCancel(ctx), c.bus, c.o.RunID) // its asks are over
	}
	return end, nil
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
	c.emitAt(ev.Time, fleet.WorkerEvent(string(ev.Kind)), ev.Task, ev.Worker+": "+ev.Detail, map[string]any{"worker": ev.Worker, "attempt": ev.Attempt, "forwarded": true})
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
		case mine && (l.State == LeaseAccepted || l.State == LeaseMerged || l.State == LeaseFinal):
			// A redelivered result, settled already. Settled by this
			// coordinator's write whose reply was lost (a timeout), it
			// was never handed to its task, which still waits for it.
			if l.State != LeaseMerged && !c.handed[r.Task] {
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
		if r.Outcome.Status != fleet.StatusDone {
			next.State = LeaseFinal
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
		c.handed = map[string]bool{}
	}
	c.handed[r.Task] = true
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
		for _, id := range c.st.Order {
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
	t := c.plan.Task(id)
	subj := taskSubject(AgentToken(c.spec(t.AgentSpec)), c.o.RunID, id)
	if _, err := c.bus.Tasks.GetLastMsgForSubject(ctx, subj); err == nil || !errors.Is(err, jetstream.ErrMsgNotFound) {
		return // still queued (or the server cannot say)
	}
	tm, err := c.taskMsg(ctx, t)
	if err != nil {
		return
	}
	if err := c.bus.Publish(ctx, subj, tm, jetstream.WithMsgID(fmt.Sprintf("%s/%s/%d", c.o.RunID, id, rev))); err == nil {
		c.emit(fleet.EventReoffered, id, fmt.Sprintf("no message on the queue and the lease (attempt %d) is open", l.Attempt), nil)
	}
}

// taskMsg renders a task's offer: its prompt with its dependencies'
// results, and the target's commit now (they are merged into it).
func (c *coordinator) taskMsg(ctx context.Context, t *fleet.Task) (TaskMsg, error) {
	results := map[string]fleet.TaskResult{}
	for _, d := range t.DependsOn {
		results[d] = c.result(ctx, d)
	}
	prompt, err := fleet.RenderPrompt(t, c.plan, results)
	if err != nil {
		return TaskMsg{}, err
	}
	base, err := c.wt.RevParse(ctx, "refs/heads/"+c.rec.Target)
	if err != nil {
		return TaskMsg{}, err
	}
	return TaskMsg{Run: c.o.RunID, Task: t.ID, Plan: c.rec.Plan, PlanDir: c.rec.PlanDir, Prompt: prompt, RepoURL: c.rec.RepoURL,
		Target: c.rec.Target, Base: base, Limits: c.meter.Want(t.Budget), Lease: c.o.Lease, Interactive: c.o.Prompter != nil}, nil
}

// result is what a dependent's prompt template sees of task id, as in a
// local fleet: its message, branch, status, and the diff of its accepted
// attempt (Base..the attempt's ref; the branch is gone once merged).
func (c *coordinator) result(ctx context.Context, id string) fleet.TaskResult {
	ds := c.task(id)
	r := fleet.TaskResult{Message: ds.Message, Branch: ds.Branch, Status: ds.Status, Diff: "no changes"}
	ref := attemptRef(c.o.RunID, id, ds.Attempts)
	if ds.Base == "" || ds.Attempts == 0 {
		return r
	}
	if _, err := c.wt.RevParse(ctx, ref); err != nil {
		return r // the attempt changed nothing: it pushed no ref
	}
	rng := ds.Base + ".." + ref
	d, err := c.diffStat(ctx, rng)
	if err != nil {
		c.log.Warn("a dependency's diff", "task", id, "err", err)
		return r
	}
	r.Diff = d.Summary()
	for _, f := range d.Files {
		r.Files = append(r.Files, f.Path)
	}
	if p, err := c.wt.Patch(ctx, c.wt.Repo, rng, 16<<10); err == nil {
		r.Patch = p
	}
	return r
}

// diffStat is the change of a commit range (worktree.Manager.Diff is a
// worktree's, untracked files included).
func (c *coordinator) diffStat(ctx context.Context, rng string) (worktree.DiffStat, error) {
	return c.wt.Git().NumStat(ctx, c.wt.Repo, rng)
}

// schedule waits for a task's dependencies, reserves its budget, offers
// it, waits for the accepted result, and merges it.
func (c *coordinator) schedule(ctx context.Context, id string) {
	t := c.plan.Task(id)
	ts := c.task(id)
	if ts.Status == fleet.StatusMerged || isFinal(ts.Status) {
		return
	}
	for _, d := range t.DependsOn {
		select {
		case <-c.done[d]:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			c.setTask(id, func(x *fleet.TaskState) { x.Status, x.Reason = fleet.StatusCanceled, causeText(ctx) })
			return
		}
		if ds := c.task(d); ds.Status != fleet.StatusMerged {
			c.setTask(id, func(x *fleet.TaskState) {
				x.Status, x.Reason = fleet.StatusSkipped, fmt.Sprintf("dependency %s %s", d, ds.Status)
			})
			c.emit(fleet.EventSkipped, id, "dependency "+d+" "+string(ds.Status), nil)
			return
		}
	}
	var accepted Lease
	if ts.Status == fleet.StatusDone {
		l, _, err := c.bus.GetLease(ctx, c.o.RunID, id)
		if err != nil {
			c.setTask(id, func(x *fleet.TaskState) { x.Status, x.Reason = fleet.StatusFailed, err.Error() })
			return
		}
		accepted = l
	} else {
		res, err := c.meter.Reserve(ctx, id, t.Budget)
		if err != nil {
			if errors.Is(err, fleet.ErrBudget) {
				c.setTask(id, func(x *fleet.TaskState) {
					x.Status, x.Reason, x.ExitCode = fleet.StatusRefused, err.Error(), int(exitcode.BudgetExceeded)
				})
				c.emit(fleet.EventRefused, id, err.Error(), nil)
			} else {
				c.setTask(id, func(x *fleet.TaskState) { x.Status, x.Reason = fleet.StatusCanceled, causeText(ctx) })
			}
			return
		}
		if err := c.offer(ctx, t, ts.Status); err != nil {
			res.Release(fleet.Usage{})
			c.setTask(id, func(x *fleet.TaskState) { x.Status, x.Reason = fleet.StatusFailed, err.Error() })
			c.emit(fleet.EventFailed, id, "offering: "+err.Error(), nil)
			return
		}
		select {
		case accepted = <-c.results[id]:
		case <-ctx.Done():
			res.Release(fleet.Usage{})
			c.setTask(id, func(x *fleet.TaskState) { x.Reason = "coordinator stopped: " + causeText(ctx) })
			return
		}
		res.Release(accepted.Usage)
		c.mu.Lock()
		c.st.Usage = c.meter.Used()
		c.mu.Unlock()
	}
	c.setTask(id, func(x *fleet.TaskState) {
		x.Attempts, x.Usage, x.Message, x.Head, x.Status, x.Reason = accepted.Attempt, accepted.Usage, accepted.Message, accepted.Head, accepted.Status, accepted.Reason
		x.Questions, x.Base = accepted.Questions, accepted.Base
		x.Finished = c.clock.Now().UTC()
		if accepted.Status != fleet.StatusDone {
			x.ExitCode = int(exitcode.AgentError)
			if accepted.Status == fleet.StatusBudget {
				x.ExitCode = int(exitcode.BudgetExceeded)
			}
		}
	})
	if accepted.State == LeaseAccepted {
		c.merge(ctx, t, accepted)
	} else {
		c.emit(fleet.EventFailed, id, accepted.Reason, nil)
	}
}

func isFinal(s fleet.TaskStatus) bool {
	switch s {
	case fleet.StatusFailed, fleet.StatusBlocked, fleet.StatusBudget, fleet.StatusConflict, fleet.StatusRefused, fleet.StatusSkipped:
		return true
	}
	return false
}

func causeText(ctx context.Context) string {
	if c := context.Cause(ctx); c != nil {
		return c.Error()
	}
	return "cancelled"
}

// offer puts the task on the queue, its lease first (so a worker finds
// it), with a message id the server deduplicates on.
func (c *coordinator) offer(ctx context.Context, t *fleet.Task, prev fleet.TaskStatus) error {
	if prev == fleet.StatusRunning || prev == fleet.StatusWaiting {
		// Offered before the coordinator stopped: it is out there already,
		// unless its message went missing.
		c.ensureOffered(ctx, t.ID, true)
		return nil
	}
	tm, err := c.taskMsg(ctx, t)
	if err != nil {
		return err
	}
	rev, err := c.bus.PutLease(ctx, c.o.RunID, t.ID, Lease{State: LeaseOffered}, 0)
	if err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return err
	}
	if err := c.bus.Publish(ctx, taskSubject(AgentToken(c.spec(t.AgentSpec)), c.o.RunID, t.ID), tm, jetstream.WithMsgID(fmt.Sprintf("%s/%s/%d", c.o.RunID, t.ID, rev))); err != nil {
		return err
	}
	c.setTask(t.ID, func(x *fleet.TaskState) { x.Status, x.Started = fleet.StatusWaiting, c.clock.Now().UTC() })
	c.emit(fleet.EventOffered, t.ID, "agent "+AgentToken(c.spec(t.AgentSpec)), map[string]any{"base": tm.Base})
	return nil
}

// merge integrates an accepted attempt's commit into the target through
// the fast-forward queue, and records it in the lease.
func (c *coordinator) merge(ctx context.Context, t *fleet.Task, l Lease) {
	c.mergeMu.Lock()
	defer c.mergeMu.Unlock()
	ctx = context.WithoutCancel(ctx)
	branch := worktree.Branch(c.o.RunID, t.ID)
	fail := func(status fleet.TaskStatus, code exitcode.Code, reason string) {
		c.setTask(t.ID, func(x *fleet.TaskState) { x.Status, x.Reason, x.ExitCode = status, reason, int(code) })
		c.emit(fleet.EventFailed, t.ID, "merge: "+reason, nil)
		c.finalLease(ctx, t.ID, func(x *Lease) { x.State, x.Status, x.Reason = LeaseFinal, status, reason })
	}
	if l.Head != "" && c.wt.IsAncestor(ctx, l.Head, "refs/heads/"+c.rec.Target) {
		// The attempt changed nothing (its head is in the target's
		// history): there is nothing to integrate, and no worktree to make.
		head, err := c.wt.RevParse(ctx, "refs/heads/"+c.rec.Target)
		if err != nil {
			fail(fleet.StatusFailed, exitcode.AgentError, err.Error())
			return
		}
		c.setTask(t.ID, func(x *fleet.TaskState) {
			x.Status, x.Head, x.ExitCode, x.Diff, x.Worktree = fleet.StatusMerged, head, 0, &worktree.DiffStat{}, ""
		})
		// An accepted attempt already in the target may be one a killed
		// coordinator merged, and recorded, before it marked the lease.
		if c.recorded[t.ID] != l.Attempt {
			c.emit(fleet.EventMerged, t.ID, fmt.Sprintf("attempt %d -> %s at %.12s (no changes)", l.Attempt, c.rec.Target, head),
				map[string]any{"attempt": l.Attempt, "worker": l.Worker, "head": head, "target": c.rec.Target})
		}
		c.finalLease(ctx, t.ID, func(x *Lease) { x.State, x.Head = LeaseMerged, head })
		return
	}
	c.dropStaleRefLock(branch)
	if err := c.wt.SetBranch(ctx, branch, l.Head); err != nil {
		fail(fleet.StatusFailed, exitcode.AgentError, err.Error())
		return
	}
	owner := worktree.Owner{PID: os.Getpid(), Command: c.o.Command}
	h, err := c.wt.Create(ctx, c.o.RunID, t.ID, l.Head, c.rec.Target, owner)
	if err != nil {
		// A coordinator killed while making this worktree leaves it half
		// made. It is the coordinator's scratch space (the work is in the
		// attempt's ref and the branch): make it again.
		p := c.wt.Path(c.o.RunID, t.ID)
		c.log.Warn("remaking the merge worktree", "task", t.ID, "err", err)
		_ = c.wt.NetGit().RemoveWorktree(ctx, p)
		h, err = c.wt.Create(ctx, c.o.RunID, t.ID, l.Head, c.rec.Target, owner)
	}
	if err != nil {
		fail(fleet.StatusFailed, exitcode.AgentError, err.Error())
		return
	}
	defer func() { _ = h.Release(ctx) }()
	// A worktree kept from before a restart may be behind the branch (what
	// a coordinator killed in it left, Create has undone).
	if err := c.wt.ResetHard(ctx, h.Path, l.Head); err != nil {
		fail(fleet.StatusFailed, exitcode.AgentError, err.Error())
		return
	}
	head, err := c.wt.Integrate(ctx, h.Record, c.rec.Target, c.plan.CheckFunc(c.o.Sandbox, func(dir string, st sandbox.Status) {
		c.emit(fleet.EventCheck, t.ID, fleet.CheckDetail(c.plan.Check, st), map[string]any{"check": c.plan.Check, "dir": dir, "sandbox": st})
	}))
	var ce *worktree.ConflictError
	switch {
	case errors.As(err, &ce):
		c.setTask(t.ID, func(x *fleet.TaskState) {
			x.Status, x.ConflictFiles, x.ExitCode, x.Reason = fleet.StatusConflict, ce.Files, int(exitcode.MergeConflict), ce.Error()
		})
		c.emit(fleet.EventConflict, t.ID, strings.Join(ce.Files, ", "), map[string]any{"files": ce.Files})
		c.finalLease(ctx, t.ID, func(x *Lease) { x.State, x.Status, x.Reason = LeaseFinal, fleet.StatusConflict, ce.Error() })
	case err != nil:
		fail(fleet.StatusFailed, exitcode.AgentError, err.Error())
	default:
		if c.pushTo != "" {
			if err := c.wt.NetGit().Push(ctx, c.wt.Repo, c.pushTo, "refs/heads/"+c.rec.Target+":refs/heads/"+c.rec.Target); err != nil {
				c.emit(fleet.EventWarning, t.ID, "pushing the target: "+err.Error(), nil)
			}
		}
		var diff *worktree.DiffStat
		if l.Base != "" {
			if d, err := c.diffStat(ctx, l.Base+".."+l.Head); err == nil {
				diff = &d
			}
		}
		c.setTask(t.ID, func(x *fleet.TaskState) { x.Status, x.Head, x.ExitCode, x.Diff = fleet.StatusMerged, head, 0, diff })
		// Recorded before the lease says merged: a coordinator killed
		// between the two leaves the lease accepted, and its successor
		// finds the attempt in the target and the merge in the audit log.
		c.emit(fleet.EventMerged, t.ID, fmt.Sprintf("attempt %d -> %s at %.12s", l.Attempt, c.rec.Target, head),
			map[string]any{"attempt": l.Attempt, "worker": l.Worker, "head": head, "target": c.rec.Target})
		c.finalLease(ctx, t.ID, func(x *Lease) { x.State, x.Head = LeaseMerged, head })
		_ = h.Release(ctx)
		if rec, err := c.wt.Lookup(c.o.RunID, t.ID); err == nil {
			if err := c.wt.Remove(ctx, rec, worktree.RemoveOptions{Targets: []string{c.rec.Target}}); err == nil {
				c.setTask(t.ID, func(x *fleet.TaskState) { x.Worktree = "" })
			}
		}
	}
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

func (c *coordinator) finish(ctx context.Context) *fleet.State {
	code := exitcode.OK
	rank := map[exitcode.Code]int{exitcode.OK: 0, exitcode.AgentError: 1, exitcode.BudgetExceeded: 2, exitcode.MergeConflict: 3, exitcode.Interrupted: 4}
	st := c.snapshot()
	for _, id := range st.Order {
		var k exitcode.Code
		switch st.Tasks[id].Status {
		case fleet.StatusMerged:
			continue
		case fleet.StatusConflict:
			k = exitcode.MergeConflict
		case fleet.StatusRefused, fleet.StatusBudget:
			k = exitcode.BudgetExceeded
		case fleet.StatusPending, fleet.StatusWaiting, fleet.StatusRunning, fleet.StatusCanceled, fleet.StatusDone:
			k = exitcode.Interrupted
		default:
			k = exitcode.AgentError
		}
		if rank[k] > rank[code] {
			code = k
		}
	}
	status := fleet.RunDone
	switch {
	case ctx.Err() != nil || code == exitcode.Interrupted:
		code, status = exitcode.Interrupted, fleet.RunInterrupted
	case code != exitcode.OK:
		status = fleet.RunFailed
	}
	c.mu.Lock()
	c.st.Status, c.st.ExitCode, c.st.PID, c.st.Usage = status, int(code), 0, c.meter.Used()
	c.mu.Unlock()
	_ = c.save()
	if status != fleet.RunInterrupted {
		// The run is over: a hub's coordinator does not adopt it again.
		rec := c.rec
		rec.Finished, rec.Status, rec.ExitCode = c.clock.Now().UTC(), status, int(code)
		if data, err := json.Marshal(rec); err == nil {
			if _, err := c.bus.Runs.Put(context.WithoutCancel(ctx), c.o.RunID, data); err != nil {
				c.log.Warn("recording the run's end", "err", err)
			}
		}
	}
	c.emit(fleet.EventRunEnd, "", fmt.Sprintf("%s (exit %d)", status, code), map[string]any{"status": status, "exit_code": int(code)})
	_ = c.bus.NC.Flush()
	_ = c.o.Audit.Append(audit.KindRunEnd, "", map[string]any{"fleet": c.o.RunID, "status": status, "exit_code": int(code)})
	final := c.snapshot()
	return &final
}
