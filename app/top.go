package app

import (
	"context"
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
}

// Top runs `tai top`.
func Top(ctx context.Context, f TopFlags, std IO) int {
	color := os.Getenv("NO_COLOR") == ""
	src := top.FeedSource{Dir: feed.DefaultDir()}
	out, outTTY := osFile(std.Out)
	outTTY = outTTY && isTTY(out)
	if f.Once {
		runs, err := src.Runs(ctx)
		if err != nil {
			return fail(std, err)
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
		return 0
	}
	in, inOK := std.In.(*os.File)
	if !inOK || !isTTY(in) || !outTTY {
		return fail(std, exitcode.Usagef("tai top needs a terminal (tai top --once prints one frame)"))
	}
	m := top.New(ctx, src, time.Now, color, time.Second)
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out))
	if _, err := p.Run(); err != nil {
		switch {
		case errors.Is(err, tea.ErrInterrupted):
			return int(exitcode.Interrupted)
		case errors.Is(err, tea.ErrProgramKilled) || ctx.Err() != nil:
		default:
			return fail(std, fmt.Errorf("tai top: %w", err))
		}
	}
	return 0
}
