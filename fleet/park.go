package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coder/quartz"
	"github.com/gofrs/flock"

	"github.com/tai-dev/tai/agentspec"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/quota"
	"github.com/tai-dev/tai/runner"
)

// A task that hits its account's usage limit parks the whole account:
// every running turn of that account is cancelled (its worktree, branch
// and session kept), no task of it is launched until the reset, and at
// the reset its tasks resume their own sessions, one every quota.stagger.
// Other accounts' tasks go on. The plan's quota: bounds the resumes and
// the waits; what it does not cover ends the account's tasks parked, for
// tai fleet resume. The parks are in the run's state, so a coordinator
// that dies while parked resumes with the same timers.

// Quota is a plan's budget for usage limits.
type Quota struct {
	// Wait is how long the fleet waits for resets in all (default 24h);
	// a reset further away than what is left ends the account's tasks
	// parked.
	Wait Duration `yaml:"wait" json:"wait,omitempty"`
	// MaxResumes is how many parks the fleet releases at their reset
	// (default 3); the next one ends its tasks parked.
	MaxResumes int `yaml:"max_resumes" json:"max_resumes,omitempty"`
	// Stagger spaces an account's resumes and launches after a reset
	// (default 10s), so they do not hit the limit together.
	Stagger Duration `yaml:"stagger" json:"stagger,omitempty"`
}

// Quota budget defaults.
const (
	DefaultQuotaWait    = 24 * time.Hour
	DefaultQuotaStagger = 10 * time.Second
)

func (q Quota) wait() time.Duration {
	if q.Wait == 0 {
		return DefaultQuotaWait
	}
	return time.Duration(q.Wait)
}

func (q Quota) maxResumes() int {
	if q.MaxResumes == 0 {
		return runner.DefaultMaxResumes
	}
	return q.MaxResumes
}

func (q Quota) stagger() time.Duration {
	if q.Stagger == 0 {
		return DefaultQuotaStagger
	}
	return time.Duration(q.Stagger)
}

// AccountPark is one account parked: until its reset, or by hand.
type AccountPark struct {
	Account string `json:"account"`
	// ResetsAt is when the limit clears (a backoff when the agent did not
	// say); zero for a park by hand (tai fleet pause).
	ResetsAt time.Time `json:"resets_at,omitzero"`
	Since    time.Time `json:"since"`
	Reason   string    `json:"reason"`
	ByHand   bool      `json:"by_hand,omitempty"`
	// Ended says why the fleet does not wait for this reset (its quota:
	// budget): the account's tasks end parked; tai fleet resume waits.
	Ended string `json:"ended,omitempty"`
}

// TaskPark is the session a parked task resumes.
type TaskPark struct {
	Session   string `json:"session,omitempty"`
	Resumable bool   `json:"resumable,omitempty"`
}

// Hand is a park or a release by hand (tai fleet pause / resume).
type Hand string

// The hands.
const (
	HandPause  Hand = "pause"
	HandResume Hand = "resume"
)

// parkCause cancels the turns of an account that parked. What it says is
// why, where a person reads it: a withdrawn ask's reason (the feed, tai
// top, the terminal, the web page, the audit log), a parked lease.
type parkCause struct{ why string }

func (c *parkCause) Error() string { return c.why }

// causeOf is the cause that cancels the turns of p's account.
func causeOf(p AccountPark) *parkCause {
	if p.ByHand {
		return &parkCause{"paused by hand (tai fleet pause)"}
	}
	why := "the account " + p.Account + " parked at its usage limit"
	if !p.ResetsAt.IsZero() {
		why += " (resets " + p.ResetsAt.UTC().Format(time.RFC3339) + ")"
	}
	return &parkCause{why}
}

// parkEnded is why a task of a parked account does not wait.
type parkEnded struct{ p AccountPark }

func (e *parkEnded) Error() string {
	return fmt.Sprintf("account %s parked (%s): %s", e.p.Account, e.p.Reason, e.p.Ended)
}

// parks are the fleet's parked accounts and the turns each has running.
type parks struct {
	mu    sync.Mutex
	accts map[string]*parked
	turns map[string]map[string]context.CancelCauseFunc // account → task → its turn's cancel
	next  map[string]time.Time                          // the account's next stagger slot
	who   map[string]quota.Account                      // the accounts the keys hash
}

type parked struct {
	AccountPark
	released chan struct{}
	timer    *quartz.Timer
}

