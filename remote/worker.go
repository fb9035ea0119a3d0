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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/quartz"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tai-dev/tai/agentspec"
	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/fleet"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/runner"
	"github.com/tai-dev/tai/worktree"
)

// WorkerOptions configure a worker.
type WorkerOptions struct {
	Bus    *Bus
	Name   string   // unique among the workers; default host-pid
	Agents []string // agents it runs; default builtin
	Slots  int      // tasks at once; default 1
	Clones string   // where it keeps a clone per repository (required)
	State  string   // worktrees and audit logs (required)
	// Lease is the ack wait of a task consumer this worker creates (the
	// coordinator's, when it made it first, wins).
	Lease       time.Duration
	Exe         string
	Version     string
	CancelGrace time.Duration
	Clock       quartz.Clock
	Logger      *slog.Logger
	// Sandbox confines each task's agent (fleet.Options.Sandbox); nil:
	// started without tai's launcher.
	Sandbox *agentspec.Sandbox
	// Notice, if set, gets what the worker says of itself to whoever runs
	// it, a line at a time: that it is ready, that it is stopping, and
	// what it hands back of each task it held (tai worker prints them).
	Notice func(string)
}

// ErrLeaseLost ends an attempt whose lease another worker took over.
var ErrLeaseLost = errors.New("the lease was lost")

type worker struct {
	o       WorkerOptions
	bus     *Bus
	clock   quartz.Clock
	log     *slog.Logger
	cloneMu sync.Mutex // one clone or fetch at a time
	// wtMu: one git worktree add, remove or prune at a time. git's
	// worktree admin is not safe in parallel in one repository: an add
	// reads the other worktrees' records while another add writes its own
	// ("failed to read worktrees/N/commondir"), which failed tasks on a
	// worker with several slots.
	wtMu  sync.Mutex
	gitMu sync.Mutex
	gits  map[string]*worktree.Git // by clone: cloneGit
	// running counts the attempts under way, for the stopping notice,
	// said once (stopping), before any handback's.
	running  atomic.Int32
	stopping sync.Once
}

// notice says a line to whoever runs the worker.
func (w *worker) notice(format string, args ...any) {
	if w.o.Notice != nil {
		w.o.Notice(fmt.Sprintf(format, args...))
	}
}

// sayStopping announces the stop, once: when the stop comes, or before the
// first handback if that comes first.
func (w *worker) sayStopping() {
	w.stopping.Do(func() {
		switch n := w.running.Load(); n {
		case 0:
			w.notice("stopping: no task running")
		default:
			w.notice("stopping: handing back the %d task(s) it runs (their work so far pushed, their leases released)", n)
		}
	})
}

