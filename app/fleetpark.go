package app

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/feed"
	"github.com/tai-dev/tai/fleet"
)

// feedHands makes the fleet's live feed the one way to pause or release
// it by hand (POST /pause, /release: tai fleet pause and resume, tai
// serve's page): the feed's guard refuses a sandboxed peer and a client
// without the user's secret, so an agent cannot pause or release its own
// fleet (a signal could, where Landlock has no signal scope). Each hand is
// recorded in the audit log with who asked. Without a feed (--no-feed)
// nothing parks by hand.
func feedHands(o *fleet.Options, srv *feed.Server, log *audit.Log) {
	if srv == nil {
		return
	}
	hands := make(chan fleet.Hand, 4)
	srv.OnHand(func(h feed.Hand) {
		if log != nil {
			_ = log.Append(audit.KindFeedHand, "", h)
		}
		fh := fleet.HandPause
		if h.Action == feed.HandRelease {
			fh = fleet.HandResume
		}
		select {
		case hands <- fh:
		default: // four pending are enough: the next one decides the same
		}
	})
	o.Hands = hands
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

func newCmdFleetPause(std IO) *cobra.Command {
	c := &cobra.Command{
		Use:   "pause RUN",
		Short: "Park a running fleet's tasks by hand (their sessions kept) until tai fleet resume RUN",
		Args:  oneArg("fleet pause", "the run to pause: tai fleet pause RUN (tai fleet list shows the runs)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return FleetPause(cmd.Context(), args[0], std)
		},
		Example: "  tai fleet pause fleet-20261201-104627-9f2c1a\n  tai fleet resume fleet-20261201-104627-9f2c1a",
	}
	c.ValidArgsFunction = completeFleetRuns
	return c
}

// FleetPause runs `tai fleet pause RUN`.
func FleetPause(_ context.Context, run string, std IO) error {
	sent, err := sendHand(run, fleet.HandPause)
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	if !sent {
		return exitcode.Usagef("fleet pause: fleet run %s is not running (tai fleet status %s)", run, run)
	}
	fmt.Fprintf(std.Out, "fleet run %s: its tasks park at once; tai fleet resume %s releases them\n", run, run)
	return nil
}
