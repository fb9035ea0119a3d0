package feed

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/tai-dev/tai/ask"
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
	Via  string `json:"via,omitempty"` // dashboard, web or feed (default)
	// Client is the address of the person answering (AnswerBody.Client).
	Client string `json:"client,omitempty"`
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

// Questions is the feed as one channel of a question's race: the
// question waits in /state (and a question.opened frame) until a client
// answers it with POST /questions/ID, or another channel answers first.
func (s *Server) Questions() ask.QuestionChannel {
	return ask.QuestionChannel{Via: ask.ViaFeed, Ask: s.AskQuestion}
}

// AskQuestion puts a question to the feed's clients until one answers
// (the answer and its channel) or ctx ends.
func (s *Server) AskQuestion(ctx context.Context, q ask.Question) (string, ask.Via, error) {
	e := s.questions.open(func(id string, since time.Time) Question {
		return Question{ID: id, Task: q.Task, Since: since, Text: q.Text}
	}, func(q Question) any {
		return QuestionFrame{Type: FrameQuestionOpened, Run: s.o.Run, Ts: q.Since, Question: q}
	})
	return s.questions.wait(ctx, e)
}

// questionClosed is the question.closed frame.
func (s *Server) questionClosed(q Question, _ *string, via ask.Via, reason string) any {
	return QuestionClosed{Type: FrameQuestionClosed, Run: s.o.Run, Ts: s.o.Clock.Now().UTC(), ID: q.ID, Task: q.Task, Via: string(via), Reason: reason}
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
	via, client, err := clientOf(body.Via, body.Client)
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	q, ok := s.questions.answer(w, id, body.Text, via)
	s.mu.Unlock()
	if !ok {
		return
	}
	s.answered(Answered{Item: "question", ID: id, Task: q.Task, Via: via, Client: client})
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"id": id, "via": string(via)})
}
