package fleet

import (
	"sync"
	"time"

	"github.com/coder/quartz"
)

// wallBudget calls fire once a task or the fleet has run for its wall
// time. Time held (a task parked, or the fleet with an account parked,
// waiting for a usage limit's reset) does not count: the plan's quota:
// budget bounds that wait instead. A nil wallBudget (no wall time) does
// nothing.
type wallBudget struct {
	clock quartz.Clock
	fire  func()
	tags  []string

	mu    sync.Mutex
	left  time.Duration // what is left, as of since
	since time.Time     // when the running stretch began
	holds int
	tm    *quartz.Timer // nil while held
}

// newWallBudget starts wall's budget now; nil if wall is 0 (none).
func newWallBudget(clock quartz.Clock, wall time.Duration, fire func(), tags ...string) *wallBudget {
	if wall <= 0 {
		return nil
	}
	w := &wallBudget{clock: clock, fire: fire, tags: tags, left: wall}
	w.run()
	return w
}

// run starts a running stretch; w.mu is held (or w is new).
func (w *wallBudget) run() {
	w.since = w.clock.Now()
	w.tm = w.clock.AfterFunc(max(w.left, 0), w.fire, w.tags...)
}

// hold stops the budget's time until as many releases.
func (w *wallBudget) hold() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.holds++; w.holds == 1 && w.tm != nil {
		if w.tm.Stop(w.tags...) {
			w.left = max(w.left-w.clock.Since(w.since), 0)
		} else {
			w.left = -1 // it fired: a release does not fire it again
		}
		w.tm = nil
	}
}

// release ends a hold: the budget's time runs again once none is left.
func (w *wallBudget) release() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.holds == 0 {
		return
	}
	if w.holds--; w.holds == 0 && w.left >= 0 {
		w.run()
	}
}

// stop ends the budget for good.
func (w *wallBudget) stop() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.tm != nil {
		w.tm.Stop(w.tags...)
	}
	w.holds, w.left, w.tm = 1, -1, nil
}
