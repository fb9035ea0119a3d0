package remote

import (
	"context"
	"testing"
	"time"

	"github.com/coder/quartz"
)

// An attempt learns that its account parked from its lease: the
// coordinator's parkLease puts Parking on the claim by compare-and-swap,
// and the attempt's watch hands back parked. Parking on a lease that is
// no longer this attempt's claim (another attempt took it, the attempt
// handed it back as an offer) must not stop it: the watch reads the
// lease's values in order, so each case ends with a sentinel Parking on
// this attempt's own claim, and the word it stopped on must be the
// sentinel's, never the stale one. The watcher is opened before the
// writes, so that the watch sees every value, not only the last.
func TestLeaseWatchParksOnlyItsOwnClaim(t *testing.T) {
	hub := startHub(t)
	b := openBus(t, hub.url, "watch")
	c := settleCoordinator(t, b, nil, nil, nil)
	clock := quartz.NewMock(t)
	mine := Lease{State: LeaseClaimed, Worker: "A", Attempt: 1, Deadline: clock.Now().Add(time.Minute)}
	const why, sentinel = "account builtin/sha256:1 parked", "sentinel"
	tests := []struct {
		name string
		// before runs before the watch opens, after once it watches; both
		// may move the lease (rev is its revision, returned anew).
		before, after func(t *testing.T, task string, rev uint64) uint64
		want          string // the Parking the attempt stopped on
	}{
		{"parkLease on this attempt's claim", nil, func(t *testing.T, task string, rev uint64) uint64 {
			c.parkLease(t.Context(), task, why)
			return 0
		}, why},
		{"parked before the watch opened", func(t *testing.T, task string, rev uint64) uint64 {
			c.parkLease(t.Context(), task, why)
			return 0
		}, nil, why},
		{"another worker's attempt took the lease", nil, func(t *testing.T, task string, rev uint64) uint64 {
			return parkOn(t, c, b, task, Lease{State: LeaseClaimed, Worker: "B", Attempt: 2, Deadline: clock.Now().Add(time.Hour)}, rev)
		}, sentinel},
		{"the same worker's next attempt took it", nil, func(t *testing.T, task string, rev uint64) uint64 {
			return parkOn(t, c, b, task, Lease{State: LeaseClaimed, Worker: "A", Attempt: 2, Deadline: clock.Now().Add(time.Hour)}, rev)
		}, sentinel},
		{"handed back: an offer", nil, func(t *testing.T, task string, rev uint64) uint64 {
			return parkOn(t, c, b, task, Lease{State: LeaseOffered, Attempt: 1}, rev)
		}, sentinel},
		{"settled: parked already", nil, func(t *testing.T, task string, rev uint64) uint64 {
			// parkLease leaves a settled lease alone; a Parking on one is stale.
			rev = put(t, b, task, Lease{State: LeaseParked, Worker: "A", Attempt: 1, Parking: "stale"}, rev)
			c.parkLease(t.Context(), task, "stale")
			return rev
		}, sentinel},
		{"this claim's own beat", nil, func(t *testing.T, task string, rev uint64) uint64 {
			l := mine
			l.Deadline = l.Deadline.Add(time.Minute)
			return put(t, b, task, l, rev)
		}, sentinel},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := "t" + string(rune('a'+i))
			rev := put(t, b, task, mine, 0)
			if tt.before != nil {
				rev = tt.before(t, task, rev)
			}
			h := &held{lease: mine, bus: b, run: "r", task: task, dur: time.Minute, clock: clock, parked: make(chan struct{}),
				onLost: func(error) {}}
			// A hang guard only: a watch that never parks returns at the deadline.
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			kw, err := b.Leases.Watch(ctx, leaseKey("r", task))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = kw.Stop() }()
			if tt.after != nil {
				rev = tt.after(t, task, rev)
			}
			if tt.want == sentinel {
				if rev == 0 {
					_, rev, _ = b.GetLease(ctx, "r", task)
				}
				l := mine
				l.Parking = sentinel
				put(t, b, task, l, rev)
			}
			if tt.after == nil {
				h.watch(ctx) // the whole watch: its own watcher sees the claim as parked
			} else {
				h.follow(ctx, kw.Updates())
			}
			select {
			case <-h.parked:
			default:
				t.Fatal("the watch did not hand back parked")
			}
			if h.lease.Parking != tt.want {
				t.Fatalf("the attempt stopped on %q, want %q", h.lease.Parking, tt.want)
			}
		})
	}
}

// parkOn moves the lease to l, then lets the coordinator park the task's
// account: parkLease puts its Parking on whatever the lease now is. It
// returns the lease's revision.
func parkOn(t *testing.T, c *coordinator, b *Bus, task string, l Lease, rev uint64) uint64 {
	t.Helper()
	put(t, b, task, l, rev)
	c.parkLease(t.Context(), task, "stale")
	cur, rev, err := b.GetLease(t.Context(), "r", task)
	if err != nil {
		t.Fatal(err)
	}
	if cur.Parking != "stale" {
		t.Fatalf("parkLease did not park %+v", cur)
	}
	return rev
}

func put(t *testing.T, b *Bus, task string, l Lease, rev uint64) uint64 {
	t.Helper()
	rev, err := b.PutLease(t.Context(), "r", task, l, rev)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}
