package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/feed"
	"github.com/tai-dev/tai/fleet"
	"github.com/tai-dev/tai/internal/safetext"
	"github.com/tai-dev/tai/remote"
)

// handEntry is the one way a hand (a pause or a release by hand) reaches
// a fleet's engine, whichever way it came: the run's live feed (POST
// /pause, /release: tai fleet pause and resume on this host, tai serve's
// and tai hub --serve's page) or the hub's bus (tai fleet pause RUN --nats
// URL, from any host). The feed's guard refuses a sandboxed peer and a
// client without the user's secret, and the bus admits only a client with
// the hub's token or creds (under tai's state, which no agent can read),
// so an agent cannot pause or release its own fleet (a signal could, where
// Landlock has no signal scope). Each hand is recorded in the run's audit
// log with who asked, then passed to the fleet (fleet.Options.Hands).
type handEntry struct {
	log   *audit.Log
	hands chan fleet.Hand
}

func newHandEntry(log *audit.Log) *handEntry {
	return &handEntry{log: log, hands: make(chan fleet.Hand, 4)}
}

// apply records h and passes it on; it does not block.
func (e *handEntry) apply(h feed.Hand) {
	if e.log != nil {
		_ = e.log.Append(audit.KindFeedHand, "", h)
	}
	fh := fleet.HandPause
	if h.Action == feed.HandRelease {
		fh = fleet.HandResume
	}
	select {
	case e.hands <- fh:
	default: // four pending are enough: the next one decides the same
	}
}

// serveBus answers the hands sent to run on the bus (tai fleet pause RUN
// --nats URL) until the returned stop.
func (e *handEntry) serveBus(bus *remote.Bus, run string) (func(), error) {
	return remote.ServeHands(bus, run, func(m remote.HandMsg) error {
		action := feed.HandPause
		if m.Action == fleet.HandResume {
			action = feed.HandRelease
		}
		e.apply(feed.Hand{Action: action, Via: ask.ViaTerminal, Client: safetext.Line(m.Client)})
		return nil
	})
}

// feedHands makes the fleet's live feed an entry of its hands (handEntry).
// Without a feed (--no-feed) nothing parks by hand.
func feedHands(o *fleet.Options, srv *feed.Server, log *audit.Log) *handEntry {
	if srv == nil {
		return nil
	}
	e := newHandEntry(log)
	srv.OnHand(e.apply)
	o.Hands = e.hands
	return e
}

// handTimeout bounds a hand's request: the feed answers at once.
const handTimeout = 30 * time.Second

// sendHand pauses or releases the run's running coordinator through its
// live feed, via the terminal; false when no coordinator runs it.
func sendHand(run string, h fleet.Hand) (bool, error) {
	if _, ok := fleet.Coordinator(fleet.RunDir(run)); !ok {
		return false, nil
	}
	action := feed.HandPause
	if h == fleet.HandResume {
		action = feed.HandRelease
	}
	ctx, cancel := context.WithTimeout(context.Background(), handTimeout)
	defer cancel()
	c := feed.Dial(filepath.Join(feed.DefaultDir(), run+feed.SocketExt))
	defer c.Close()
	if err := c.Hand(ctx, action, string(ask.ViaTerminal)); err != nil {
		var se *feed.StatusError
		if !errors.As(err, &se) {
			return false, fmt.Errorf("fleet run %s: its live feed does not answer (a run with --no-feed is paused and released by no hand): %w", run, err)
		}
		return false, fmt.Errorf("fleet run %s: %w", run, err)
	}
	return true, nil
}

// busHand pauses or releases run through the NATS server n names: its
// coordinator (tai fleet run --nats, the hub's for a submitted run)
// answers; false when none runs it now.
func busHand(ctx context.Context, n NATSFlags, run string, h fleet.Hand, std IO) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, handTimeout)
	defer cancel()
	bus, closeBus, err := openBus(ctx, n, "tai fleet "+string(h)+" "+run, std)
	if err != nil {
		return false, err
	}
	defer closeBus()
	host, _ := os.Hostname()
	err = remote.SendHand(ctx, bus, run, remote.HandMsg{Action: h, Client: fmt.Sprintf("tai fleet %s on %s (pid %d) through %s", h, host, os.Getpid(), n.URL)})
	if errors.Is(err, remote.ErrNoCoordinator) {
		return false, nil
	}
	if err != nil {
		return false, exitcode.With(exitcode.Usage, fmt.Errorf("fleet run %s: %w", run, err))
	}
	return true, nil
}

func newCmdFleetPause(std IO) *cobra.Command {
	var n NATSFlags
	c := &cobra.Command{
		Use:   "pause RUN",
		Short: "Park a running fleet's tasks by hand (their sessions kept) until tai fleet resume RUN",
		Args:  oneArg("fleet pause", "the run to pause: tai fleet pause RUN (tai fleet list shows the runs)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return FleetPause(cmd.Context(), n, args[0], std)
		},
		Example: "  tai fleet pause fleet-20261201-104627-9f2c1a\n  tai fleet resume fleet-20261201-104627-9f2c1a\n" +
			"  tai fleet pause fleet-20261201-104627-9f2c1a --nats nats://hub:4222   # a run the hub coordinates",
	}
	n.addFlags(c.Flags(), "a run over NATS (one the hub coordinates, submitted with --submit): pause it through its coordinator there")
	c.ValidArgsFunction = completeFleetRuns
	return c
}

// FleetPause runs `tai fleet pause RUN`: through the run's live feed on
// this host, or with --nats through the bus to its coordinator.
func FleetPause(ctx context.Context, n NATSFlags, run string, std IO) error {
	var sent bool
	var err error
	if n.URL != "" {
		sent, err = busHand(ctx, n, run, fleet.HandPause, std)
	} else {
		sent, err = sendHand(run, fleet.HandPause)
	}
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	if !sent {
		if n.URL != "" {
			return exitcode.Usagef("fleet pause: no coordinator on %s runs fleet run %s now (tai fleet status %s --nats %s)", n.URL, run, run, n.URL)
		}
		return exitcode.Usagef("fleet pause: fleet run %s is not running (tai fleet status %s)", run, run)
	}
	fmt.Fprintf(std.Out, "fleet run %s: its tasks park at once; tai fleet resume %s releases them\n", run, run)
	return nil
}
