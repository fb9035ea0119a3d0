// Package ask puts a request to a person: a permission, a form (an
// elicitation) or a question. One race serves the three kinds: the request
// goes to every channel that can answer it at once (the terminal, the live
// feed that tai top answers through, an editor under tai acp, a hub's
// follower, the cap-speak parent), the first answer wins, and the other
// channels are withdrawn, told who answered (AnsweredElsewhere), before the
// race returns.
package ask

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tai-dev/tai/internal/safetext"
)

// Kind is what is asked.
type Kind string

// The kinds of request.
const (
	KindPermission Kind = "permission" // may the agent do this? (policy)
	KindForm       Kind = "form"       // fill in these fields (an elicitation)
	KindQuestion   Kind = "question"   // a fleet task's question, in words
)

// Kinds lists every Kind.
func Kinds() []Kind { return []Kind{KindPermission, KindForm, KindQuestion} }

// Via is the channel an answer came by: a decision's and an elicitation
// answer's "via" in the audit log and the JSON result.
type Via string

// The channels.
const (
	ViaTerminal  Via = "terminal"  // the run's own terminal
	ViaDashboard Via = "dashboard" // tai top, through the live feed
	ViaFeed      Via = "feed"      // another client of the live feed
	ViaParent    Via = "parent"    // the cap-speak parent (decided_by answerer)
	ViaEditor    Via = "editor"    // the ACP client of tai acp
	ViaSubmitter Via = "submitter" // the terminal following a hub's run (tai fleet run --submit)
	ViaWeb       Via = "web"       // tai serve's page, through the live feed
)

// Vias lists every Via.
func Vias() []Via {
	return []Via{ViaTerminal, ViaDashboard, ViaFeed, ViaParent, ViaEditor, ViaSubmitter, ViaWeb}
}

// AnsweredElsewhere is the cancel cause a race gives the channels that
// lost: each says so ("answered via dashboard: allow once") instead of
// "cancelled", and a channel that shows the request elsewhere (the feed's
// closing frame, a hub's follower) passes the answer on.
type AnsweredElsewhere struct {
	Via    Via
	Word   string // the answer in words, "" when it is not shown (a question's text)
	Answer any    // the winner's answer, of the race's answer type
}

func (a *AnsweredElsewhere) Error() string {
	if a.Word == "" {
		return fmt.Sprintf("answered via %s", a.Via)
	}
	return fmt.Sprintf("answered via %s: %s", a.Via, a.Word)
}

// Elsewhere returns who answered, when ctx ended because another channel
// answered first.
func Elsewhere(ctx context.Context) (*AnsweredElsewhere, bool) {
	var a *AnsweredElsewhere
	if errors.As(context.Cause(ctx), &a) {
		return a, true
	}
	return nil, false
}

// Note is the one line a terminal channel shows when its request goes
// before it answered: "(answered via feed: accept)"; "(withdrawn: WHY)"
// when what withdrew it said why (its context's cause: "paused by hand
// (tai fleet pause)"); else "(cancelled)".
func Note(ctx context.Context) string {
	if a, ok := Elsewhere(ctx); ok {
		return "(" + a.Error() + ")"
	}
	if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) && !errors.Is(c, context.DeadlineExceeded) {
		return "(withdrawn: " + safetext.Line(c.Error()) + ")"
	}
	return "(cancelled)"
}

// ErrNoChannel is a race with no channel to ask on.
var ErrNoChannel = errors.New("no channel to ask on")

// Channel is one channel of a race over requests Q and answers A.
type Channel[Q, A any] struct {
	Via Via
	// Ask puts q to the channel until it answers or ctx ends (its cause an
	// *AnsweredElsewhere when another channel answered first). A channel
	// that relays several (the feed's clients) says which answered; ""
	// is Via.
	Ask func(ctx context.Context, q Q) (A, Via, error)
}

// Race puts one request to every channel at once. The first to answer
// decides; the others are withdrawn, with an *AnsweredElsewhere cause,
// before Ask returns. A channel that fails (a terminal at end of input, a
// channel that abstains) ends the race too, as it would alone: its error
// is the race's, and the others are withdrawn with it as the cause.
type Race[Q, A any] struct {
	Channels []Channel[Q, A]
	// Word names an answer for the channels that lost; nil: not shown.
	Word func(A) string
}

// Ask puts q to every channel and returns the first answer and its
// channel. When ctx ends first every channel is withdrawn with ctx's cause
// and Ask returns ctx's error. No channel outlives the request.
func (r Race[Q, A]) Ask(ctx context.Context, q Q) (A, Via, error) {
	var zero A
	if len(r.Channels) == 0 {
		return zero, "", ErrNoChannel
	}
	type result struct {
		a   A
		via Via
		err error
	}
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	results := make(chan result, len(r.Channels))
	var wg sync.WaitGroup
	for _, ch := range r.Channels {
		wg.Go(func() {
			a, via, err := ch.Ask(rctx, q)
			if via == "" {
				via = ch.Via
			}
			results <- result{a, via, err}
		})
	}
	var won result
	select {
	case won = <-results:
		if won.err == nil {
			e := &AnsweredElsewhere{Via: won.via, Answer: won.a}
			if r.Word != nil {
				e.Word = r.Word(won.a)
			}
			cancel(e)
		} else {
			cancel(fmt.Errorf("the %s channel gave no answer: %w", won.via, won.err))
		}
	case <-ctx.Done():
		cancel(context.Cause(ctx))
		won = result{zero, "", ctx.Err()}
	}
	wg.Wait()
	return won.a, won.via, won.err
}

// Question is a fleet task's question, in words, put to a person.
type Question struct {
	Task string // the task that asks
	Text string
}

// QuestionChannel is one channel of a question's race; the answer is the
// text.
type QuestionChannel = Channel[Question, string]

// AskQuestion puts q to every channel (see Race); the losers hear who
// answered, not what.
func AskQuestion(ctx context.Context, q Question, channels ...QuestionChannel) (string, Via, error) {
	return Race[Question, string]{Channels: channels}.Ask(ctx, q)
}
