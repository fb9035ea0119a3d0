package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
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
	// Feed is a feed served on TCP (tai run --listen's http://ADDR) to
	// watch instead of this machine's; TokenFile holds its token.
	Feed      string
	TokenFile string
}

// feedAddr reads --feed: http://HOST:PORT, as tai run --listen prints it,
// or HOST:PORT.
func feedAddr(s string) (string, error) {
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "http" || u.Host == "" || u.Port() == "" || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.User != nil {
		return "", fmt.Errorf("--feed wants the address tai run --listen printed (http://HOST:PORT), not %q", s)
	}
	return u.Host, nil
}

// topSource is where tai top reads: --feed's TCP feed, else this
// machine's live feeds.
func topSource(f TopFlags) (top.FeedSource, error) {
	if f.Feed == "" {
		if f.TokenFile != "" {
			return top.FeedSource{}, exitcode.Usagef("--token-file goes with --feed")
		}
		return top.FeedSource{Dir: feed.DefaultDir()}, nil
	}
	addr, err := feedAddr(f.Feed)
	if err != nil {
		return top.FeedSource{}, exitcode.With(exitcode.Usage, err)
	}
	if f.TokenFile == "" {
		return top.FeedSource{}, exitcode.Usagef("--feed needs --token-file: a file holding the token tai run --listen printed")
	}
	b, err := os.ReadFile(f.TokenFile)
	if err != nil {
		return top.FeedSource{}, exitcode.With(exitcode.Usage, fmt.Errorf("--token-file: %w", err))
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" || strings.ContainsAny(tok, " \t\r\n") {
		return top.FeedSource{}, exitcode.Usagef("--token-file %s: want the one token tai run --listen printed, alone", f.TokenFile)
	}
	return top.FeedSource{Addr: addr, Token: tok}, nil
}

// Top runs `tai top`.
func Top(ctx context.Context, f TopFlags, std IO) error {
	color := !std.NoColor()
	src, err := topSource(f)
	if err != nil {
		return err
	}
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
		fmt.Fprintln(std.Out, top.Frame(runs, top.Opts{Sel: -1, Now: time.Now(), Width: w, Color: color && outTTY}))
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
