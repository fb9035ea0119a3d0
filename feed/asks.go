package feed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

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
	Via    string `json:"via,omitempty"` // dashboard (tai top) or feed (default)
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

type reply struct {
	answer policy.Answer
	via    string
}

type pending struct {
	Ask
	reply chan reply // buffered 1: the one answer
}

type closedAsk struct {
	answer, via, reason string
}

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
func (s *Server) Channel() policy.Named {
	return policy.Named{Name: policy.ViaFeed, Prompter: channel{s}}
}

type channel struct{ s *Server }

func (c channel) Ask(ctx context.Context, req driver.PermissionRequest) (policy.Answer, error) {
	a, _, err := c.AskVia(ctx, req)
	return a, err
}

// AskVia implements policy.ViaPrompter: the via is the client's.
func (c channel) AskVia(ctx context.Context, req driver.PermissionRequest) (policy.Answer, string, error) {
	s := c.s
	info := policy.AskInfoOf(ctx)
	task := strings.TrimPrefix(policy.AskerOf(ctx), "task ")
	s.mu.Lock()
	s.askSeq++
	p := &pending{Ask: Ask{ID: fmt.Sprintf("ask-%d", s.askSeq), Task: task, Session: req.Session, Since: s.o.Clock.Now().UTC(),
		Request: req, DecidedBy: info.By, Why: info.Why}, reply: make(chan reply, 1)}
	s.asks[p.ID] = p
	s.publishJSONLocked(AskFrame{Type: FrameAskOpened, Run: s.o.Run, Ts: p.Since, Ask: p.Ask})
	s.mu.Unlock()
	if s.o.OnAsk != nil {
		s.o.OnAsk(p.Ask)
	}

	select {
	case r := <-p.reply:
		return r.answer, r.via, nil // answer() closed it
	case <-ctx.Done():
	}
	closed := AskClosed{Type: FrameAskClosed, Run: s.o.Run, ID: p.ID, Task: task, Reason: "withdrawn"}
	var elsewhere *policy.AnsweredElsewhere
	if errors.As(context.Cause(ctx), &elsewhere) {
		closed.Answer, closed.Via, closed.Reason = answerName(elsewhere.Answer), elsewhere.Via, ""
	} else if cause := context.Cause(ctx); cause != nil {
		closed.Reason = cause.Error()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.asks[p.ID]; !ok {
		// Answered here in the same instant: the race took the other.
		select {
		case r := <-p.reply:
			return r.answer, r.via, nil
		default:
		}
	}
	delete(s.asks, p.ID)
	s.done[p.ID] = closedAsk{answer: closed.Answer, via: closed.Via, reason: closed.Reason}
	closed.Ts = s.o.Clock.Now().UTC()
	s.publishJSONLocked(closed)
	return policy.DenyOnce, "", ctx.Err()
}

func (s *Server) publishJSONLocked(v any) {
	data, err := json.Marshal(v)
	if err != nil {
		s.o.Logger.Warn("feed: a frame did not encode", "err", err)
		return
	}
	s.publishLocked(data)
}

func (s *Server) pendingLocked() []*pending {
	out := make([]*pending, 0, len(s.asks))
	for _, p := range s.asks {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Since.Equal(out[j].Since) {
			return out[i].Since.Before(out[j].Since)
		}
		return out[i].ID < out[j].ID
	})
	return out
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
	via, ok := clientVia(body.Via)
	if !ok {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("via %q: want dashboard or feed", body.Via))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.asks[id]
	if !ok {
		s.refuseLocked(w, id, "ask")
		return
	}
	delete(s.asks, id)
	p.reply <- reply{ans, via}
	name := answerName(ans)
	s.done[id] = closedAsk{answer: name, via: via}
	s.publishJSONLocked(AskClosed{Type: FrameAskClosed, Run: s.o.Run, Ts: s.o.Clock.Now().UTC(), ID: id, Task: p.Task, Answer: name, Via: via})
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"id": id, "answer": name, "via": via})
}

// clientVia is the channel a client says it is ("" = feed).
func clientVia(v string) (string, bool) {
	switch v {
	case "":
		return policy.ViaFeed, true
	case policy.ViaFeed, policy.ViaDashboard:
		return v, true
	}
	return "", false
}

// refuseLocked answers a POST for an ask or question that is not pending:
// 409 if it was answered or withdrawn, 404 if there never was one.
func (s *Server) refuseLocked(w http.ResponseWriter, id, what string) {
	if c, ok := s.done[id]; ok {
		msg := "already " + c.reason
		if c.via != "" {
			msg = fmt.Sprintf("already answered via %s: %s", c.via, c.answer)
		}
		httpError(w, http.StatusConflict, msg)
		return
	}
	httpError(w, http.StatusNotFound, fmt.Sprintf("no pending %s %q", what, id))
}
