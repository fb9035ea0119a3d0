package feed

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/internal/safetext"
)

// Answered is a human's answer given through the feed, as the run's audit
// log records it (OnAnswer): which item, the answer, the channel and, for
// tai serve's page, the browser's address.
type Answered struct {
	Item   string  `json:"item"` // ask, question, elicitation
	ID     string  `json:"id"`
	Task   string  `json:"task,omitempty"`
	Answer string  `json:"answer,omitempty"` // once|always|deny|never, accept|decline|cancel; a question's text is not repeated
	Via    ask.Via `json:"via"`
	Client string  `json:"client,omitempty"`
}

// Cancel is a human's request, through the feed, to stop the run (POST
// /cancel), as the run's audit log records it.
type Cancel struct {
	Via    ask.Via `json:"via"`
	Client string  `json:"client,omitempty"`
}

// CancelBody is POST /cancel's body.
type CancelBody struct {
	Via    string `json:"via,omitempty"`
	Client string `json:"client,omitempty"`
}

// OnAnswer sets what hears of every answer given through the feed (the
// run's audit log). It must not block.
func (s *Server) OnAnswer(fn func(Answered)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onAnswer = fn
}

// OnCancel sets what stops the run when a client POSTs /cancel (tai's
// own interrupt); without it the feed answers 501. It must not block.
func (s *Server) OnCancel(fn func(Cancel)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onCancel = fn
}

func (s *Server) answered(a Answered) {
	s.mu.Lock()
	fn := s.onAnswer
	s.mu.Unlock()
	if fn != nil {
		fn(a)
	}
}

// maxClient bounds the client address a body may name.
const maxClient = 256

// clientOf checks a body's via and client: the channel a client says it is
// ("" = feed) and the address of the person behind it (tai serve's
// browser), kept to one short line since it goes into the audit log.
func clientOf(via, client string) (ask.Via, string, error) {
	v, ok := clientVia(via)
	if !ok {
		return "", "", fmt.Errorf("via %q: want dashboard, web or feed", via)
	}
	if len(client) > maxClient || safetext.Line(client) != client || strings.ContainsAny(client, "\n\r") {
		return "", "", fmt.Errorf("client %q: want an address (host:port)", client)
	}
	return v, client, nil
}

// clientVia is the channel a client says it is ("" = feed).
func clientVia(v string) (ask.Via, bool) {
	switch via := ask.Via(v); via {
	case "":
		return ask.ViaFeed, true
	case ask.ViaFeed, ask.ViaDashboard, ask.ViaWeb:
		return via, true
	}
	return "", false
}

// cancel is POST /cancel: the run stops as on an interrupt at its
// terminal.
func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	var body CancelBody
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&body); err != nil {
		httpError(w, http.StatusBadRequest, `the body must be JSON: {"via":"web"}: `+err.Error())
		return
	}
	via, client, err := clientOf(body.Via, body.Client)
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	fn := s.onCancel
	s.mu.Unlock()
	if fn == nil {
		httpError(w, http.StatusNotImplemented, "this run cannot be cancelled through its feed")
		return
	}
	fn(Cancel{Via: via, Client: client})
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"cancelled": s.o.Run, "via": string(via)})
}
