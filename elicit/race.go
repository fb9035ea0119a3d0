package elicit

import (
	"context"

	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/driver"
)

// FormChannel is one channel of an elicitation's race.
type FormChannel = ask.Channel[driver.ElicitationRequest, driver.ElicitationAnswer]

// Channel makes a a channel of an elicitation's race, named via (an
// answer that names its own Via, the feed's client, keeps it).
func Channel(via ask.Via, a Answerer) FormChannel {
	return FormChannel{Via: via, Ask: func(ctx context.Context, req driver.ElicitationRequest) (driver.ElicitationAnswer, ask.Via, error) {
		ans, err := a.Answer(ctx, req)
		return ans, ask.Via(ans.Via), err
	}}
}

// Race puts one elicitation to every channel at once (the terminal's form
// and the live feed that tai top answers through; see ask.Race): the
// first to answer decides, with its channel as the answer's Via, and the
// others are withdrawn (an *ask.AnsweredElsewhere whose Answer is the
// winner's driver.ElicitationAnswer). As with a link alone, a channel that
// abstains or fails ends the race: the chain then asks its next link.
func Race(channels ...FormChannel) Answerer { return raced(channels) }

type raced []FormChannel

func (r raced) Answer(ctx context.Context, req driver.ElicitationRequest) (driver.ElicitationAnswer, error) {
	if len(r) == 0 {
		return driver.ElicitationAnswer{}, ErrPass
	}
	ans, via, err := ask.Race[driver.ElicitationRequest, driver.ElicitationAnswer]{Channels: r,
		Word: func(a driver.ElicitationAnswer) string { return string(a.Action) }}.Ask(ctx, req)
	if err != nil && ctx.Err() != nil {
		return cancelled(ctx), nil
	}
	ans.Via = string(via)
	return ans, err
}