// RunWorker pulls tasks of its agents and runs them until ctx ends.
func RunWorker(ctx context.Context, o WorkerOptions) error {
	if o.Clock == nil {
		o.Clock = quartz.NewReal()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Name == "" {
		host, _ := os.Hostname()
		o.Name = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if len(o.Agents) == 0 {
		o.Agents = []string{"builtin"}
	}
	if o.Slots < 1 {
		o.Slots = 1
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.Clones == "" || o.State == "" {
		return exitcode.Usagef("a worker needs a clone and a state directory")
	}
	w := &worker{o: o, bus: o.Bus, clock: o.Clock, log: o.Logger.With("worker", o.Name)}
	slots := make(chan struct{}, o.Slots)
	var wg sync.WaitGroup
	for _, a := range o.Agents {
		cons, err := w.bus.TaskConsumer(ctx, token(a), o.Lease)
		if err != nil {
			return err
		}
		for range o.Slots {
			wg.Go(func() { w.loop(ctx, cons, slots) })
		}
	}
	w.log.Info("worker ready", "agents", o.Agents, "slots", o.Slots)
	w.notice("ready: %d slot(s) for agents %s; waiting for tasks", o.Slots, strings.Join(o.Agents, ", "))
	stopSay := context.AfterFunc(ctx, w.sayStopping)
	wg.Wait()
	stopSay()
	w.sayStopping()
	w.notice("stopped")
	return nil
}

// loop takes a slot, then waits (a long poll the server answers as soon
// as a task is there) for one task, and runs it.
func (w *worker) loop(ctx context.Context, cons jetstream.Consumer, slots chan struct{}) {
	for ctx.Err() == nil {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		msg, err := next(ctx, cons)
		if err == nil {
			w.handle(ctx, msg)
		} else if !idle(err) && ctx.Err() == nil {
			w.log.Warn("pulling a task", "err", err)
			pause(ctx, w.clock)
		}
		<-slots
	}
}

// idlePoll is how long an idle long poll lasts before it is renewed: the
// server answers a poll as soon as a message is there, and a poll ends
// with its context, so nobody waits for it (a test makes it an hour to
// show that).
var idlePoll = 5 * time.Second

// maxDrain bounds the pulls of a drain (of 256 events each) at the end of
// a run, against a stream that workers fill faster than it drains.
const maxDrain = 64

// next waits for one message: a long poll the server answers as soon as
// there is one; an idle poll ends after a while and is renewed.
func next(ctx context.Context, cons jetstream.Consumer) (jetstream.Msg, error) {
	pctx, cancel := context.WithTimeout(ctx, idlePoll)
	defer cancel()
	return cons.Next(jetstream.FetchContext(pctx))
}

func idle(err error) bool {
	return errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoMessages) || errors.Is(err, context.DeadlineExceeded)
}

// pause backs off after a failed poll (the connection reconnects by
// itself meanwhile).
func pause(ctx context.Context, clock quartz.Clock) {
	t := clock.NewTimer(time.Second, "remote", "backoff")
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// claim takes the task's lease: a new attempt when it was offered or its
// holder let it run out. It returns the attempt, or 0 and what to do with
// the message.
func (w *worker) claim(ctx context.Context, tm TaskMsg, lease time.Duration) (int, uint64, string, func(jetstream.Msg), error) {
	for {
		l, rev, err := w.bus.GetLease(ctx, tm.Run, tm.Task)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return 0, 0, "", func(m jetstream.Msg) { _ = m.Term() }, nil // no such run (any more)
		}
		if err != nil {
			return 0, 0, "", nil, err
		}
		now := w.clock.Now()
		switch l.State {
		case LeaseAccepted, LeaseMerged, LeaseFinal, LeaseParked:
			// Done already (parked: offered again by a new message when its
			// account is released): a redelivery of settled work.
			return 0, 0, "", func(m jetstream.Msg) { _ = m.Ack() }, nil
		case LeaseClaimed:
			if now.Before(l.Deadline) {
				wait := l.Deadline.Sub(now)
				return 0, 0, "", func(m jetstream.Msg) { _ = m.NakWithDelay(wait) }, nil
			}
		}
		// An offer its account's park reached: the attempt hands back
		// parked before its first turn.
		next := Lease{State: LeaseClaimed, Worker: w.o.Name, Attempt: l.Attempt + 1, Deadline: now.Add(lease), Parking: l.Parking}
		nrev, err := w.bus.PutLease(ctx, tm.Run, tm.Task, next, rev)
		if err == nil {
			return next.Attempt, nrev, next.Parking, nil, nil
		}
		if !isConflict(err) {
			return 0, 0, "", nil, err
		}
		// Someone else wrote it first: look again.
	}
}

func isConflict(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, jetstream.ErrKeyExists) || (errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence)
}

// held is an attempt's lease, refreshed by heartbeats.
type held struct {
	mu     sync.Mutex
	rev    uint64
	lease  Lease
	lost   bool
	onLost context.CancelCauseFunc
	bus    *Bus
	run    string
	task   string
	dur    time.Duration
	clock  quartz.Clock
	// parked is closed when the coordinator says the task's account
	// parked (Parking on the lease): the attempt stops and reports parked.
	parked   chan struct{}
	parkOnce sync.Once
}

func (h *held) park() { h.parkOnce.Do(func() { close(h.parked) }) }

// parking is the coordinator's word on why the task parked ("" before).
func (h *held) parking() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lease.Parking
}

