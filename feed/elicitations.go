package feed

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/elicit"
	"github.com/tai-dev/tai/policy"
)

// Elicitation is an agent's request for input (a form to fill or a URL to
// visit) waiting for a human, as /state and the elicit frames show it.
type Elicitation struct {
	ID      string                    `json:"id"` // the feed's id: POST /elicitations/ID
	Task    string                    `json:"task,omitempty"`
	Session string                    `json:"session,omitempty"`
	Since   time.Time                 `json:"since"`
	Request driver.ElicitationRequest `json:"request"`
}

// ElicitationBody is POST /elicitations/ID's body.
type ElicitationBody struct {
	Action string `json:"action"` // accept | decline | cancel
	// Content is an accepted form's values by field name, checked against
	// the request's fields (defaults filled in).
	Content map[string]any `json:"content,omitempty"`
	Via     string         `json:"via,omitempty"` // dashboard (tai top), web (tai serve) or feed (default)
	// Client is the address of the person answering (AnswerBody.Client).
	Client string `json:"client,omitempty"`
}

// ElicitFrame is the elicit.opened frame: an elicitation waits.
type ElicitFrame struct {
	Type        string      `json:"type"` // elicit.opened
	Run         string      `json:"run"`
	Ts          time.Time   `json:"ts"`
	Elicitation Elicitation `json:"elicitation"`
}

// ElicitClosed is the elicit.closed frame: answered (action, via) or
// withdrawn (reason). The form's values are not in it: the session's
// elicitation.answered frame has them, secret fields redacted.
type ElicitClosed struct {
	Type   string    `json:"type"` // elicit.closed
	Run    string    `json:"run"`
	Ts     time.Time `json:"ts"`
	ID     string    `json:"id"`
	Task   string    `json:"task,omitempty"`
	Action string    `json:"action,omitempty"`
	Via    string    `json:"via,omitempty"`
	Reason string    `json:"reason,omitempty"`
}

// Elicitation frame types.
const (
	FrameElicitOpened = "elicit.opened"
	FrameElicitClosed = "elicit.closed"
)

type elicitReply struct {
	Action  driver.ElicitAction
	Content map[string]any
}

// Elicitor is the feed as one channel of an elicitation's race (see
// elicit.Race): the request waits in /state (and an elicit.opened frame)
// until a client answers it with POST /elicitations/ID, or another
// channel answers first. Its answers are a human's, with the client's via.
func (s *Server) Elicitor() elicit.FormChannel {
	return elicit.Channel(ask.ViaFeed, elicitor{s})
}

type elicitor struct{ s *Server }

func (e elicitor) Answer(ctx context.Context, req driver.ElicitationRequest) (driver.ElicitationAnswer, error) {
	s := e.s
	task := strings.TrimPrefix(policy.AskerOf(ctx), "task ")
	ent := s.elicits.open(func(id string, since time.Time) Elicitation {
		return Elicitation{ID: id, Task: task, Session: req.Session, Since: since, Request: req}
	}, func(el Elicitation) any {
		return ElicitFrame{Type: FrameElicitOpened, Run: s.o.Run, Ts: el.Since, Elicitation: el}
	})
	if s.o.OnElicit != nil {
		s.o.OnElicit(ent.item)
	}
	r, via, err := s.elicits.wait(ctx, ent)
	if err != nil {
		return driver.ElicitationAnswer{}, err
	}
	return driver.ElicitationAnswer{Action: r.Action, Content: r.Content, DecidedBy: elicit.ByHuman, Via: string(via),
		Reason: "answered via " + string(via)}, nil
}

func (s *Server) elicitClosed(el Elicitation, r *elicitReply, via ask.Via, reason string) any {
	c := ElicitClosed{Type: FrameElicitClosed, Run: s.o.Run, Ts: s.o.Clock.Now().UTC(), ID: el.ID, Task: el.Task, Via: string(via), Reason: reason}
	if r != nil {
		c.Action = string(r.Action)
	}
	return c
}

// answerElicitation is POST /elicitations/ID. An accepted form is checked
// against the request's fields here, so a client hears what is wrong and
// the elicitation stays pending.
func (s *Server) answerElicitation(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body ElicitationBody
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&body); err != nil {
		httpError(w, http.StatusBadRequest, `the body must be JSON: {"action":"accept|decline|cancel","content":{...}}: `+err.Error())
		return
	}
	action := driver.ElicitAction(strings.ToLower(strings.TrimSpace(body.Action)))
	switch action {
	case driver.ElicitAccept, driver.ElicitDecline, driver.ElicitCancel:
	default:
		httpError(w, http.StatusBadRequest, fmt.Sprintf("action %q: want accept, decline or cancel", body.Action))
		return
	}
	via, client, err := clientOf(body.Via, body.Client)
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	el, ok := s.elicits.get(id)
	if ok && action == driver.ElicitAccept && el.Request.Mode == driver.ElicitForm {
		content, err := elicit.Validate(el.Request, body.Content)
		if err != nil {
			s.mu.Unlock()
			httpError(w, http.StatusBadRequest, "the form is not valid: "+err.Error())
			return
		}
		body.Content = content
	} else {
		body.Content = nil // only an accepted form has values
	}
	el, ok = s.elicits.answer(w, id, elicitReply{Action: action, Content: body.Content}, via)
	s.mu.Unlock()
	if !ok {
		return
	}
	s.answered(Answered{Item: "elicitation", ID: id, Task: el.Task, Answer: string(action), Via: via, Client: client})
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"id": id, "action": string(action), "via": string(via)})
}
