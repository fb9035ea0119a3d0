package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tai-dev/tai/driver"
)

// ErrBudget marks a budget refusal or exhaustion (exit code 6).
var ErrBudget = errors.New("budget exceeded")

// Usage is what a task or the fleet has spent.
type Usage struct {
	Tokens int64   `json:"tokens"`
	Turns  int     `json:"turns"`
	Cost   float64 `json:"cost"`
}

func (u Usage) add(v Usage) Usage {
	return Usage{Tokens: u.Tokens + v.Tokens, Turns: u.Turns + v.Turns, Cost: u.Cost + v.Cost}
}

// tokensOf counts a run's tokens: the turn totals when the agent reports
// them, else input+output, else the context used (a lower bound that
// ACP's usage_update gives even when turns report nothing).
func tokensOf(u *driver.Usage) int64 {
	switch {
	case u == nil:
		return 0
	case u.TotalTokens > 0:
		return u.TotalTokens
	case u.InputTokens+u.OutputTokens > 0:
		return u.InputTokens + u.OutputTokens
	}
	return u.ContextUsed
}

// Meter is the fleet's budget. Before a task starts it reserves its own
// limits (or, for a dimension it sets no limit on, an equal share: the
// fleet limit divided by the concurrency); a reservation that could fit
// once running tasks give back what they did not use waits, one that can
// never fit is refused. So parallel tasks cannot overshoot together: the
// sum of what they may spend is within the fleet's limit.
type Meter struct {
	limits Limits
	share  int // concurrency, for default per-task reservations
	onSoft func(dim string, used, limit float64)

	mu       sync.Mutex
	used     Usage
	reserved Usage
	live     map[*Reservation]Usage
	soft     map[string]bool
	changed  chan struct{}
}

// NewMeter makes a meter; used is what earlier attempts of this run spent.
func NewMeter(l Limits, concurrency int, used Usage, onSoft func(dim string, used, limit float64)) *Meter {
	if l.Soft == 0 {
		l.Soft = 0.8
	}
	if concurrency < 1 {
		concurrency = 1
	}
	return &Meter{limits: l, share: concurrency, used: used, onSoft: onSoft, live: map[*Reservation]Usage{}, soft: map[string]bool{}, changed: make(chan struct{})}
}

// Reservation is a task's claim on the fleet budget; its Limits are the
// task's hard limits.
type Reservation struct {
	Task   string
	Limits Limits
	own    Limits // the task's own limits: a dimension without one has a share
	m      *Meter
	done   bool
}

// Want is what a task with limits t would reserve.
func (m *Meter) Want(t Limits) Limits {
	w := t
	if w.Tokens == 0 && m.limits.Tokens > 0 {
		w.Tokens = max(m.limits.Tokens/int64(m.share), 1)
	}
	if w.Turns == 0 && m.limits.Turns > 0 {
		w.Turns = max(m.limits.Turns/m.share, 1)
	}
	if w.Cost == 0 && m.limits.Cost > 0 {
		w.Cost = m.limits.Cost / float64(m.share)
	}
	return w
}

