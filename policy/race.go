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
	switch len(r) {
	case 0:
		return DenyOnce, "", errors.New("no channel to ask on")
	case 1:
		return r[0].AskVia(ctx, req)
	}
	rctx, cancel := context.WithCancelCause(ctx)
	type result struct {
		a   Answer
		via string
		err error
	}
	results := make(chan result, len(r))
	var wg sync.WaitGroup
	for _, ch := range r {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var res result
			if vp, ok := ch.Prompter.(ViaPrompter); ok {
				res.a, res.via, res.err = vp.AskVia(rctx, req)
			} else {
				res.a, res.err = ch.Ask(rctx, req)
			}
			if res.via == "" {
				res.via = ch.Name
			}
			results <- res
		}()
	}
	var won result
	select {
	case won = <-results:
		if won.err == nil {
			cancel(&AnsweredElsewhere{Via: won.via, Answer: won.a})
		} else {
			cancel(fmt.Errorf("the %s channel failed: %w", won.via, won.err))
		}
	case <-ctx.Done():
		cancel(context.Cause(ctx))
		won = result{DenyOnce, "", ctx.Err()}
	}
	wg.Wait() // no channel outlives its question
	return won.a, won.via, won.err
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
