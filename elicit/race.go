package elicit

import (
	"context"
	"fmt"
	"sync"

	"github.com/tai-dev/tai/driver"
)

// Channel is one channel of a Race: an answerer and the name its answers
// are recorded by (policy's ViaTerminal, ViaFeed, ViaParent...).
type Channel struct {
	Via string
	A   Answerer
}

// AnsweredElsewhere is the cancel cause a Race gives the channels that
// lost, so they can say so ("answered via dashboard: accept").
type AnsweredElsewhere struct {
	Via    string
	Action driver.ElicitAction
}

func (a *AnsweredElsewhere) Error() string {
	return fmt.Sprintf("answered via %s: %s", a.Via, a.Action)
}

// Race puts one elicitation to every channel at once (the terminal's form
// and the live feed that tai top answers through): the first to answer
// decides, with its channel as the answer's Via, and the others are
// withdrawn before Answer returns. As with a link alone, a channel that
// abstains or fails ends the race: the chain then asks its next link.
type Race []Channel

// Answer implements Answerer.
func (r Race) Answer(ctx context.Context, req driver.ElicitationRequest) (driver.ElicitationAnswer, error) {
	if len(r) == 0 {
		return driver.ElicitationAnswer{}, ErrPass
	}
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	type result struct {
		ans driver.ElicitationAnswer
		err error
	}
	results := make(chan result, len(r))
	var wg sync.WaitGroup
	for _, ch := range r {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ans, err := ch.A.Answer(rctx, req)
			if ans.Via == "" {
				ans.Via = ch.Via
			}
			results <- result{ans, err}
		}()
	}
	var won result
	select {
	case won = <-results:
		if won.err == nil {
			cancel(&AnsweredElsewhere{Via: won.ans.Via, Action: won.ans.Action})
		} else {
			cancel(fmt.Errorf("the %s channel gave no answer: %w", won.ans.Via, won.err))
		}
	case <-ctx.Done():
		cancel(context.Cause(ctx))
		won = result{cancelled(ctx), nil}
	}
	wg.Wait() // no channel outlives its elicitation
	return won.ans, won.err
}

// withdrawn says at the terminal that another channel answered.
func withdrawn(ctx context.Context) (string, bool) {
	if a, ok := context.Cause(ctx).(*AnsweredElsewhere); ok {
		return a.Error(), true
	}
	return "", false
}