func newParks() *parks {
	return &parks{accts: map[string]*parked{}, turns: map[string]map[string]context.CancelCauseFunc{}, next: map[string]time.Time{}, who: map[string]quota.Account{}}
}

// initParks computes each task's account and brings back the parks a
// previous coordinator left: those at a limit keep their reset time;
// those by hand are released (resuming the run is the release), unless
// the run keeps its pauses (Options.KeepPauses: a hub's coordinator
// adopting it again).
func (f *fleet) initParks() {
	f.parks = newParks()
	st := f.st.snapshot()
	for _, t := range f.plan.Tasks {
		if ts := st.Tasks[t.ID]; ts != nil {
			key := f.accountKey(t.AgentSpec)
			f.setTask(t.ID, func(ts *TaskState) { ts.Account = key })
		}
	}
	keys := make([]string, 0, len(st.Parks))
	for k := range st.Parks {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := st.Parks[k]
		_ = f.st.update(func(s *State) { delete(s.Parks, k) })
		if p.ByHand && !f.o.KeepPauses {
			if p.ResetsAt.IsZero() {
				continue
			}
			p.ByHand = false // paused by hand at a limit: its limit's timer goes on
		}
		f.arm(*p, true)
	}
}

// accountKey names a task's account: the plan's account:, else the agent
// and the hash of its credentials.
func (f *fleet) accountKey(a AgentSpec) string {
	a = f.merged(a)
	if a.Account != "" {
		return a.Account
	}
	name := a.Agent
	var creds quota.Credentials
	if r, err := agentspec.ResolveAgent(agentspec.Agent{Name: a.Agent, Command: a.AgentCmd, Driver: a.Driver}); err == nil {
		creds = r.Preset.Credentials()
		if k := r.Preset.Known(); k != "" {
			name = k
		}
	}
	home, _ := os.UserHomeDir()
	acct := quota.AccountOf(name, creds, os.Environ(), home)
	key := acct.Agent + ":" + acct.ID
	f.parks.mu.Lock()
	f.parks.who[key] = acct
	f.parks.mu.Unlock()
	return key
}

// account is the account a key names, for the runner's result and log
// (a plan's account: names itself).
func (f *fleet) account(key string) quota.Account {
	f.parks.mu.Lock()
	defer f.parks.mu.Unlock()
	if a, ok := f.parks.who[key]; ok {
		return a
	}
	return quota.Account{Agent: key, ID: "plan:" + key}
}

// parkAt parks the task's account at the limit it hit (a no-op when it is
// parked already, but for a later reset, which moves the timer).
func (f *fleet) parkAt(task, key string, l quota.Limit) {
	now := f.clock.Now()
	st := f.st.snapshot()
	resets := l.ResetsAt
	if resets.IsZero() {
		resets = now.Add(quota.Backoff(st.QuotaResumes, time.Minute, 30*time.Minute))
	}
	msg := l.Message
	if msg == "" {
		msg = string(l.Kind)
	}
	p := AccountPark{Account: key, ResetsAt: resets.UTC(), Since: now.UTC(), Reason: fmt.Sprintf("task %s: %s", task, msg)}
	q, wait := f.plan.Quota, max(resets.Sub(now), 0)
	waited := time.Duration(st.QuotaWaitedMS) * time.Millisecond
	switch {
	case st.QuotaResumes >= q.maxResumes():
		p.Ended = fmt.Sprintf("the fleet already resumed %d time(s) after a limit, its quota: max_resumes", st.QuotaResumes)
	case waited+wait > q.wait():
		p.Ended = fmt.Sprintf("the reset is %s away, past what its quota: wait of %s leaves (%s)", wait.Round(time.Second), q.wait(), (q.wait() - waited).Round(time.Second))
	}
	f.arm(p, false)
}

