package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	tea "charm.land/bubbletea/v2"
	"golang.org/x/term"

	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/feed"
	"github.com/tai-dev/tai/top"
)

// TopFlags are `tai top`'s flags.
type TopFlags struct {
	// Once prints one frame of the dashboard and exits (for scripts and
	// pipes).
	Once  bool
	Width int // --once's width; 0 = the terminal's, else 120
	// JSON makes --once print every live run's state (the feed's /state,
	// as cap.md's live feed section has it) as one JSON array.
	JSON bool
}

// Top runs `tai top`.
func Top(ctx context.Context, f TopFlags, std IO) error {
	color := !std.NoColor()
	src := top.FeedSource{Dir: feed.DefaultDir()}
	out, outFile := osFile(std.Out)
	outTTY := outFile && std.OutTTY()
	if f.JSON && !f.Once {
		return exitcode.Usagef("top: -o json needs --once")
	}
	if f.Once {
		runs, err := src.Runs(ctx)
		if err != nil {
			return fmt.Errorf("top: %w", err)
		}
		if f.JSON {
			if runs == nil {
				runs = []feed.State{}
			}
			enc := json.NewEncoder(std.Out)
			enc.SetIndent("", "  ")
			return enc.Encode(runs)
		}
		w := f.Width
		if w <= 0 {
			w = 120
			if outTTY {
				if c, _, err := term.GetSize(int(out.Fd())); err == nil && c > 0 {
					w = c
				}
			}
		}
		fmt.Fprintln(std.Out, top.Frame(runs, -1, time.Now(), w, 0, color && outTTY))
		return nil
	}
	in, inOK := std.In.(*os.File)
	if !inOK || !std.InTTY() || !outTTY {
		return exitcode.Usagef("top needs a terminal (tai top --once prints one frame)")
	}
	m := top.New(ctx, src, time.Now, color, time.Second)
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out))
	if _, err := p.Run(); err != nil {
		switch {
		case errors.Is(err, tea.ErrInterrupted):
			return exitcode.Said(exitcode.Interrupted)
		case errors.Is(err, tea.ErrProgramKilled) || ctx.Err() != nil:
		default:
			return fmt.Errorf("top: %w", err)
		}
	}
	return nil
}
