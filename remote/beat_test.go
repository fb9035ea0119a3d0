package remote

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/coder/quartz"
)

// A beat whose reply never came still lands: the next beat finds the
// revision moved by its own attempt and goes on. Only another attempt's
// claim, or a lease that is no longer a claim, loses it.
func TestBeatSurvivesItsOwnUnheardWrite(t *testing.T) {
	h := startHub(t)
	b := openBus(t, h.url, "beat")
	ctx := context.Background()
	clock := quartz.NewMock(t)
	for _, tc := range []struct {
		name  string
		task  string
		other func(rev uint64, mine Lease) error // what happens to the lease between two beats
		lost  bool
	}{
		{"own write unheard", "own", func(rev uint64, mine Lease) error {
			mine.Deadline = mine.Deadline.Add(time.Second)
			_, err := b.PutLease(ctx, "r", "own", mine, rev)
			return err
		}, false},
		{"own writes unheard twice", "twice", func(rev uint64, mine Lease) error {
			rev, err := b.PutLease(ctx, "r", "twice", mine, rev)
			if err == nil {
				_, err = b.PutLease(ctx, "r", "twice", mine, rev)
			}
			return err
		}, false},
		{"another attempt claimed", "other", func(rev uint64, mine Lease) error {
			_, err := b.PutLease(ctx, "r", "other", Lease{State: LeaseClaimed, Worker: "B", Attempt: 2, Deadline: clock.Now().Add(time.Hour)}, rev)
			return err
		}, true},
		{"same worker, next attempt", "next", func(rev uint64, mine Lease) error {
			mine.Attempt++
			_, err := b.PutLease(ctx, "r", "next", mine, rev)
			return err
		}, true},
		{"settled", "settled", func(rev uint64, mine Lease) error {
			mine.State = LeaseAccepted
			_, err := b.PutLease(ctx, "r", "settled", mine, rev)
			return err
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task := tc.task
			mine := Lease{State: LeaseClaimed, Worker: "A", Attempt: 1, Deadline: clock.Now().Add(2 * time.Second)}
			rev, err := b.PutLease(ctx, "r", task, mine, 0)
			if err != nil {
				t.Fatal(err)
			}
			var cause error
			hd := &held{rev: rev, lease: mine, bus: b, run: "r", task: task, dur: 2 * time.Second, clock: clock,
				onLost: func(err error) { cause = err }}
			if !hd.beat(ctx) {
				t.Fatal("the first beat failed")
			}
			if err := tc.other(hd.rev, mine); err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Second)
			ok := hd.beat(ctx)
			if ok == tc.lost || hd.lost != tc.lost || errors.Is(cause, ErrLeaseLost) != tc.lost {
				t.Fatalf("beat %v, lost %v, cause %v; want lost %v", ok, hd.lost, cause, tc.lost)
			}
			l, _, err := b.GetLease(ctx, "r", task)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.lost && (l.Worker != "A" || l.Attempt != 1 || !l.Deadline.Equal(clock.Now().Add(2*time.Second))) {
				t.Fatalf("lease after the beat: %+v", l)
			}
			if tc.lost && l.Worker == "A" && l.Attempt == 1 && l.State == LeaseClaimed {
				t.Fatalf("a lost beat overwrote the lease: %+v", l)
			}
		})
	}
}