// watch closes parked as soon as the lease, still this attempt's claim,
// says its account parked; it returns when ctx ends.
func (h *held) watch(ctx context.Context) {
	kw, err := h.bus.Leases.Watch(ctx, leaseKey(h.run, h.task))
	if err != nil {
		return // the beats still see it (put)
	}
	defer func() { _ = kw.Stop() }()
	h.follow(ctx, kw.Updates())
}

// follow reads the lease's values until one is this attempt's claim with
// the coordinator's Parking on it: it keeps that word (as the beats do)
// and closes parked. Another attempt's claim, a claim of another worker,
// an offer or a settled lease with Parking is not this attempt's to stop.
func (h *held) follow(ctx context.Context, updates <-chan jetstream.KeyValueEntry) {
	h.mu.Lock()
	attempt, worker := h.lease.Attempt, h.lease.Worker
	h.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-updates:
			if !ok {
				return
			}
			if e == nil {
				continue // the end of the initial values
			}
			var l Lease
			if json.Unmarshal(e.Value(), &l) == nil && l.State == LeaseClaimed && l.Attempt == attempt && l.Worker == worker && l.Parking != "" {
				h.mu.Lock()
				h.lease.Parking = l.Parking
				h.mu.Unlock()
				h.park()
				return
			}
		}
	}
}

// beat refreshes the lease by compare-and-swap: it fails, and the attempt
// stops, when another attempt took the task.
func (h *held) beat(ctx context.Context) bool { return h.beatFor(ctx, h.dur) }

// beatFor is beat with a lease of d from now.
func (h *held) beatFor(ctx context.Context, d time.Duration) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost {
		return false
	}
	l := h.lease
	l.Deadline = h.clock.Now().Add(d)
	return h.put(ctx, l)
}

// release gives the lease up: the task is offered again, its attempts so
// far counted (the next claim is the next attempt).
func (h *held) release(ctx context.Context) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost {
		return false
	}
	if !h.put(ctx, Lease{State: LeaseOffered, Attempt: h.lease.Attempt}) {
		return false
	}
	h.lost = true // not this attempt's any more: no beat may take it back
	return true
}

// put writes l over the attempt's lease by compare-and-swap (h.mu held).
func (h *held) put(ctx context.Context, l Lease) bool {
	for range 3 {
		rev, err := h.bus.PutLease(ctx, h.run, h.task, l, h.rev)
		if err == nil {
			h.rev, h.lease = rev, l
			return true
		}
		if !isConflict(err) {
			return false
		}
		// The revision moved. A beat of this attempt's may have moved it:
		// one whose reply never came (its context ended as the attempt
		// did, a timeout on a busy server) still lands. The lease is lost
		// only when it names another attempt or is no longer a claim.
		cur, rev, err := h.bus.GetLease(ctx, h.run, h.task)
		if err != nil {
			return false
		}
		if cur.State != LeaseClaimed || cur.Attempt != h.lease.Attempt || cur.Worker != h.lease.Worker {
			break
		}
		if cur.Parking != "" {
			// The coordinator parked the task's account: the beats keep
			// its word, and the attempt stops.
			l.Parking, h.lease.Parking = cur.Parking, cur.Parking
			h.park()
		}
		h.rev = rev
	}
	h.lost = true
	h.onLost(ErrLeaseLost)
	return false
}

// stillMine checks, without writing, that the lease is this attempt's.
func (h *held) stillMine(ctx context.Context) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost {
		return false
	}
	l, _, err := h.bus.GetLease(ctx, h.run, h.task)
	return err == nil && l.State == LeaseClaimed && l.Attempt == h.lease.Attempt && l.Worker == h.lease.Worker
}

