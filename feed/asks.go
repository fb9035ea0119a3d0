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
	"github.com/tai-dev/tai/policy"
)

// Ask is a question waiting for a human, as /state and the ask frames show
// it.
type Ask struct {
	ID      string                   `json:"id"` // the feed's id: POST /asks/ID
	Task    string                   `json:"task,omitempty"`
	Session string                   `json:"session,omitempty"`
	Since   time.Time                `json:"since"`
	Request driver.PermissionRequest `json:"request"`
	// DecidedBy and Why: the rule or mode that asks, and why: what decides
	// if nobody answers.
	DecidedBy string `json:"decided_by,omitempty"`
	Why       string `json:"why,omitempty"`
}

// Answers a client may POST.
const (
	AnswerOnce   = "once"   // allow once
	AnswerAlways = "always" // allow, and remember it for the run (a fleet's run: every task)
	AnswerDeny   = "deny"   // deny once
	AnswerNever  = "never"  // deny, and remember it
)

// AnswerBody is POST /asks/ID's body.
type AnswerBody struct {
	Answer string `json:"answer"`        // once | always | deny | never
	Via    string `json:"via,omitempty"` // dashboard (tai top), web (tai serve) or feed (default)
	// Client is the address of the person answering (tai serve's browser),
	// for the run's audit log.
	Client string `json:"client,omitempty"`
}

// AskFrame is the ask.opened frame: a question is waiting.
type AskFrame struct {
	Type string    `json:"type"` // ask.opened
	Run  string    `json:"run"`
	Ts   time.Time `json:"ts"`
	Ask  Ask       `json:"ask"`
}

// AskClosed is the ask.closed frame: the question was answered (here or
// by another channel) or withdrawn.
type AskClosed struct {
	Type   string    `json:"type"` // ask.closed
	Run    string    `json:"run"`
	Ts     time.Time `json:"ts"`
	ID     string    `json:"id"`
	Task   string    `json:"task,omitempty"`
	Answer string    `json:"answer,omitempty"` // once | always | deny | never; "" when withdrawn
	Via    string    `json:"via,omitempty"`    // the channel that answered
	Reason string    `json:"reason,omitempty"` // why it was withdrawn
}

// Frame types of the feed's own.
const (
	FrameAskOpened = "ask.opened"
	FrameAskClosed = "ask.closed"
)

func parseAnswer(s string) (policy.Answer, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case AnswerOnce, "y", "yes", "allow":
		return policy.AllowOnce, true
	case AnswerAlways, "a":
		return policy.AllowAlways, true
	case AnswerDeny, "n", "no":
		return policy.DenyOnce, true
	case AnswerNever, "d":
		return policy.DenyAlways, true
	}
	return 0, false
}

func answerName(a policy.Answer) string {
	switch a {
	case policy.AllowOnce:
		return AnswerOnce
	case policy.AllowAlways:
		return AnswerAlways
	case policy.DenyAlways:
		return AnswerNever
	}
	return AnswerDeny
}

// Channel is the feed as one channel of the policy's ask race: a question
// put to it waits in /state (and an ask.opened frame) until a client
// answers it with POST /asks/ID, or another channel answers first.
func (s *Server) Channel() policy.PermissionChannel {
	return policy.Channel(ask.ViaFeed, channel{s})
}

type channel struct{ s *Server }

func (c channel) Ask(ctx context.Context, req driver.PermissionRequest) (policy.Answer, error) {
	a, _, err := c.AskVia(ctx, req)
	return a, err
}

// AskVia implements policy.ViaPrompter: the via is the client's.
func (c channel) AskVia(ctx context.Context, req driver.PermissionRequest) (policy.Answer, ask.Via, error) {
	s := c.s
	info := policy.AskInfoOf(ctx)
	task := strings.TrimPrefix(policy.AskerOf(ctx), "task ")
	e := s.asks.open(func(id string, since time.Time) Ask {
		return Ask{ID: id, Task: task, Session: req.Session, Since: since, Request: req, DecidedBy: info.By, Why: info.Why}
	}, func(a Ask) any { return AskFrame{Type: FrameAskOpened, Run: s.o.Run, Ts: a.Since, Ask: a} })
	if s.o.OnAsk != nil {
		s.o.OnAsk(e.item)
	}
	a, via, err := s.asks.wait(ctx, e)
	if err != nil {
		return policy.DenyOnce, via, err
	}
	return a, via, nil
}

// askClosed is the ask.closed frame of an answer or a withdrawal.
func (s *Server) askClosed(a Ask, ans *policy.Answer, via ask.Via, reason string) any {
	c := AskClosed{Type: FrameAskClosed, Run: s.o.Run, Ts: s.o.Clock.Now().UTC(), ID: a.ID, Task: a.Task, Via: string(via), Reason: reason}
	if ans != nil {
		c.Answer = answerName(*ans)
	}
	return c
}

// answer is POST /asks/ID.
func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body AnswerBody
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&body); err != nil {
		httpError(w, http.StatusBadRequest, "the body must be JSON: {\"answer\":\"once|always|deny|never\"}: "+err.Error())
		return
	}
	ans, ok := parseAnswer(body.Answer)
	if !ok {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("answer %q: want once, always, deny or never", body.Answer))
		return
	}
	via, client, err := clientOf(body.Via, body.Client)
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	a, ok := s.asks.answer(w, id, ans, via)
	s.mu.Unlock()
	if !ok {
		return
	}
	s.answered(Answered{Item: "ask", ID: id, Task: a.Task, Answer: answerName(ans), Via: via, Client: client})
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"id": id, "answer": answerName(ans), "via": string(via)})
}
