package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/tai-dev/tai/fleet"
)

// HandMsg is a pause or a release by hand of a run a coordinator on the
// bus runs (tai fleet pause/resume RUN --nats URL): a request on the run's
// hand subject, answered by its coordinator. Only a client the server
// admits (the hub's token or creds, which no sandboxed agent can read)
// can send one; Client says who, for the run's audit log.
type HandMsg struct {
	Action fleet.Hand `json:"action"`
	Client string     `json:"client,omitempty"`
}

// handReply is the coordinator's answer to a HandMsg.
type handReply struct {
	Error string `json:"error,omitempty"`
}

// ErrNoCoordinator: nothing on the bus coordinates the run now.
var ErrNoCoordinator = errors.New("no coordinator on the bus runs it now")

func handSubject(run string) string { return "tai.hand." + token(run) }

// SendHand asks the coordinator of run to apply m; ErrNoCoordinator when
// none answers.
func SendHand(ctx context.Context, b *Bus, run string, m HandMsg) error {
	if m.Action != fleet.HandPause && m.Action != fleet.HandResume {
		return fmt.Errorf("remote: hand %q: want pause or resume", m.Action)
	}
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	msg, err := b.NC.RequestWithContext(ctx, handSubject(run), data)
	if errors.Is(err, nats.ErrNoResponders) {
		return ErrNoCoordinator
	}
	if err != nil {
		return fmt.Errorf("remote: %s of run %s: %w", m.Action, run, err)
	}
	var r handReply
	if err := json.Unmarshal(msg.Data, &r); err != nil {
		return fmt.Errorf("remote: %s of run %s: the coordinator's answer: %w", m.Action, run, err)
	}
	if r.Error != "" {
		return fmt.Errorf("remote: %s of run %s: %s", m.Action, run, r.Error)
	}
	return nil
}

// ServeHands answers the hands sent to run with apply (which must not
// block) until the returned stop.
func ServeHands(b *Bus, run string, apply func(HandMsg) error) (stop func(), err error) {
	sub, err := b.NC.Subscribe(handSubject(run), func(msg *nats.Msg) {
		var m HandMsg
		var r handReply
		switch err := json.Unmarshal(msg.Data, &m); {
		case err != nil:
			r.Error = "the hand does not parse: " + err.Error()
		case m.Action != fleet.HandPause && m.Action != fleet.HandResume:
			r.Error = fmt.Sprintf("hand %q: want pause or resume", m.Action)
		default:
			if err := apply(m); err != nil {
				r.Error = err.Error()
			}
		}
		data, _ := json.Marshal(r)
		_ = msg.Respond(data)
	})
	if err != nil {
		return nil, fmt.Errorf("remote: serving the hands of run %s: %w", run, err)
	}
	// The subscription is on the server before anyone is told the run
	// is coordinated.
	if err := b.NC.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("remote: serving the hands of run %s: %w", run, err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}
