package app

import (
	"bytes"
	"errors"
	"log/slog"
	"testing"
)

// Without -v, tai's diagnostics are its own short lines; -v keeps the
// logger's full records.
func TestLoggerStyle(t *testing.T) {
	for _, tt := range []struct {
		name    string
		verbose bool
		log     func(*slog.Logger)
		want    string
	}{
		{"warning", false, func(l *slog.Logger) { l.Warn("agent did not stop", "err", errors.New("boom")) }, "tai: warning: agent did not stop (err=boom)\n"},
		{"with attrs", false, func(l *slog.Logger) { l.With("agent", "qwen").Warn("slow\nstart") }, "tai: warning: slow start (agent=qwen)\n"},
		{"error", false, func(l *slog.Logger) { l.Error("lost") }, "tai: error: lost\n"},
		{"info hidden", false, func(l *slog.Logger) { l.Info("started") }, ""},
		{"verbose", true, func(l *slog.Logger) { l.Info("started") }, "level=INFO msg=started\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			tt.log(newLogger(&b, tt.verbose))
			got := b.String()
			if tt.verbose {
				if !bytes.Contains(b.Bytes(), []byte(tt.want[:len(tt.want)-1])) || !bytes.HasPrefix(b.Bytes(), []byte("time=")) {
					t.Fatalf("got %q, want the full record with %q", got, tt.want)
				}
				return
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}