// Reserve claims a task's budget, waiting while running tasks hold what it
// needs. The error wraps ErrBudget when the fleet can never give it.
func (m *Meter) Reserve(ctx context.Context, task string, t Limits) (*Reservation, error) {
	w := m.Want(t)
	for {
		m.mu.Lock()
		if err := m.never(task, w); err != nil {
			m.mu.Unlock()
			return nil, err
		}
		if m.fits(w) {
			m.reserved = m.reserved.add(Usage{Tokens: w.Tokens, Turns: w.Turns, Cost: w.Cost})
			r := &Reservation{Task: task, Limits: w, own: t, m: m}
			m.live[r] = Usage{}
			m.mu.Unlock()
			return r, nil
		}
		ch := m.changed
		m.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

func (m *Meter) never(task string, w Limits) error {
	l, u := m.limits, m.used
	switch {
	case l.Tokens > 0 && u.Tokens+w.Tokens > l.Tokens:
		return fmt.Errorf("%w: task %s needs %d tokens; the fleet has %d of %d left", ErrBudget, task, w.Tokens, max(l.Tokens-u.Tokens, 0), l.Tokens)
	case l.Turns > 0 && u.Turns+w.Turns > l.Turns:
		return fmt.Errorf("%w: task %s needs %d turns; the fleet has %d of %d left", ErrBudget, task, w.Turns, max(l.Turns-u.Turns, 0), l.Turns)
	case l.Cost > 0 && u.Cost+w.Cost > l.Cost+1e-9:
		return fmt.Errorf("%w: task %s needs %.4g in cost; the fleet has %.4g of %.4g left", ErrBudget, task, w.Cost, max(l.Cost-u.Cost, 0), l.Cost)
	}
	return nil
}

func (m *Meter) fits(w Limits) bool {
	l, u, r := m.limits, m.used, m.reserved
	return (l.Tokens == 0 || u.Tokens+r.Tokens+w.Tokens <= l.Tokens) &&
		(l.Turns == 0 || u.Turns+r.Turns+w.Turns <= l.Turns) &&
		(l.Cost == 0 || u.Cost+r.Cost+w.Cost <= l.Cost+1e-9)
}

// Update records a running task's spending so far, and checks the soft
// threshold on what the fleet has spent including it. It returns an error
// wrapping ErrBudget once the task is over its own limits: the caller
// stops the task at the next safe boundary.
func (r *Reservation) Update(u Usage) error {
	m := r.m
	m.mu.Lock()
	if !r.done {
		m.live[r] = u
	}
	total := m.used
	for _, v := range m.live {
		total = total.add(v)
	}
	var fire [][3]any
	check := func(dim string, used, limit float64) {
		if limit > 0 && used >= m.limits.Soft*limit && !m.soft[dim] {
			m.soft[dim] = true
			fire = append(fire, [3]any{dim, used, limit})
		}
	}
	check("tokens", float64(total.Tokens), float64(m.limits.Tokens))
	check("turns", float64(total.Turns), float64(m.limits.Turns))
	check("cost", total.Cost, m.limits.Cost)
	m.mu.Unlock()
	for _, f := range fire {
		if m.onSoft != nil {
			m.onSoft(f[0].(string), f[1].(float64), f[2].(float64))
		}
	}
	return r.over(u)
}

func (r *Reservation) over(u Usage) error {
	l := r.Limits
	switch {
	case l.Tokens > 0 && u.Tokens > l.Tokens:
		return fmt.Errorf("%w: task %s used %d tokens, %s", ErrBudget, r.Task, u.Tokens, r.limit("tokens"))
	case l.Turns > 0 && u.Turns > l.Turns:
		return fmt.Errorf("%w: task %s used %d turns, %s", ErrBudget, r.Task, u.Turns, r.limit("turns"))
	case l.Cost > 0 && u.Cost > l.Cost+1e-9:
		return fmt.Errorf("%w: task %s cost %.4g, %s", ErrBudget, r.Task, u.Cost, r.limit("cost"))
	}
	return nil
}

// limit says what the task's limit in dim is, and where it comes from:
// the task's budget, or its share of the fleet's (the fleet's limit over
// the concurrency), which a reader could not guess from the number.
func (r *Reservation) limit(dim string) string {
	var own bool
	var lim, fleet string
	switch dim {
	case "tokens":
		own, lim, fleet = r.own.Tokens > 0, fmt.Sprint(r.Limits.Tokens), fmt.Sprint(r.m.limits.Tokens)
	case "turns":
		own, lim, fleet = r.own.Turns > 0, fmt.Sprint(r.Limits.Turns), fmt.Sprint(r.m.limits.Turns)
	default:
		own, lim, fleet = r.own.Cost > 0, fmt.Sprintf("%.4g", r.Limits.Cost), fmt.Sprintf("%.4g", r.m.limits.Cost)
	}
	if own {
		return "its limit is " + lim + " (the task's budget)"
	}
	return fmt.Sprintf("its limit is %s: its share of the fleet's %s %s over the concurrency (-j %d); a budget: on the task gives it its own",
		lim, fleet, dim, r.m.share)
}

// nextWouldPass: a task at u whose updates grow by up to step is at its
// reservation, or would pass it with its next update.
func (r *Reservation) nextWouldPass(u, step Usage) error {
	l := r.Limits
	switch {
	case l.Tokens > 0 && (u.Tokens >= l.Tokens || u.Tokens+step.Tokens > l.Tokens):
		return fmt.Errorf("%w: task %s used %d tokens; with its next update (about %d more) it would pass its limit; %s", ErrBudget, r.Task, u.Tokens, step.Tokens, r.limit("tokens"))
	case l.Cost > 0 && (u.Cost >= l.Cost-1e-9 || u.Cost+step.Cost > l.Cost+1e-9):
		return fmt.Errorf("%w: task %s cost %.4g; with its next update (about %.4g more) it would pass its limit; %s", ErrBudget, r.Task, u.Cost, step.Cost, r.limit("cost"))
	}
	return nil
}

// CanTurn reports whether the task may start one more turn.
func (r *Reservation) CanTurn(u Usage) error {
	if r.Limits.Turns > 0 && u.Turns+1 > r.Limits.Turns {
		return fmt.Errorf("%w: task %s has used its %d turn(s)", ErrBudget, r.Task, r.Limits.Turns)
	}
	return nil
}

// Release ends the reservation: what the task spent is charged to the
// fleet, the rest goes back.
func (r *Reservation) Release(spent Usage) {
	m := r.m
	m.mu.Lock()
	if r.done {
		m.mu.Unlock()
		return
	}
	r.done = true
	delete(m.live, r)
	w := r.Limits
	m.reserved = Usage{Tokens: m.reserved.Tokens - w.Tokens, Turns: m.reserved.Turns - w.Turns, Cost: m.reserved.Cost - w.Cost}
	m.used = m.used.add(spent)
	close(m.changed)
	m.changed = make(chan struct{})
	m.mu.Unlock()
}

// Used is what the fleet has spent (finished reservations).
func (m *Meter) Used() Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used
}

// WallTime is the fleet's wall-time limit.
func (m *Meter) WallTime() time.Duration { return time.Duration(m.limits.WallTime) }
