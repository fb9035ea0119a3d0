package app

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/fleet"
)

// A fleet run's coordinator parks every account at SIGUSR1 (tai fleet
// pause) and releases every park at SIGUSR2 (tai fleet resume of a run
// that is running). Landlock's signal scope keeps the agents from
// sending them, where the kernel has it.
var handSignals = map[os.Signal]fleet.Hand{syscall.SIGUSR1: fleet.HandPause, syscall.SIGUSR2: fleet.HandResume}

// listenHands turns the signals into o.Hands; the returned func stops it.
// It is set before the run writes its pid, so a signal is never the
// default one (which ends the process).
func listenHands(o *fleet.Options) func() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGUSR2)
	hands := make(chan fleet.Hand, 4)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				select {
				case hands <- handSignals[s]:
				default: // one pending is enough
				}
			case <-done:
				return
			}
		}
	}()
	o.Hands = hands
	return func() { signal.Stop(sigs); close(done) }
}

// sendHand signals the run's running coordinator; false when none runs it.
func sendHand(run string, h fleet.Hand) (bool, error) {
	pid, ok := fleet.Coordinator(fleet.RunDir(run))
	if !ok {
		return false, nil
	}
	// The pid is the run's lock holder's, as it wrote it: a tai.
	self, _ := os.Executable()
	if exe, err := os.Readlink(filepath.Join("/proc", fmt.Sprint(pid), "exe")); err == nil && self != "" && exe != self {
		return false, fmt.Errorf("fleet run %s: pid %d is %s, not tai", run, pid, exe)
	}
	sig := syscall.SIGUSR1
	if h == fleet.HandResume {
		sig = syscall.SIGUSR2
	}
	if err := syscall.Kill(pid, sig); err != nil {
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
