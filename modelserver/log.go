package modelserver

import (
	"encoding/json"
	"net/http"
	"time"
)

// API names used in the request log.
const (
	apiChat      = "openai-chat"
	apiResponses = "openai-responses"
	apiAnthropic = "anthropic"
	apiGemini    = "gemini"
	apiModels    = "models"
	apiControl   = "control"
)

// LogEntry is one line of the request log (Options.Log). OfferedTools shows
// the tool names an agent offers, which is what a script must name.
type LogEntry struct {
	TS           string          `json:"ts"` // RFC 3339, when the request arrived
	N            int             `json:"n"`  // 1-based request number
	Method       string          `json:"method"`
	Path         string          `json:"path"`
	API          string          `json:"api"` // openai-chat, openai-responses, anthropic, gemini, models, control, unknown
	Model        string          `json:"model"`
	Stream       bool            `json:"stream"`
	OfferedTools []string        `json:"offered_tools"`
	Consumed     bool            `json:"consumed"` // whether a scripted turn was used up
	Turn         int             `json:"turn"`     // index of the consumed turn, -1 if none
	Reason       string          `json:"reason,omitempty"`
	Status       int             `json:"status"`
	Body         json.RawMessage `json:"body"` // the request body: JSON as is, anything else as a string
}

func (s *Server) begin(r *http.Request) *LogEntry {
	s.mu.Lock()
	s.requests++
	n := s.requests
	s.mu.Unlock()
	return &LogEntry{
		TS:           s.now().UTC().Format(time.RFC3339Nano),
		N:            n,
		Method:       r.Method,
		Path:         r.URL.RequestURI(),
		OfferedTools: []string{},
		Turn:         -1,
		Body:         json.RawMessage("null"),
	}
}

func (e *LogEntry) setBody(body []byte) {
	switch {
	case len(body) == 0:
	case json.Valid(body):
		e.Body = json.RawMessage(body)
	default:
		e.Body = mustMarshal(string(body))
	}
}

func (s *Server) finish(e *LogEntry, w *statusWriter) {
	if e.Status == 0 {
		e.Status = w.status
	}
	if e.Status == 0 {
		e.Status = http.StatusOK
	}
	if s.opts.Log == nil {
		return
	}
	line, err := marshalValue(e)
	if err != nil {
		s.logger.Error("modelserver: encode log entry", "err", err)
		return
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if _, err := s.opts.Log.Write(append(line, '\n')); err != nil {
		s.logger.Warn("modelserver: write request log", "err", err)
	}
}