func (w *worker) event(ctx context.Context, tm TaskMsg, attempt int, kind, detail string) {
	w.bus.Event(ctx, EventMsg{Time: w.clock.Now().UTC(), Run: tm.Run, Task: tm.Task, Worker: w.o.Name, Attempt: attempt, Kind: kind, Detail: detail})
}

func (w *worker) handle(ctx context.Context, msg jetstream.Msg) {
	var tm TaskMsg
	if err := json.Unmarshal(msg.Data(), &tm); err != nil || tm.Run == "" || tm.Task == "" {
		w.log.Error("a task message tai cannot read; dropped", "err", err)
		_ = msg.Term()
		return
	}
	lease := tm.Lease
	if lease <= 0 {
		lease = w.o.Lease
	}
	attempt, rev, parking, settle, err := w.claim(ctx, tm, lease)
	if err != nil {
		w.log.Warn("claiming", "task", tm.Task, "err", err)
		_ = msg.Nak()
		return
	}
	if attempt == 0 {
		settle(msg)
		return
	}
	w.running.Add(1)
	defer w.running.Add(-1)
	log := w.log.With("run", tm.Run, "task", tm.Task, "attempt", attempt)
	taskCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	h := &held{rev: rev, lease: Lease{State: LeaseClaimed, Worker: w.o.Name, Attempt: attempt, Parking: parking}, onLost: cancel, bus: w.bus,
		run: tm.Run, task: tm.Task, dur: lease, clock: w.clock, parked: make(chan struct{})}
	if parking != "" {
		h.park()
	}
	h.lease.Deadline = w.clock.Now().Add(lease)

	res := w.attempt(taskCtx, ctx, tm, attempt, lease, msg, h, log)
	if ctx.Err() != nil && !h.lost && res.Outcome.Status != fleet.StatusDone {
		// The worker is stopping, and stopped the attempt: the task is not
		// failed, it goes back to the queue for another worker.
		w.handBack(context.WithoutCancel(ctx), tm, attempt, res, msg, h, log)
		return
	}
	// The result is on its way: the lease holds until a coordinator that
	// died before taking it would be handed it again (its consumer's ack
	// wait), so that the next one does not offer the task again and refuse
	// the finished attempt's result when it comes.
	h.beatFor(context.WithoutCancel(ctx), resultAckWait+lease)
	if h.lost {
		res.Lost = true
	}
	if err := w.bus.Publish(context.WithoutCancel(ctx), resultSubject(tm.Run), res); err != nil {
		log.Error("reporting the result", "err", err)
		return // not acked: redelivered after the lease
	}
	// An ack from an attempt that lost its lease would remove the message
	// the new attempt works on (the server accepts late acks).
	if h.stillMine(context.WithoutCancel(ctx)) {
		if err := msg.DoubleAck(context.WithoutCancel(ctx)); err != nil {
			log.Warn("ack", "err", err)
		}
	}
	w.event(context.WithoutCancel(ctx), tm, attempt, "reported", string(res.Outcome.Status))
	if ctx.Err() != nil {
		w.sayStopping()
		w.notice("reported task %s of run %s (attempt %d): %s", tm.Task, tm.Run, attempt, res.Outcome.Status)
	}
}

