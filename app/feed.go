package app

import (
	"fmt"
	"log/slog"
	"net/url"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/feed"
	"github.com/tai-dev/tai/notify"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/redact"
)

// liveFeed is a run's feed and its notifications.
type liveFeed struct {
	srv    *feed.Server        // nil: no feed
	notify func(notify.Notice) // never nil
}

// openFeed opens the run's live feed and its notifications. A feed that
// cannot be opened is warned about, never fatal: the run matters more than
// watching it; only a --listen that cannot be served is an error.
func openFeed(run string, kind feed.Kind, ff FeedFlags, logger *slog.Logger, std IO) (liveFeed, func(), error) {
	stderr := std.Err
	lf := liveFeed{notify: func(notify.Notice) {}}
	var senders []notify.Sender
	if !ff.NoNotify {
		if std.ErrTTY() {
			senders = append(senders, notify.Terminal{W: stderr})
		}
		if std.Getenv("DISPLAY") != "" || std.Getenv("WAYLAND_DISPLAY") != "" {
			if d, ok := notify.FindDesktop(); ok {
				senders = append(senders, d)
			}
		}
	}
	if err := ff.check(); err != nil {
		return lf, func() {}, err
	}
	if ff.NotifyURL != "" {
		senders = append(senders, notify.Webhook{URL: ff.NotifyURL})
	}
	closeNotes := func() {}
	if len(senders) > 0 {
		n := notify.New(nil, 0, logger, senders...)
		lf.notify, closeNotes = n.Notify, n.Close
	}
	if ff.NoFeed {
		return lf, closeNotes, nil
	}
	onAsk := func(a feed.Ask) {
		lf.notify(notify.Notice{Kind: "ask", Run: run, Task: a.Task, Title: a.Request.ToolCall.Title, Since: a.Since})
	}
	onElicit := func(e feed.Elicitation) {
		lf.notify(notify.Notice{Kind: "elicitation", Run: run, Task: e.Task, Title: e.Request.Message, Since: e.Since})
	}
	srv, err := feed.Open(feed.Options{Run: run, Kind: kind, Logger: logger, OnAsk: onAsk, OnElicit: onElicit})
	if err != nil {
		if ff.Listen != "" {
			closeNotes()
			return lf, func() {}, fmt.Errorf("--listen: %w", err)
		}
		logger.Warn("no live feed for this run (tai top will not see it)", "err", err)
		return lf, closeNotes, nil
	}
	lf.srv = srv
	closeAll := func() {
		if err := srv.Close(); err != nil {
			logger.Warn("closing the live feed", "err", err)
		}
		closeNotes()
	}
	logger.Debug("live feed", "socket", srv.Path())
	if ff.Listen != "" {
		addr, tok, err := srv.Listen(ff.Listen)
		if err != nil {
			closeAll()
			return liveFeed{notify: func(notify.Notice) {}}, func() {}, err
		}
		fmt.Fprintf(stderr, "tai: live feed of %s on http://%s (Authorization: Bearer %s)\n", run, addr, tok)
	}
	return lf, closeAll, nil
}

// check refuses feed flags no run can mean.
func (ff FeedFlags) check() error {
	if ff.NotifyURL != "" {
		u, err := url.Parse(ff.NotifyURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--notify-url wants an http(s) URL, not %q", ff.NotifyURL)
		}
	}
	if ff.NoFeed && ff.Listen != "" {
		return fmt.Errorf("--listen needs the feed (drop --no-feed)")
	}
	return nil
}

// guardFeed makes the feed serve what the run's audit log would keep
// (redacted by red) and record there every request it refuses.
func guardFeed(srv *feed.Server, log *audit.Log, red *redact.Redactor) {
	if srv == nil {
		return
	}
	if red == nil {
		red = redact.Default()
	}
	srv.SetRedactor(red)
	if log != nil {
		srv.OnRefuse(func(r feed.Refusal) { _ = log.Append(audit.KindFeedRefused, "", r) })
	}
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
