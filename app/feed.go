package app

import (
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"syscall"

	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/feed"
	"github.com/tai-dev/tai/internal/readlimit"
	"github.com/tai-dev/tai/notify"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/redact"
	"github.com/tai-dev/tai/web"
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
		lf.notify(notify.Notice{Kind: "ask", Run: run, Task: a.Task, Title: a.Request.ToolCall.Title, Since: a.Since, Link: webLink(run, a.ID)})
	}
	onElicit := func(e feed.Elicitation) {
		lf.notify(notify.Notice{Kind: "elicitation", Run: run, Task: e.Task, Title: e.Request.Message, Since: e.Since, Link: webLink(run, e.ID)})
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
// (redacted by red) and record there every request it refuses, every
// answer given through it (by which channel, from which client) and a
// cancel, which calls cancel (nil: the feed cannot cancel this run).
func guardFeed(srv *feed.Server, log *audit.Log, red *redact.Redactor, cancel func()) {
	if srv == nil {
		return
	}
	if red == nil {
		red = redact.Default()
	}
	srv.SetRedactor(red)
	if log != nil {
		srv.OnRefuse(func(r feed.Refusal) { _ = log.Append(audit.KindFeedRefused, "", r) })
		srv.OnAnswer(func(a feed.Answered) { _ = log.AppendTask(audit.KindFeedAnswered, "", a.Task, a) })
	}
	if cancel == nil {
		return
	}
	srv.OnCancel(func(c feed.Cancel) {
		if log != nil {
			_ = log.Append(audit.KindFeedCancel, "", c)
		}
		cancel()
	})
}

// interruptSelf stops this tai as ctrl-c at its terminal would: a run
// stops its agents and ends as interrupted (a feed's cancel).
func interruptSelf() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
}

// withFeed makes the feed a channel of the terminal's asks: whichever
// answers first (here or in tai top) decides. Without a terminal the
// run's --non-interactive rule stands: nobody is known to be watching.
func withFeed(terminal policy.Prompter, srv *feed.Server) policy.Prompter {
	if terminal == nil || srv == nil {
		return terminal
	}
	return policy.Race(policy.Channel(ask.ViaTerminal, terminal), srv.Channel())
}

// webLink is the item id of run on tai serve's page, while one serves it
// (web.URLFile says where); "" otherwise.
func webLink(run, id string) string {
	b, err := readlimit.ReadRegularFile(web.URLFile(), 4096)
	base := strings.TrimSpace(string(b))
	if err != nil || (!strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://")) {
		return ""
	}
	return base + "/#" + web.ItemAnchor(run, id)
}
