package app

import (
	"cmp"
	"path/filepath"
	"time"

	"github.com/tai-dev/tai/feed"
	"github.com/tai-dev/tai/fleet"
)

// fleetBudget is a plan's limits as the live feed shows them: the fleet's,
// and each task's own or its share of the fleet's (what the fleet's meter
// reserves for it).
type fleetBudget struct {
	fleet feed.Limits
	tasks map[string]feed.Limits
}

// budgetOf reads the limits of plan (nil on a resume: the run directory's
// copy), run at concurrency (0: the plan's).
func budgetOf(plan *fleet.Plan, dir string, concurrency int) (fleetBudget, error) {
	if plan == nil {
		p, err := fleet.LoadPlan(filepath.Join(dir, "plan.yaml"))
		if err != nil {
			return fleetBudget{}, err
		}
		plan = p
	}
	conc := cmp.Or(concurrency, plan.Concurrency, fleet.DefaultConcurrency)
	m := fleet.NewMeter(plan.Budget, conc, fleet.Usage{}, nil)
	b := fleetBudget{fleet: feedLimits(plan.Budget), tasks: map[string]feed.Limits{}}
	for _, t := range plan.Tasks {
		b.tasks[t.ID] = feedLimits(m.Want(t.Budget))
	}
	return b, nil
}

func feedLimits(l fleet.Limits) feed.Limits {
	return feed.Limits{Tokens: l.Tokens, Turns: l.Turns, Cost: l.Cost, WallTimeMS: time.Duration(l.WallTime).Milliseconds()}
}

func feedUsage(u fleet.Usage) feed.Usage {
	return feed.Usage{Tokens: u.Tokens, Turns: u.Turns, Cost: u.Cost}
}

// publish keeps the feed's budgets current with a fleet event: the
// fleet's, and the task's it is about.
func (b fleetBudget) publish(srv *feed.Server, e fleet.Event) {
	if b.fleet != (feed.Limits{}) {
		srv.SetBudget(feed.Budget{Limit: b.fleet, Used: feedUsage(e.State.Usage), Updated: e.Time.UTC()})
	}
}

// task is a task's budget for the feed; nil if it has no limits.
func (b fleetBudget) task(t *fleet.TaskState) *feed.Budget {
	l, ok := b.tasks[t.ID]
	if !ok || l == (feed.Limits{}) {
		return nil
	}
	return &feed.Budget{Limit: l, Used: feedUsage(t.Usage)}
}
