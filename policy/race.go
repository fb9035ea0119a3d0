package policy

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tai-dev/tai/driver"
)

// Channel names: where a human's answer came from. They are recorded as the
// decision's "via" with decided_by "human".
const (
	ViaTerminal  = "terminal"  // the run's own terminal
	ViaDashboard = "dashboard" // tai top, through the live feed
	ViaFeed      = "feed"      // another client of the live feed
	ViaParent    = "parent"    // the cap-speak parent (decided_by answerer)
	ViaEditor    = "editor"    // the ACP client of tai acp
	ViaWeb       = "web"       // tai serve's page, through the live feed
)

// ViaPrompter is a Prompter that also says by which channel the human
// answered (a Race of several). The engine records it.
type ViaPrompter interface {
	AskVia(ctx context.Context, req driver.PermissionRequest) (Answer, string, error)
}

// Named is one channel of a Race.
type Named struct {
	Name string
	Prompter
}

// AskVia asks the one channel.
func (n Named) AskVia(ctx context.Context, req driver.PermissionRequest) (Answer, string, error) {
	a, err := n.Ask(ctx, req)
	return a, n.Name, err
}

// AnsweredElsewhere is the cancel cause a Race gives the channels that lost:
// they can say so ("answered via dashboard") instead of "cancelled".
type AnsweredElsewhere struct {
	Via    string
	Answer Answer
}

func (a *AnsweredElsewhere) Error() string {
	return fmt.Sprintf("answered via %s: %s", a.Via, answerWord(a.Answer))
}

// Race puts one question to every channel at once (the terminal, the live
// feed that tai top answers through): the first to answer decides, and the
// others are withdrawn, with an AnsweredElsewhere cause, before Ask
// returns. A channel that fails (the terminal hit end of input) ends the
// race too, as it did alone: its error is the answer.
type Race []Named

// Ask implements Prompter.
func (r Race) Ask(ctx context.Context, req driver.PermissionRequest) (Answer, error) {
	a, _, err := r.AskVia(ctx, req)
	return a, err
}

// AskVia implements ViaPrompter.
func (r Race) AskVia(ctx context.Context, req driver.PermissionRequest) (Answer, string, error) {
	res := r.race(ctx, req)
	return res.a, res.via, res.err
}

// raced is a Race's answer: by which channel, where that is (its Where,
// for the decision's reason), and, when the channel relayed another tai's
// decision (an editor that is a tai), whose.
type raced struct {
	a     Answer
	via   string
	where string
	rel   *Relayed
	err   error
}

func (r Race) race(ctx context.Context, req driver.PermissionRequest) raced {
	ask := func(ctx context.Context, ch Named) raced {
		var res raced
		switch p := ch.Prompter.(type) {
		case RelayingPrompter:
			res.a, res.rel, res.err = p.AskRelayed(ctx, req)
		case ViaPrompter:
			res.a, res.via, res.err = p.AskVia(ctx, req)
		default:
			res.a, res.err = ch.Ask(ctx, req)
		}
		if res.via == "" {
			res.via = ch.Name
		}
		if w, ok := ch.Prompter.(interface{ Where() string }); ok {
			res.where = w.Where()
		}
		return res
	}
	switch len(r) {
	case 0:
		return raced{a: DenyOnce, err: errors.New("no channel to ask on")}
	case 1:
		return ask(ctx, r[0])
	}
	rctx, cancel := context.WithCancelCause(ctx)
	results := make(chan raced, len(r))
	var wg sync.WaitGroup
	for _, ch := range r {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- ask(rctx, ch)
		}()
	}
	var won raced
	select {
	case won = <-results:
		var refusal *Refusal
		switch {
		case won.err == nil:
			cancel(&AnsweredElsewhere{Via: won.via, Answer: won.a})
		case errors.As(won.err, &refusal):
			// A refusal given as an error is an answer too: a deny.
			cancel(&AnsweredElsewhere{Via: won.via, Answer: DenyOnce})
		default:
			cancel(fmt.Errorf("the %s channel failed: %w", won.via, won.err))
		}
	case <-ctx.Done():
		cancel(context.Cause(ctx))
		won = raced{a: DenyOnce, err: ctx.Err()}
	}
	wg.Wait() // no channel outlives its question
	return won
}

// askInfoKey carries why a question is asked to the channels.
type askInfoKey struct{}

// AskInfo is what a channel may show besides the request: who decides if
// nobody answers and why it was asked.
type AskInfo struct {
	By  string // the rule or mode that asks ("default", "rule:<id>")
	Why string
}

func withAskInfo(ctx context.Context, i AskInfo) context.Context {
	return context.WithValue(ctx, askInfoKey{}, i)
}

// AskInfoOf returns why the question in ctx is asked.
func AskInfoOf(ctx context.Context) AskInfo {
	i, _ := ctx.Value(askInfoKey{}).(AskInfo)
	return i
}

// AskerOf returns who the question in ctx is for (a fleet's "task lint").
func AskerOf(ctx context.Context) string { return askerOf(ctx) }