// handBack returns a task the stopping worker held: its work so far is
// pushed already (as the attempt's ref, which the next attempt starts
// from), its lease goes back to offered (so the next claim need not wait
// for it to run out), and its message back to the queue at once (a nak),
// for another worker.
func (w *worker) handBack(ctx context.Context, tm TaskMsg, attempt int, res ResultMsg, msg jetstream.Msg, h *held, log *slog.Logger) {
	w.sayStopping()
	work := "no work to push"
	if res.Ref != "" {
		work = fmt.Sprintf("work so far pushed to %s (%.12s)", res.Ref, res.Head)
	}
	if !h.release(ctx) {
		// Another attempt holds it now: nothing to hand back but the work.
		w.notice("task %s of run %s (attempt %d): its lease is another worker's now; %s", tm.Task, tm.Run, attempt, work)
		return
	}
	if err := msg.Nak(); err != nil {
		log.Warn("handing the task back", "err", err)
	}
	w.event(ctx, tm, attempt, "handback", fmt.Sprintf("stopping: attempt %d handed back; %s", attempt, work))
	w.notice("handed back task %s of run %s (attempt %d): lease released, %s", tm.Task, tm.Run, attempt, work)
}

// attempt runs one attempt in its worktree, heartbeating and
// checkpointing, and returns its result (the work is pushed).
func (w *worker) attempt(ctx, outer context.Context, tm TaskMsg, attempt int, lease time.Duration, msg jetstream.Msg, h *held, log *slog.Logger) ResultMsg {
	res := ResultMsg{Run: tm.Run, Task: tm.Task, Attempt: attempt, Worker: w.o.Name, Base: tm.Base}
	fail := func(err error) ResultMsg {
		res.Outcome = fleet.TaskOutcome{Status: fleet.StatusFailed, ExitCode: int(exitcode.Of(err)), Reason: err.Error()}
		if errors.Is(context.Cause(ctx), ErrLeaseLost) {
			res.Outcome.Status, res.Outcome.Reason = fleet.StatusCanceled, ErrLeaseLost.Error()
		}
		log.Warn("attempt failed", "err", err)
		return res
	}
	var plan fleet.Plan
	if err := json.Unmarshal(tm.Plan, &plan); err != nil {
		return fail(fmt.Errorf("the task's plan: %w", err))
	}
	plan.Dir = tm.PlanDir

	// Heartbeats: InProgress resets the ack wait, the lease is refreshed
	// by compare-and-swap, and the work so far is pushed as a checkpoint.
	var cwdMu sync.Mutex
	cwd := ""
	var g *worktree.Git // the clone's, set with cwd
	var beats sync.WaitGroup
	beatCtx, stopBeats := context.WithCancel(outer)
	tick := w.clock.NewTicker(lease/3, "worker", "heartbeat")
	beats.Go(func() {
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
			case <-beatCtx.Done():
				return
			}
			_ = msg.InProgress()
			if !h.beat(beatCtx) {
				if h.lost {
					w.event(beatCtx, tm, attempt, "lease.lost", "another attempt holds the task now")
					return
				}
				continue
			}
			cwdMu.Lock()
			if cwd != "" {
				if err := w.checkpoint(beatCtx, g, cwd, tm, attempt); err != nil {
					log.Warn("checkpoint", "err", err)
				}
			}
			cwdMu.Unlock()
		}
	})
	beats.Go(func() { h.watch(beatCtx) })
	defer func() { stopBeats(); beats.Wait() }()

	clone, err := w.clone(ctx, tm, attempt)
	if err != nil {
		return fail(err)
	}
	cg := w.cloneGit(clone)
	start, from := tm.Base, "the target"
	if attempt > 1 {
		if prev := w.lastCheckpoint(ctx, cg, tm, attempt); prev != "" {
			start, from = checkpointOnBase(ctx, cg, prev, tm.Base, log)
		}
	}
	dir := filepath.Join(w.o.State, "worktrees", tm.Run, tm.Task, strconv.Itoa(attempt))
	w.wtMu.Lock()
	if _, err := os.Stat(dir); err == nil {
		_ = cg.RemoveWorktree(ctx, dir) // left by a worker killed here before
	}
	err = cg.AddDetached(ctx, dir, start)
	w.wtMu.Unlock()
	if err != nil {
		return fail(err)
	}
	cwdMu.Lock()
	cwd, g = dir, cg
	cwdMu.Unlock()
	w.event(ctx, tm, attempt, "started", fmt.Sprintf("attempt %d on %s from %s (%.12s)", attempt, w.o.Name, from, start))
	log.Info("started", "from", from)

	alog, err := w.auditLog(tm, attempt)
	if err != nil {
		return fail(err)
	}
	k := &asker{bus: w.bus, tm: tm, attempt: attempt, worker: w.o.Name}
	ro := fleet.TaskRunOptions{RunID: tm.Run, Attempt: attempt, Audit: alog,
		Exe: w.o.Exe, Version: w.o.Version, CancelGrace: w.o.CancelGrace, Clock: w.clock, Logger: log, Sandbox: w.o.Sandbox,
		Ask: func(ctx context.Context, q string) (string, string, fleet.Usage, error) {
			// The work so far goes with the question, as git (the
			// coordinator's answerer reads it there) and as a patch.
			cwdMu.Lock()
			if err := w.checkpoint(ctx, cg, dir, tm, attempt); err != nil {
				log.Warn("checkpoint before asking", "err", err)
			}
			cwdMu.Unlock()
			head, patch := "", ""
			if h, err := cg.Head(ctx, dir); err == nil && h != tm.Base {
				head = h
			}
			if out, err := cg.Patch(ctx, dir, tm.Base, 0); err == nil {
				patch = truncate(out, 16<<10)
			}
			w.event(ctx, tm, attempt, "asked", lastLine(q))
			return k.question(ctx, q, head, patch)
		}}
	if tm.Interactive {
		ro.Prompter = prompter{k: k, key: memoryKeys(dir)}
	}
	ro.TaskSink = frameSink{w: w, tm: tm, attempt: attempt}
	ro.Park, ro.ParkWhy = h.parked, h.parking
	prompt := tm.Prompt
	if rs := tm.Resume; rs != nil {
		// A parked attempt's task: its session if the agent still has it
		// (a new session told what was done, if not), from its work.
		patch, _ := cg.Patch(ctx, dir, tm.Base, 16<<10)
		ro.Full = runner.ResumePrompt(tm.Prompt, patch)
		how := fmt.Sprintf("resumes parked attempt %d (on %s) in its own session %s", rs.Attempt, rs.Worker, rs.Session)
		if rs.Resumable && rs.Session != "" {
			ro.Resume = rs.Session
		} else {
			prompt = ro.Full
			how = fmt.Sprintf("resumes parked attempt %d (on %s) in a new session told what was done so far (its agent cannot resume one)", rs.Attempt, rs.Worker)
		}
		w.event(ctx, tm, attempt, "resumed", how)
	}
	out := fleet.RunTaskIn(ctx, &plan, tm.Task, dir, prompt, tm.Limits, ro)
	_ = alog.Append(audit.KindRunEnd, "", map[string]any{"fleet": tm.Run, "task": tm.Task, "attempt": attempt, "status": out.Status})
	res.AuditSeq, res.AuditHead = alog.Head()
	_ = alog.Close()
	res.Outcome = out
	if errors.Is(context.Cause(ctx), ErrLeaseLost) {
		res.Outcome.Status, res.Outcome.Reason = fleet.StatusCanceled, ErrLeaseLost.Error()
	}
	// The work goes back as git, whatever the outcome: a failed attempt's
	// files are the next one's checkpoint.
	cwdMu.Lock()
	head, err := w.finalCommit(context.WithoutCancel(ctx), cg, dir, tm, attempt, out)
	cwd = ""
	cwdMu.Unlock()
	if err != nil {
		return fail(err)
	}
	res.Head = head
	if head != tm.Base {
		res.Ref = attemptRef(tm.Run, tm.Task, attempt)
	}
	w.wtMu.Lock()
	_ = cg.RemoveWorktree(context.WithoutCancel(ctx), dir)
	w.wtMu.Unlock()
	return res
}