// arm records a park and cancels the account's running turns. restored:
// a previous coordinator's park, whose timer goes on (the budget was
// spent when it was made).
func (f *fleet) arm(p AccountPark, restored bool) {
	ps := f.parks
	ps.mu.Lock()
	if cur := ps.accts[p.Account]; cur != nil {
		later := !cur.ByHand && cur.Ended == "" && p.ResetsAt.After(cur.ResetsAt)
		hold := p.ByHand && !cur.ByHand && cur.Ended == ""
		switch {
		case hold:
			// Paused by hand while at a limit: only the hand releases it.
			cur.ByHand = true
			cur.timer.Stop()
		case later:
			cur.ResetsAt = p.ResetsAt
			cur.timer.Reset(max(p.ResetsAt.Sub(f.clock.Now()), 0), "fleet", "quota-reset")
		}
		saved := cur.AccountPark
		ps.mu.Unlock()
		if hold || later {
			_ = f.st.update(func(s *State) { s.Parks[p.Account] = &saved })
		}
		if hold {
			f.emit(EventParked, "", "account "+p.Account+" parked by hand (tai fleet resume releases it)", map[string]any{"account": p.Account, "by_hand": true})
		}
		return
	}
	if restored {
		p.Ended = "" // resuming the run is waiting for the reset
	}
	pk := &parked{AccountPark: p, released: make(chan struct{})}
	ps.accts[p.Account] = pk
	f.wall.hold() // until its release: a park's time is the quota: budget's
	if p.Ended != "" {
		close(pk.released) // nobody waits: the tasks end parked
	} else if !p.ByHand {
		key := p.Account
		pk.timer = f.clock.AfterFunc(max(p.ResetsAt.Sub(f.clock.Now()), 0), func() { f.release(key, "the limit reset") }, "fleet", "quota-reset")
	}
	var cancels []context.CancelCauseFunc
	for _, c := range ps.turns[p.Account] {
		cancels = append(cancels, c)
	}
	detail := "account " + p.Account + " parked"
	switch {
	case p.ByHand:
		detail += " by hand (tai fleet resume releases it)"
	case p.Ended != "":
		detail += " until " + p.ResetsAt.Format(time.RFC3339) + "; the fleet does not wait: " + p.Ended
	default:
		detail += " until " + p.ResetsAt.Format(time.RFC3339)
	}
	switch {
	case restored && p.ByHand:
		detail += " (kept from before its coordinator stopped)"
	case restored:
		detail += " (its timer kept from before the run stopped)"
	}
	// Said under the lock, as the release and a task's start are: the
	// log's order is the real one (a launch is before the park or after
	// its release, a past reset's release after the park).
	f.emit(EventParked, "", detail, map[string]any{"account": p.Account, "resets_at": p.ResetsAt, "reason": p.Reason,
		"by_hand": p.ByHand, "ended": p.Ended, "running": len(cancels)})
	ps.mu.Unlock()
	_ = f.st.update(func(s *State) {
		if s.Parks == nil {
			s.Parks = map[string]*AccountPark{}
		}
		s.Parks[p.Account] = &p
	})
	for _, c := range cancels {
		c(causeOf(p))
	}
}

// release ends an account's park: at its reset, or by hand.
func (f *fleet) release(key, why string) {
	ps := f.parks
	ps.mu.Lock()
	pk := ps.accts[key]
	if pk == nil {
		ps.mu.Unlock()
		return
	}
	lasted := f.clock.Since(pk.Since)
	// Said under the lock, before the account's tasks may start: the
	// log's order is the real one (no launch between a park and this).
	f.emit(EventResumed, "", "account "+key+" released: "+why, map[string]any{"account": key, "waited_ms": lasted.Milliseconds()})
	delete(ps.accts, key)
	f.wall.release()
	if pk.timer != nil {
		pk.timer.Stop()
	}
	if pk.Ended == "" {
		close(pk.released)
	}
	ps.next[key] = f.clock.Now()
	ps.mu.Unlock()
	_ = f.st.update(func(s *State) {
		delete(s.Parks, key)
		if !pk.ByHand {
			s.QuotaResumes++
			s.QuotaWaitedMS += lasted.Milliseconds()
		}
	})
}

// hand parks every account by hand, or releases every park.
func (f *fleet) hand(h Hand) {
	switch h {
	case HandPause:
		now := f.clock.Now().UTC()
		for _, k := range f.accounts() {
			f.arm(AccountPark{Account: k, Since: now, Reason: "paused by hand (tai fleet pause)", ByHand: true}, false)
		}
	case HandResume:
		f.parks.mu.Lock()
		var keys []string
		for k := range f.parks.accts {
			keys = append(keys, k)
		}
		f.parks.mu.Unlock()
		sort.Strings(keys)
		for _, k := range keys {
			f.release(k, "released by hand (tai fleet resume)")
		}
	}
}

// accounts are the run's accounts, sorted.
func (f *fleet) accounts() []string {
	seen := map[string]bool{}
	var keys []string
	for _, ts := range f.st.snapshot().Tasks {
		if ts.Account != "" && !seen[ts.Account] {
			seen[ts.Account] = true
			keys = append(keys, ts.Account)
		}
	}
	sort.Strings(keys)
	return keys
}

