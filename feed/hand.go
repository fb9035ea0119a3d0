package feed

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/tai-dev/tai/ask"
)

// HandAction is what a human does to a fleet by hand: park every account
// (tai fleet pause) or release every park (tai fleet resume of a running
// run).
type HandAction string

// Hand actions, the feed's POST /pause and POST /release.
const (
	HandPause   HandAction = "pause"
	HandRelease HandAction = "release"
)

// Hand is a human's pause or release of a fleet through the feed, as the
// run's audit log records it: by which channel (terminal for the CLI, web
// for tai serve's page) and, for the page, the browser's address. It goes
// through the feed, not a signal, so the feed's guard (peer outside every
// sandbox, the user's secret) decides who may: an agent cannot pause or
// release its own fleet, whatever the kernel's Landlock has.
type Hand struct {
	Action HandAction `json:"action"`
	Via    ask.Via    `json:"via"`
	Client string     `json:"client,omitempty"`
}

// OnHand sets what parks or releases the fleet when a client POSTs /pause
// or /release; without it (a single run, a hub's) the feed answers 501.
// It must not block.
func (s *Server) OnHand(fn func(Hand)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onHand = fn
}

// handVia is the channel a hand's client says it is: the CLI's terminal
// too, besides the feed's own channels.
func handVia(via, client string) (ask.Via, string, error) {
	if ask.Via(via) == ask.ViaTerminal {
		_, c, err := clientOf("", client)
		return ask.ViaTerminal, c, err
	}
	return clientOf(via, client)
}

// hand is POST /pause and POST /release (body CancelBody's).
func (s *Server) hand(action HandAction) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body CancelBody
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&body); err != nil {
			httpError(w, http.StatusBadRequest, `the body must be JSON: {"via":"terminal"}: `+err.Error())
			return
		}
		via, client, err := handVia(body.Via, body.Client)
		if err != nil {
			httpError(w, http.StatusBadRequest, err.Error())
			return
		}
		s.mu.Lock()
		fn := s.onHand
		s.mu.Unlock()
		if fn == nil {
			httpError(w, http.StatusNotImplemented, "this run is not a local fleet's: nothing in it parks by hand")
			return
		}
		fn(Hand{Action: action, Via: via, Client: client})
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{string(action): s.o.Run, "via": string(via)})
	}
}

// Hand pauses (HandPause) or releases (HandRelease) the fleet by hand,
// via the client's channel (terminal, web, dashboard or feed).
func (c *Client) Hand(ctx context.Context, action HandAction, via string) error {
	b, _ := json.Marshal(CancelBody{Via: via, Client: c.From})
	resp, err := c.do(ctx, http.MethodPost, "/"+string(action), bytes.NewReader(b), map[string]string{"Content-Type": "application/json"})
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}