// memoryKeys names what a permission's "always" is remembered under in
// the task's workspace dir, as the task's policy names it (the key is
// the thing allowed, relative to the workspace: the same on every worker).
func memoryKeys(dir string) func(driver.PermissionRequest) string {
	e, err := policy.NewEngine(policy.Config{}, policy.Options{Workspace: dir})
	if err != nil {
		return nil
	}
	return e.MemoryKey
}

func attemptRef(run, task string, attempt int) string {
	return fmt.Sprintf("refs/tai/%s/%s/%d", run, task, attempt)
}

func (w *worker) auditLog(tm TaskMsg, attempt int) (*audit.Log, error) {
	p := filepath.Join(w.o.State, "audit", tm.Run, fmt.Sprintf("%s-%d.jsonl", tm.Task, attempt))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, err
	}
	return audit.Open(p, audit.Options{Run: tm.Run, Logger: w.log, TruncatePartial: true})
}

// clone returns the worker's clone of the task's repository, made once and
// fetched for a task whose base it lacks, or whose earlier attempts'
// checkpoints it needs.
func (w *worker) clone(ctx context.Context, tm TaskMsg, attempt int) (string, error) {
	w.cloneMu.Lock()
	defer w.cloneMu.Unlock()
	sum := sha256.Sum256([]byte(tm.RepoURL))
	dir := filepath.Join(w.o.Clones, hex.EncodeToString(sum[:8])+".git")
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
		tmp := dir + ".tmp"
		_ = os.RemoveAll(tmp)
		if err := os.MkdirAll(w.o.Clones, 0o755); err != nil {
			return "", err
		}
		if err := (&worktree.Git{Network: true}).Clone(ctx, tm.RepoURL, tmp, true); err != nil {
			return "", err
		}
		if err := os.Rename(tmp, dir); err != nil {
			return "", err
		}
	}
	g := w.cloneGit(dir)
	if attempt == 1 && g.HasCommit(ctx, tm.Base) {
		return dir, nil // a first attempt starts from the base, which the clone has
	}
	prefix := fmt.Sprintf("refs/tai/%s/%s/", tm.Run, tm.Task)
	if err := g.Fetch(ctx, tm.RepoURL, "+refs/heads/"+tm.Target+":refs/heads/"+tm.Target, "+"+prefix+"*:"+prefix+"*"); err != nil {
		return "", err
	}
	return dir, nil
}

