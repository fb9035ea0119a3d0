package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/coder/quartz"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/fleet"
	"github.com/tai-dev/tai/worktree"
)

// SubmitOptions describe a run handed to the hub's coordinator.
type SubmitOptions struct {
	Plan    *fleet.Plan
	RunID   string
	Repo    string // a directory in the repository; default the plan's
	RepoURL string // where workers clone and push; default the repository by path
	Lease   time.Duration
	// Human: the submitter follows the run at a terminal and answers its
	// asks (RunRecord.Human).
	Human bool
	Clock quartz.Clock
}

// Submit hands a run to the hub's coordinator (tai hub --coordinate): its
// record goes in the runs bucket, marked submitted; the coordinator
// watching the bucket adopts it. The repository is reached by the
// record's Repo path (the coordinator runs on this host) for merging.
func Submit(ctx context.Context, b *Bus, o SubmitOptions) (RunRecord, error) {
	if o.Clock == nil {
		o.Clock = quartz.NewReal()
	}
	if !worktree.ValidName(o.RunID) {
		return RunRecord{}, exitcode.Usagef("invalid run id %q", o.RunID)
	}
	rec, _, err := newRecord(ctx, o.Plan, o.RunID, o.Repo, o.RepoURL, o.Lease, o.Clock)
	if err != nil {
		return RunRecord{}, err
	}
	rec.Submitted, rec.Human = true, o.Human
	data, err := json.Marshal(rec)
	if err != nil {
		return RunRecord{}, err
	}
	if _, err := b.Runs.Create(ctx, o.RunID, data); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return RunRecord{}, exitcode.Usagef("fleet run %s exists already on this NATS server", o.RunID)
		}
		return RunRecord{}, fmt.Errorf("remote: submitting: %w", err)
	}
	return rec, nil
}

// ServeOptions configure the hub's coordinator.
type ServeOptions struct {
	Bus *Bus
	// Prepare fills in a run's local side before it is coordinated: its
	// directory, audit log, progress and frames, and for a run a human
	// follows (rec.Human) who answers its asks. The returned func closes
	// them when the run ends, given its final state (nil: it did not run).
	Prepare func(rec RunRecord, o *CoordinatorOptions) (func(*fleet.State), error)
	Logger  *slog.Logger
}

// Serve coordinates every submitted run that has not finished, those
// submitted before it started (or before a restart) included, until ctx
// ends. A run it stops is adopted again by the next Serve on the bus, which
// continues it from JetStream's state.
func Serve(ctx context.Context, o ServeOptions) error {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	w, err := o.Bus.Runs.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("remote: watching runs: %w", err)
	}
	defer func() { _ = w.Stop() }()
	var mu sync.Mutex
	running := map[string]bool{}
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		var e jetstream.KeyValueEntry
		select {
		case <-ctx.Done():
			return nil
		case e = <-w.Updates():
		}
		if e == nil || e.Operation() != jetstream.KeyValuePut {
			continue
		}
		var rec RunRecord
		if json.Unmarshal(e.Value(), &rec) != nil || !rec.Submitted || !rec.Finished.IsZero() {
			continue
		}
		mu.Lock()
		if running[rec.Run] {
			mu.Unlock()
			continue
		}
		running[rec.Run] = true
		mu.Unlock()
		wg.Go(func() {
			defer func() { mu.Lock(); delete(running, rec.Run); mu.Unlock() }()
			log := o.Logger.With("run", rec.Run)
			co := CoordinatorOptions{Bus: o.Bus, RunID: rec.Run, Resume: true, Logger: log, Command: "tai hub --coordinate", KeepPauses: true}
			done := func(*fleet.State) {}
			if o.Prepare != nil {
				var err error
				if done, err = o.Prepare(rec, &co); err != nil {
					log.Error("preparing a submitted run", "err", err)
					return
				}
			}
			log.Info("coordinating a submitted run", "repo", rec.Repo)
			st, err := Coordinate(ctx, co)
			done(st)
			if err != nil {
				log.Error("coordinating", "err", err)
				if ctx.Err() == nil && exitcode.Of(err) == exitcode.Usage && !errors.Is(err, ErrBusy) {
					// It cannot be coordinated here (its repository is not
					// on this host, say): it ends, and whoever follows it
					// hears why.
					rec.Finished, rec.Status, rec.ExitCode = time.Now().UTC(), fleet.RunFailed, int(exitcode.Usage)
					if data, jerr := json.Marshal(rec); jerr == nil {
						_, _ = o.Bus.Runs.Put(context.WithoutCancel(ctx), rec.Run, data)
					}
					o.Bus.Event(ctx, EventMsg{Time: time.Now().UTC(), Run: rec.Run, Kind: string(fleet.EventRunEnd), Detail: "the hub could not coordinate it: " + err.Error()})
					_ = o.Bus.NC.Flush()
				}
				return
			}
			log.Info("run ended", "status", st.Status, "exit_code", st.ExitCode)
		})
	}
}

// LoadRun reads a run's record and its coordinator's last saved state
// from the bus.
func LoadRun(ctx context.Context, b *Bus, run string) (RunRecord, *fleet.State, error) {
	var rec RunRecord
	e, err := b.Runs.Get(ctx, run)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return rec, nil, exitcode.Usagef("no fleet run %s on this NATS server", run)
	}
	if err != nil {
		return rec, nil, fmt.Errorf("remote: %w", err)
	}
	if err := json.Unmarshal(e.Value(), &rec); err != nil {
		return rec, nil, fmt.Errorf("remote: run %s: %w", run, err)
	}
	se, err := b.State.Get(ctx, run)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return rec, nil, nil // submitted, not adopted yet
	}
	if err != nil {
		return rec, nil, fmt.Errorf("remote: %w", err)
	}
	var st fleet.State
	if err := json.Unmarshal(se.Value(), &st); err != nil {
		return rec, nil, fmt.Errorf("remote: run %s's state: %w", run, err)
	}
	return rec, &st, nil
}

// ListRuns reads every run's record on the bus.
func ListRuns(ctx context.Context, b *Bus) ([]RunRecord, error) {
	keys, err := b.Runs.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("remote: %w", err)
	}
	var out []RunRecord
	for k := range keys.Keys() {
		e, err := b.Runs.Get(ctx, k)
		if err != nil {
			continue
		}
		var rec RunRecord
		if json.Unmarshal(e.Value(), &rec) == nil {
			out = append(out, rec)
		}
	}
	return out, nil
}

// ErrStop, returned by an Events callback, ends the replay cleanly.
var ErrStop = errors.New("stop")

// Events replays a run's events from the first, then (follow) waits for
// more until ctx ends or fn returns ErrStop.
func Events(ctx context.Context, b *Bus, run string, follow bool, fn func(EventMsg) error) error {
	cons, err := b.Events.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{EventFilter(run)}})
	if err != nil {
		return fmt.Errorf("remote: reading run %s's events: %w", run, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return fmt.Errorf("remote: reading run %s's events: %w", run, err)
	}
	left := info.NumPending
	for follow || left > 0 {
		msg, err := next(ctx, cons)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if idle(err) {
				continue
			}
			return fmt.Errorf("remote: reading run %s's events: %w", run, err)
		}
		if left > 0 {
			left--
		}
		var ev EventMsg
		if json.Unmarshal(msg.Data(), &ev) != nil {
			continue
		}
		if err := fn(ev); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
	return nil
}
