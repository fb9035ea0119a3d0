package ask

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
)

// person is a channel the test answers through: it reports being asked,
// answers what is sent, and reports how its request ended.
type person struct {
	via     Via
	asked   chan struct{}
	answer  chan string
	err     error
	ended   chan error // the cause it saw when withdrawn
	running *atomic.Int32
}

func newPerson(via Via, running *atomic.Int32) *person {
	return &person{via: via, asked: make(chan struct{}, 1), answer: make(chan string), ended: make(chan error, 1), running: running}
}

func (p *person) channel() Channel[string, string] {
	return Channel[string, string]{Via: p.via, Ask: func(ctx context.Context, q string) (string, Via, error) {
		p.running.Add(1)
		defer p.running.Add(-1)
		p.asked <- struct{}{}
		if p.err != nil {
			return "", "", p.err
		}
		select {
		case a := <-p.answer:
			return a, "", nil
		case <-ctx.Done():
			p.ended <- context.Cause(ctx)
			return "", "", ctx.Err()
		}
	}}
}

func race(ps ...*person) Race[string, string] {
	r := Race[string, string]{Word: func(a string) string { return "«" + a + "»" }}
	for _, p := range ps {
		r.Channels = append(r.Channels, p.channel())
	}
	return r
}

// The first answer wins, whichever channel gives it; every other channel
// is withdrawn, told who answered and what, and none is still running
// when the race returns.
func TestRaceFirstAnswerWins(t *testing.T) {
	for _, tc := range []struct {
		name   string
		winner int
	}{
		{"terminal first", 0},
		{"dashboard first", 1},
		{"hub follower first", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var running atomic.Int32
			ps := []*person{newPerson(ViaTerminal, &running), newPerson(ViaDashboard, &running), newPerson(ViaSubmitter, &running)}
			type result struct {
				a   string
				via Via
				err error
			}
			done := make(chan result, 1)
			go func() {
				a, via, err := race(ps...).Ask(context.Background(), "MIT or Apache?")
				done <- result{a, via, err}
			}()
			for _, p := range ps {
				<-p.asked
			}
			ps[tc.winner].answer <- "MIT"
			r := <-done
			if r.err != nil || r.a != "MIT" || r.via != ps[tc.winner].via {
				t.Fatalf("got %q via %q, %v; want MIT via %s", r.a, r.via, r.err, ps[tc.winner].via)
			}
			if n := running.Load(); n != 0 {
				t.Fatalf("%d channels still running after the race", n)
			}
			for i, p := range ps {
				if i == tc.winner {
					continue
				}
				var e *AnsweredElsewhere
				if cause := <-p.ended; !errors.As(cause, &e) || e.Via != ps[tc.winner].via || e.Answer != "MIT" ||
					e.Error() != "answered via "+string(ps[tc.winner].via)+": «MIT»" {
					t.Fatalf("channel %s saw %v, want answered via %s", p.via, cause, ps[tc.winner].via)
				}
			}
		})
	}
}

// A channel that fails ends the race with its error, as it would alone;
// the others are withdrawn, not told of an answer.
func TestRaceFailingChannelEndsIt(t *testing.T) {
	var running atomic.Int32
	term, dash := newPerson(ViaTerminal, &running), newPerson(ViaDashboard, &running)
	term.err = io.EOF
	_, via, err := race(term, dash).Ask(context.Background(), "q")
	if !errors.Is(err, io.EOF) || via != ViaTerminal {
		t.Fatalf("got via %q, %v; want the terminal's EOF", via, err)
	}
	if cause := <-dash.ended; cause == nil || errors.As(cause, new(*AnsweredElsewhere)) || !errors.Is(cause, io.EOF) {
		t.Fatalf("the dashboard saw %v, want the terminal's failure", cause)
	}
	if n := running.Load(); n != 0 {
		t.Fatalf("%d channels still running after the race", n)
	}
}

// A request whose context ends (the turn was cancelled, the task
// stopped) is withdrawn everywhere with that cause, and nothing is left
// running.
func TestRaceCancelledWithdrawsEverywhere(t *testing.T) {
	var running atomic.Int32
	ps := []*person{newPerson(ViaTerminal, &running), newPerson(ViaFeed, &running), newPerson(ViaParent, &running)}
	stopped := errors.New("task stopped")
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := race(ps...).Ask(ctx, "q")
		done <- err
	}()
	for _, p := range ps {
		<-p.asked
	}
	cancel(stopped)
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want cancelled", err)
	}
	for _, p := range ps {
		if cause := <-p.ended; !errors.Is(cause, stopped) {
			t.Fatalf("channel %s saw %v, want %v", p.via, cause, stopped)
		}
	}
	if n := running.Load(); n != 0 {
		t.Fatalf("%d channels still running after the race", n)
	}
}

func TestRaceNoChannel(t *testing.T) {
	if _, _, err := (Race[string, string]{}).Ask(context.Background(), "q"); !errors.Is(err, ErrNoChannel) {
		t.Fatalf("got %v, want ErrNoChannel", err)
	}
}

// A channel that relays several (the feed's clients) names the one that
// answered; else the answer is the channel's.
func TestRaceViaOfTheAnswer(t *testing.T) {
	feed := Channel[string, string]{Via: ViaFeed, Ask: func(context.Context, string) (string, Via, error) { return "ok", ViaDashboard, nil }}
	if _, via, err := (Race[string, string]{Channels: []Channel[string, string]{feed}}).Ask(context.Background(), "q"); err != nil || via != ViaDashboard {
		t.Fatalf("via %q, %v; want dashboard", via, err)
	}
}

// The one display of a withdrawn request at a terminal.
func TestNote(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&AnsweredElsewhere{Via: ViaDashboard, Word: "allow once"})
	if got := Note(ctx); got != "(answered via dashboard: allow once)" {
		t.Fatalf("note %q", got)
	}
	ctx, cancel = context.WithCancelCause(context.Background())
	cancel(&AnsweredElsewhere{Via: ViaFeed})
	if got := Note(ctx); got != "(answered via feed)" {
		t.Fatalf("note %q", got)
	}
	ctx, cancel = context.WithCancelCause(context.Background())
	cancel(nil)
	if got := Note(ctx); got != "(cancelled)" {
		t.Fatalf("note %q", got)
	}
	// What withdrew it said why (a fleet's park).
	ctx, cancel = context.WithCancelCause(context.Background())
	cancel(errors.New("paused by hand (tai fleet pause)"))
	if got := Note(ctx); got != "(withdrawn: paused by hand (tai fleet pause))" {
		t.Fatalf("note %q", got)
	}
}
