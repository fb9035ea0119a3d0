package feed

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Question is an agent's question put to a human (a fleet task's, once
// its answerer could not answer), as /state and the question frames show
// it.
type Question struct {
	ID    string    `json:"id"` // POST /questions/ID
	Task  string    `json:"task,omitempty"`
	Since time.Time `json:"since"`
	Text  string    `json:"text"`
}

// QuestionBody is POST /questions/ID's body.
type QuestionBody struct {
	Text string `json:"text"`          // the answer; not empty
	Via  string `json:"via,omitempty"` // dashboard or feed (default)
}

// QuestionFrame is the question.opened frame.
type QuestionFrame struct {
	Type     string    `json:"type"` // question.opened
	Run      string    `json:"run"`
	Ts       time.Time `json:"ts"`
	Question Question  `json:"question"`
}

// QuestionClosed is the question.closed frame: answered (via) or withdrawn.
type QuestionClosed struct {
	Type   string    `json:"type"` // question.closed
	Run    string    `json:"run"`
	Ts     time.Time `json:"ts"`
	ID     string    `json:"id"`
	Task   string    `json:"task,omitempty"`
	Via    string    `json:"via,omitempty"`
	Reason string    `json:"reason,omitempty"`
}

// Question frame types.
const (
	FrameQuestionOpened = "question.opened"
	FrameQuestionClosed = "question.closed"
)

type pendingQ struct {
	Question
	reply chan [2]string // answer, via
}

// AskQuestion puts a question to the feed's clients until one answers
// (the answer and its channel) or ctx ends (another channel answered:
// closed says by which, "" for a withdrawal).
func (s *Server) AskQuestion(ctx context.Context, task, text string, closed func() string) (string, string, error) {
	s.mu.Lock()
	s.askSeq++
	p := &pendingQ{Question: Question{ID: fmt.Sprintf("q-%d", s.askSeq), Task: task, Since: s.o.Clock.Now().UTC(), Text: text}, reply: make(chan [2]string, 1)}
	s.questions[p.ID] = p
	s.publishJSONLocked(QuestionFrame{Type: FrameQuestionOpened, Run: s.o.Run, Ts: p.Since, Question: p.Question})
	s.mu.Unlock()
	select {
	case r := <-p.reply:
		return r[0], r[1], nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.questions[p.ID]; !ok {
		select {
		case r := <-p.reply: // answered here in the same instant
			return r[0], r[1], nil
		default:
		}
	}
	delete(s.questions, p.ID)
	c := QuestionClosed{Type: FrameQuestionClosed, Run: s.o.Run, Ts: s.o.Clock.Now().UTC(), ID: p.ID, Task: task, Reason: "withdrawn"}
	if closed != nil {
		if via := closed(); via != "" {
			c.Via, c.Reason = via, ""
		}
	}
	s.done[p.ID] = closedAsk{via: c.Via, reason: c.Reason, answer: "an answer"}
	s.publishJSONLocked(c)
	return "", "", ctx.Err()
}

func (s *Server) answerQuestion(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body QuestionBody
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&body); err != nil {
		httpError(w, http.StatusBadRequest, "the body must be JSON: {\"text\":\"...\"}: "+err.Error())
		return
	}
	if strings.TrimSpace(body.Text) == "" {
		httpError(w, http.StatusBadRequest, "an empty answer answers nothing")
		return
	}
	via, ok := clientVia(body.Via)
	if !ok {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("via %q: want dashboard or feed", body.Via))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.questions[id]
	if !ok {
		s.refuseLocked(w, id, "question")
		return
	}
	delete(s.questions, id)
	p.reply <- [2]string{body.Text, via}
	s.done[id] = closedAsk{answer: "an answer", via: via}
	s.publishJSONLocked(QuestionClosed{Type: FrameQuestionClosed, Run: s.o.Run, Ts: s.o.Clock.Now().UTC(), ID: id, Task: p.Task, Via: via})
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"id": id, "via": via})
}