// lastCheckpoint is the newest earlier attempt's pushed work, if any.
func (w *worker) lastCheckpoint(ctx context.Context, g *worktree.Git, tm TaskMsg, attempt int) string {
	refs, err := g.Refs(ctx, fmt.Sprintf("refs/tai/%s/%s/", tm.Run, tm.Task))
	if err != nil {
		return ""
	}
	best, sha := 0, ""
	for _, r := range refs {
		n, err := strconv.Atoi(r.Name[strings.LastIndexByte(r.Name, '/')+1:])
		if err == nil && n < attempt && n > best {
			best, sha = n, r.ID
		}
	}
	return sha
}

// checkpointOnBase is where an attempt resumes an earlier one's checkpoint:
// its work carried onto the base this attempt was offered. A checkpoint
// is built on the target as it was when that attempt began; since then
// the target may have moved (other tasks merged, a coordinator resumed),
// and the final commit is a squash onto the new base, so starting from the
// bare checkpoint would revert everything merged meanwhile. The two are
// merged three-way (base: where they forked); when they conflict, the
// attempt starts over from the target, losing only its own earlier work.
func checkpointOnBase(ctx context.Context, g *worktree.Git, checkpoint, base string, log *slog.Logger) (start, from string) {
	if g.IsAncestor(ctx, base, checkpoint) {
		return checkpoint, "the last checkpoint" // it already holds the base
	}
	c, err := g.Carry(ctx, checkpoint, base, "tai checkpoint carried onto the target")
	switch {
	case errors.Is(err, worktree.ErrCarryConflict):
		log.Warn("the last checkpoint does not merge with the moved target; starting from the target", "checkpoint", checkpoint, "err", err)
		return base, "the target (the last checkpoint conflicts with it)"
	case err != nil:
		log.Warn("carrying the last checkpoint onto the target", "err", err)
		return base, "the target"
	}
	return c, "the last checkpoint, carried onto the moved target"
}

