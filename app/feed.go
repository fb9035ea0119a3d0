package app

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/tai-dev/tai/feed"
	"github.com/tai-dev/tai/policy"
)

// FeedFlags are the live feed's flags (tai run, tai fleet run).
type FeedFlags struct {
	// Listen also serves the feed on TCP at this address, behind a bearer
	// token printed on stderr.
	Listen string
	// NoFeed: no socket (nothing can watch or answer this run).
	NoFeed bool
}

// openFeed opens the run's live feed. A feed that cannot be opened is
// warned about, never fatal: the run matters more than watching it; only
// a --listen that cannot be served is an error.
func openFeed(run string, kind feed.Kind, ff FeedFlags, logger *slog.Logger, stderr io.Writer) (*feed.Server, func(), error) {
	if ff.NoFeed {
		if ff.Listen != "" {
			return nil, func() {}, fmt.Errorf("--listen needs the feed (drop --no-feed)")
		}
		return nil, func() {}, nil
	}
	srv, err := feed.Open(feed.Options{Run: run, Kind: kind, Logger: logger})
	if err != nil {
		if ff.Listen != "" {
			return nil, func() {}, fmt.Errorf("--listen: %w", err)
		}
		logger.Warn("no live feed for this run (tai top will not see it)", "err", err)
		return nil, func() {}, nil
	}
	closeFeed := func() {
		if err := srv.Close(); err != nil {
			logger.Warn("closing the live feed", "err", err)
		}
	}
	logger.Debug("live feed", "socket", srv.Path())
	if ff.Listen != "" {
		addr, tok, err := srv.Listen(ff.Listen)
		if err != nil {
			closeFeed()
			return nil, func() {}, err
		}
		fmt.Fprintf(stderr, "tai: live feed of %s on http://%s (Authorization: Bearer %s)\n", run, addr, tok)
	}
	return srv, closeFeed, nil
}

// withFeed makes the feed a channel of the terminal's asks: whichever
// answers first (here or in tai top) decides. Without a terminal the
// run's --non-interactive rule stands: nobody is known to be watching.
func withFeed(terminal policy.Prompter, srv *feed.Server) policy.Prompter {
	if terminal == nil || srv == nil {
		return terminal
	}
	return policy.Race{{Name: policy.ViaTerminal, Prompter: terminal}, srv.Channel()}
}