// awaitAccount returns when a task of the account may start a turn: at
// once when it is not parked, else after its release and the task's
// stagger slot. A park the budget does not cover returns *parkEnded.
func (f *fleet) awaitAccount(ctx context.Context, key string) error {
	ps := f.parks
	for {
		ps.mu.Lock()
		pk := ps.accts[key]
		if pk == nil {
			// Released (or never parked): take the next stagger slot.
			now := f.clock.Now()
			slot := ps.next[key]
			if slot.IsZero() {
				ps.mu.Unlock()
				return nil
			}
			if slot.Before(now) {
				slot = now
			}
			ps.next[key] = slot.Add(f.plan.Quota.stagger())
			ps.mu.Unlock()
			if d := slot.Sub(now); d > 0 {
				t := f.clock.NewTimer(d, "fleet", "quota-stagger")
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return context.Cause(ctx)
				}
				if f.parked(key) {
					continue // parked again while it waited its turn
				}
			}
			return nil
		}
		if pk.Ended != "" {
			p := pk.AccountPark
			ps.mu.Unlock()
			return &parkEnded{p}
		}
		ch := pk.released
		ps.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

func (f *fleet) parked(key string) bool {
	f.parks.mu.Lock()
	defer f.parks.mu.Unlock()
	return f.parks.accts[key] != nil
}

// enterTurn registers a turn of the account, to be cancelled if it
// parks, and calls start; a turn that starts as it parks is cancelled at
// once, without start. start runs under the parks' lock, so that what it
// says comes before the park's event, or not at all. The returned func
// unregisters the turn.
func (f *fleet) enterTurn(key, task string, cancel context.CancelCauseFunc, start func()) func() {
	ps := f.parks
	ps.mu.Lock()
	if ps.turns[key] == nil {
		ps.turns[key] = map[string]context.CancelCauseFunc{}
	}
	ps.turns[key][task] = cancel
	var why *parkCause
	if pk := ps.accts[key]; pk != nil {
		why = causeOf(pk.AccountPark)
	} else {
		start()
	}
	ps.mu.Unlock()
	if why != nil {
		cancel(why)
	}
	return func() {
		ps.mu.Lock()
		delete(ps.turns[key], task)
		ps.mu.Unlock()
	}
}

// parkedBy is the limit a turn ended on, or, for a turn cancelled because
// its account parked, a zero Limit; ok is false for any other end.
func parkedBy(turnCtx context.Context, res runner.Result, err error, now time.Time) (*quota.Limit, bool) {
	var pc *parkCause
	if errors.As(context.Cause(turnCtx), &pc) {
		return nil, true
	}
	if res.Parked != nil {
		l := res.Parked.Limit
		return &l, true
	}
	if l, ok := quota.FromError(err, now); ok && res.ExitCode != 0 {
		return &l, true
	}
	return nil, false
}

// park parks the task (and, on its own limit, its account), gives its
// slot to other accounts' tasks while it waits, and makes the turn that
// resumes it: its own session, or a new one told what was done so far.
// A turn that did not run (ran false) is sent as it was after the wait.
func (r *taskRun) park(ctx context.Context, res runner.Result, l *quota.Limit, n next, ran bool) (next, *taskEnd) {
	f, id := r.f, r.t.ID
	if ran && res.SessionID == "" && n.resume == "" {
		ran = false // stopped before its agent had a session: nothing to resume
	}
	tp := f.st.task(id).Park // a turn that did not run leaves it as it was
	if ran {
		tp = &TaskPark{Session: res.SessionID, Resumable: res.Resumable && res.SessionID != ""}
		if !tp.Resumable {
			tp.Session = ""
		}
		if tp.Session == "" && n.resume != "" {
			// The turn ended before the agent named the session it resumed.
			tp.Session, tp.Resumable = n.resume, true
		}
	}
	r.wall.hold() // its time parked is the quota: budget's, not its wall time's
	e := f.parkTask(ctx, id, r.acct, l, tp, ran)
	r.wall.release()
	if e != nil {
		return n, e
	}
	if !ran {
		return n, nil
	}
	return r.resumeNext(ctx, tp, n), nil
}

// parkTask parks task id (and, on its own limit l, its account acct) with
// the session tp it resumes (says: it resumes one, for its resumed
// event), gives its slot to other accounts' tasks
// while it waits, and returns when it resumes (nil: its slot taken back),
// or how it ends: parked past the plan's quota: budget, or interrupted.
// The local executor's turns and a remote one's results share it.
func (f *fleet) parkTask(ctx context.Context, id, acct string, l *quota.Limit, tp *TaskPark, says bool) *taskEnd {
	if l != nil {
		f.parkAt(id, acct, *l)
	}
	f.setTask(id, func(ts *TaskState) {
		ts.Status, ts.Park, ts.Reason = StatusParked, tp, "its account "+acct+" is parked"
	})
	f.emit(EventParked, id, "parked with its account "+acct+f.parkedUntil(acct), map[string]any{"account": acct})
	f.slots.Release(1)
	err := f.awaitAccount(ctx, acct)
	if aerr := f.slots.Acquire(context.WithoutCancel(ctx), 1); aerr != nil {
		err = errors.Join(err, aerr)
	}
	var pe *parkEnded
	switch {
	case errors.As(err, &pe):
		return &taskEnd{StatusParked, exitcode.Parked, pe.Error()}
	case err != nil:
		return interrupted(ctx, ctx)
	}
	f.setTask(id, func(ts *TaskState) { ts.Status, ts.Reason = StatusRunning, "" })
	if tp == nil || !says {
		return nil
	}
	how := "in its own session " + tp.Session
	if !tp.Resumable {
		how = "in a new session told what was done so far (its agent cannot resume one)"
	}
	f.emit(EventResumed, id, "resumed "+how, map[string]any{"account": acct, "session": tp.Session, "resumable": tp.Resumable})
	return nil
}

// resumeNext is the turn that resumes a parked task.
func (r *taskRun) resumeNext(ctx context.Context, tp *TaskPark, n next) next {
	full := n.full
	if full == "" {
		full = r.prompt
	}
	if tp.Resumable {
		return next{prompt: runner.ContinuePrompt, resume: tp.Session, full: full}
	}
	diff := "(no changes yet)"
	if r.h != nil {
		if p, err := r.f.wt.WorkDiff(ctx, r.cwd, r.h.Base, 16<<10); err == nil && strings.TrimSpace(p) != "" {
			diff = p
		}
	}
	return next{prompt: runner.ResumePrompt(full, diff), full: full}
}

// acquire waits until the task's account is not parked and a slot is
// free; a task is never launched while its account is parked.
func (f *fleet) acquire(ctx context.Context, id string) error {
	key := f.st.task(id).Account
	for {
		if f.parked(key) && f.st.task(id).Status != StatusParked {
			f.setTask(id, func(ts *TaskState) {
				ts.Status, ts.Reason = StatusParked, "not launched: its account "+key+" is parked"
			})
			f.emit(EventParked, id, "not launched: its account "+key+" is parked"+f.parkedUntil(key), map[string]any{"account": key})
		}
		if err := f.awaitAccount(ctx, key); err != nil {
			return err
		}
		if err := f.slots.Acquire(ctx, 1); err != nil {
			return err
		}
		if !f.parked(key) {
			return nil
		}
		f.slots.Release(1) // parked while it waited for the slot
	}
}

// watchHands applies the parks and releases by hand until done.
func (f *fleet) watchHands(done <-chan struct{}) {
	for {
		select {
		case h, ok := <-f.o.Hands:
			if !ok {
				return
			}
			f.hand(h)
		case <-done:
			return
		}
	}
}

// Coordinator is the pid of the process running the run in dir now, if
// one is: the run's lock is held and its state names a live pid.
func Coordinator(dir string) (int, bool) {
	lk := flock.New(filepath.Join(dir, "run.lock"))
	if got, err := lk.TryLock(); err != nil || got {
		if got {
			_ = lk.Unlock()
		}
		return 0, false
	}
	st, err := LoadState(dir)
	if err != nil || st.Status != "running" || st.PID <= 0 {
		return 0, false
	}
	return st.PID, syscall.Kill(st.PID, 0) == nil
}

// parkedUntil is " until RESET" for an account parked at a limit, for a
// task's parked event (tai top and the frames show it), else "".
func (f *fleet) parkedUntil(key string) string {
	f.parks.mu.Lock()
	defer f.parks.mu.Unlock()
	if pk := f.parks.accts[key]; pk != nil && !pk.ByHand && !pk.ResetsAt.IsZero() {
		return " until " + pk.ResetsAt.Format(time.RFC3339)
	}
	return ""
}
