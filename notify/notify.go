// Package notify tells a human that something started waiting for them (an
// ask, a question, a budget): the terminal bell and an OSC 9 notification,
// notify-send where it is installed, a webhook. Bursts are coalesced: the
// first notice goes at once, the ones that follow within the window go
// together when it ends.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"sync"
	"time"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/internal/safetext"
)

// Notice is one thing that waits.
type Notice struct {
	Kind  string    `json:"kind"` // ask | question | elicitation | budget | error
	Run   string    `json:"run"`
	Task  string    `json:"task,omitempty"`
	Title string    `json:"title"`
	Since time.Time `json:"since"`
	// Link is the item on tai serve's page, while one serves it (no token
	// in it: the browser's cookie holds that).
	Link string `json:"link,omitempty"`
}

// line is the notice as a person reads it: every part may be an agent's
// (a title, a task named after one), so each is escaped (safetext), and
// no control character reaches a terminal's OSC or a desktop's text.
func (n Notice) line() string {
	who := n.Run
	if n.Task != "" {
		who = "task " + n.Task
	}
	return safetext.Line(fmt.Sprintf("%s %s: %s", who, n.Kind, n.Title))
}

// Sender delivers a batch of notices.
type Sender interface {
	Send(ctx context.Context, batch []Notice) error
}

// Terminal rings the bell and sends an OSC 9 notification (shown by
// iTerm2, WezTerm, kitty, Windows Terminal, tmux with its passthrough).
type Terminal struct{ W io.Writer }

// Send implements Sender.
func (t Terminal) Send(_ context.Context, batch []Notice) error {
	// OSC 9 text may not hold control characters: summary has none.
	_, err := fmt.Fprintf(t.W, "\a\x1b]9;%s\x07", summary(batch))
	return err
}

// Desktop runs notify-send.
type Desktop struct{ Path string }

// FindDesktop returns notify-send if it is installed.
func FindDesktop() (Desktop, bool) {
	p, err := exec.LookPath("notify-send")
	return Desktop{Path: p}, err == nil
}

// Send implements Sender.
func (d Desktop) Send(ctx context.Context, batch []Notice) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	title := "tai: waiting for you"
	if out, err := exec.CommandContext(ctx, d.Path, "-a", "tai", title, summary(batch)).CombinedOutput(); err != nil {
		return fmt.Errorf("notify-send: %w: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// Webhook POSTs {"notices":[...]} as JSON.
type Webhook struct {
	URL    string
	Client *http.Client
}

// Send implements Sender.
func (w Webhook) Send(ctx context.Context, batch []Notice) error {
	b, err := json.Marshal(map[string]any{"notices": batch, "text": summary(batch)})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("--notify-url: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if l := batch[0].Link; l != "" {
		req.Header.Set("Click", l) // ntfy-style topics open it when the notification is tapped
	}
	c := w.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("--notify-url: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("--notify-url: %s answered %s", w.URL, resp.Status)
	}
	return nil
}

func summary(batch []Notice) string {
	if len(batch) == 1 {
		return batch[0].line()
	}
	return fmt.Sprintf("%d things wait for you: %s; …", len(batch), batch[0].line())
}

// Notifier coalesces notices and hands them to its senders, from one
// goroutine of its own: Notify never blocks the ask that calls it.
type Notifier struct {
	senders []Sender
	window  time.Duration
	clock   quartz.Clock
	log     *slog.Logger

	mu      sync.Mutex
	pending []Notice
	timer   *quartz.Timer // the open window; nil: none
	closed  bool
	batches chan []Notice
	done    chan struct{}
}

// New starts a notifier. window is the coalescing window (default 3s).
func New(clock quartz.Clock, window time.Duration, log *slog.Logger, senders ...Sender) *Notifier {
	if clock == nil {
		clock = quartz.NewReal()
	}
	if window <= 0 {
		window = 3 * time.Second
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	n := &Notifier{senders: senders, window: window, clock: clock, log: log, batches: make(chan []Notice, 16), done: make(chan struct{})}
	go n.loop()
	return n
}

func (n *Notifier) loop() {
	defer close(n.done)
	for b := range n.batches {
		for _, s := range n.senders {
			if err := s.Send(context.Background(), b); err != nil {
				n.log.Warn("notification not delivered", "err", err)
			}
		}
	}
}

// Notify says that something started waiting.
func (n *Notifier) Notify(no Notice) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	if n.timer != nil {
		n.pending = append(n.pending, no) // within the window: with the next batch
		return
	}
	n.send([]Notice{no})
	n.timer = n.clock.AfterFunc(n.window, n.flush, "notify")
}

// flush ends the window: what came during it goes as one batch, and
// opens the next window if it sent anything.
func (n *Notifier) flush() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.timer = nil
	if n.closed || len(n.pending) == 0 {
		return
	}
	n.send(n.pending)
	n.pending = nil
	n.timer = n.clock.AfterFunc(n.window, n.flush, "notify")
}

// send queues a batch; n.mu is held. A full queue drops it: notices are
// a courtesy, never a reason to stall a run.
func (n *Notifier) send(b []Notice) {
	select {
	case n.batches <- b:
	default:
		n.log.Warn("notifications dropped: the senders are behind", "notices", len(b))
	}
}

// Close sends what is pending and waits for the senders.
func (n *Notifier) Close() {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	if n.timer != nil {
		n.timer.Stop()
	}
	if len(n.pending) > 0 {
		n.send(n.pending)
		n.pending = nil
	}
	close(n.batches)
	n.mu.Unlock()
	<-n.done
}