// checkpoint commits the worktree as it is and pushes it as the attempt's
// ref, so a next attempt can start from there.
func (w *worker) checkpoint(ctx context.Context, g *worktree.Git, dir string, tm TaskMsg, attempt int) error {
	if changed, err := g.CommitAll(ctx, dir, fmt.Sprintf("tai checkpoint %s/%s attempt %d", tm.Run, tm.Task, attempt)); err != nil || !changed {
		return err
	}
	err := push(ctx, g, dir, tm.RepoURL, attemptRef(tm.Run, tm.Task, attempt))
	if err == nil {
		w.event(ctx, tm, attempt, "checkpoint", "work so far pushed")
	}
	return err
}

// finalCommit squashes the attempt's work (checkpoints included) into one
// commit on the base and pushes it.
func (w *worker) finalCommit(ctx context.Context, g *worktree.Git, dir string, tm TaskMsg, attempt int, out fleet.TaskOutcome) (string, error) {
	head, err := g.Squash(ctx, dir, tm.Base, fleet.CommitMessage(tm.Run, tm.Task, tm.Prompt, out.Message))
	if err != nil {
		return "", err
	}
	if head == tm.Base {
		return head, nil // no change: nothing to push
	}
	if err := push(ctx, g, dir, tm.RepoURL, attemptRef(tm.Run, tm.Task, attempt)); err != nil {
		return "", err
	}
	return head, nil
}

// push sends HEAD to ref. A push into a repository whose refs change
// meanwhile (the coordinator merging) can be rejected by the receiving
// side's connectivity check; it is tried again.
func push(ctx context.Context, g *worktree.Git, dir, url, ref string) error {
	var err error
	for range 3 {
		if err = g.Push(ctx, dir, url, "+HEAD:"+ref); err == nil || ctx.Err() != nil {
			return err
		}
	}
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// identity is tai's, for a worker's clone has no user.
var identity = []string{"GIT_AUTHOR_NAME=tai", "GIT_AUTHOR_EMAIL=tai@localhost", "GIT_COMMITTER_NAME=tai", "GIT_COMMITTER_EMAIL=tai@localhost"}

// cloneGit is the runner of the worker's bare clone and of the tasks'
// worktrees made from it, under its worktrees directory: the agents write
// there, so git's config may come from no file there, and a worktree's
// .git must point at the gitdir the clone registered for it (an agent
// that points it at a gitdir of its own, with its fsmonitor and hooks, is
// refused).
func (w *worker) cloneGit(clone string) *worktree.Git {
	w.gitMu.Lock()
	defer w.gitMu.Unlock()
	if g, ok := w.gits[clone]; ok {
		return g
	}
	if w.gits == nil {
		w.gits = map[string]*worktree.Git{}
	}
	g := &worktree.Git{Repo: clone, CommonDir: clone, AgentRoots: []string{filepath.Join(w.o.State, "worktrees")}, Env: identity, Network: true}
	w.gits[clone] = g
	return g
}

// frameSink publishes a task's session events on the events stream, for
// its coordinator's frames and tai fleet logs.
type frameSink struct {
	w       *worker
	tm      TaskMsg
	attempt int
}

func (k frameSink) Emit(ev driver.Event) {
	data, err := json.Marshal(ev)
	if err != nil {
		return
	}
	k.w.bus.Event(context.Background(), EventMsg{Time: k.w.clock.Now().UTC(), Run: k.tm.Run, Task: k.tm.Task, Worker: k.w.o.Name, Attempt: k.attempt,
		Kind: KindFrame, Frame: data})
}
