package app

import (
	"context"
	"io"
	"log/slog"
	"os"

	"github.com/tai-dev/tai/capspeak"
)

// serveParent reads the parent's stream-json conversation from in until
// it ends or the returned stop is called (the run is over): stop unblocks
// a read of stdin and waits for the reader, so no goroutine outlives the
// run.
func serveParent(ctx context.Context, conn *capspeak.Conn, in io.Reader, logger *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	r := in
	var cr *cancelReader
	if f, ok := in.(*os.File); ok {
		if c, err := newCancelReader(f); err == nil {
			cr, r = c, c
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := conn.Serve(ctx, r); err != nil && ctx.Err() == nil {
			logger.Warn("reading the parent's input", "err", err)
		}
	}()
	return func() {
		cancel()
		if cr != nil {
			cr.cancel()
			<-done
		}
	}
}
