package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// shortHandler writes tai's warnings and errors, without -v, in tai's own
// short style: `tai: warning: MSG (key=value …)`, one line each, without
// the logger's time and level fields (-v shows the full records).
type shortHandler struct {
	mu    *sync.Mutex
	w     io.Writer
	attrs []slog.Attr
}

func newShortHandler(w io.Writer) *shortHandler { return &shortHandler{mu: &sync.Mutex{}, w: w} }

func (h *shortHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h *shortHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString("tai: warning: ")
	if r.Level >= slog.LevelError {
		b.Reset()
		b.WriteString("tai: error: ")
	}
	b.WriteString(strings.ReplaceAll(r.Message, "\n", " "))
	var parts []string
	add := func(a slog.Attr) bool {
		a = logValue(nil, a)
		if !a.Equal(slog.Attr{}) {
			parts = append(parts, fmt.Sprintf("%s=%s", a.Key, strings.ReplaceAll(a.Value.String(), "\n", " ")))
		}
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	if len(parts) > 0 {
		b.WriteString(" (" + strings.Join(parts, ", ") + ")")
	}
	b.WriteString("\n")
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *shortHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &shortHandler{mu: h.mu, w: h.w, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

// WithGroup keeps the attributes flat: the short line has no groups.
func (h *shortHandler) WithGroup(string) slog.Handler { return h }
