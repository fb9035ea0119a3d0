package modelserver

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"time"
	"unicode"
	"unicode/utf8"
)

// sseWriter writes server-sent events, flushing each one so clients see
// deltas as they are produced, and pausing chunkDelay between events.
type sseWriter struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	ctx   context.Context
	sleep func(context.Context, time.Duration) error
	gap   time.Duration
	sent  bool
}

func newSSE(w http.ResponseWriter, ctx context.Context, sleep func(context.Context, time.Duration) error, gap time.Duration) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &sseWriter{w: w, rc: http.NewResponseController(w), ctx: ctx, sleep: sleep, gap: gap}
}

// send writes one event; event may be "" for data-only streams (OpenAI Chat, Gemini).
func (s *sseWriter) send(event string, v any) error {
	return s.sendRaw(event, mustMarshal(v))
}

func (s *sseWriter) sendRaw(event string, data []byte) error {
	if s.sent && s.gap > 0 {
		if err := s.sleep(s.ctx, s.gap); err != nil {
			return err
		}
	}
	s.sent = true
	var b bytes.Buffer
	if event != "" {
		b.WriteString("event: ")
		b.WriteString(event)
		b.WriteByte('\n')
	}
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	if _, err := s.w.Write(b.Bytes()); err != nil {
		return err
	}
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return s.ctx.Err()
}

// chunks splits s into short pieces the way a model streams tokens: a piece
// ends after whitespace once it has a few runes, or at a hard limit.
// Concatenating the pieces gives back s exactly.
func chunks(s string) []string {
	const soft, hard = 8, 24
	var out []string
	start, n := 0, 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n++
		if (n >= soft && unicode.IsSpace(r)) || n >= hard {
			out = append(out, s[start:i])
			start, n = i, 0
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
