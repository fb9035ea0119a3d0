package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/tai-dev/tai/feed"
	"github.com/tai-dev/tai/top"
)

// sse starts an event stream.
func sse(w http.ResponseWriter) (http.Flusher, bool) {
	fl, ok := w.(http.Flusher)
	if !ok {
		httpError(w, http.StatusInternalServerError, "streaming is not supported")
		return nil, false
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	return fl, true
}

// apiRunEvents is the run's feed's /events, passed on: the same frames and
// ids, resumable with Last-Event-ID (or ?last_event_id=).
func (s *Server) apiRunEvents(w http.ResponseWriter, r *http.Request) {
	last := r.Header.Get("Last-Event-ID")
	if q := r.URL.Query().Get("last_event_id"); q != "" {
		last = q
	}
	var after uint64
	if last != "" {
		n, err := strconv.ParseUint(last, 10, 64)
		if err != nil {
			httpError(w, http.StatusBadRequest, fmt.Sprintf("Last-Event-ID %q is not an event id", last))
			return
		}
		after = n
	}
	c, err := s.client(r.PathValue("run"), r.RemoteAddr)
	if err != nil {
		feedError(w, err)
		return
	}
	defer c.Close()
	fl, ok := sse(w)
	if !ok {
		return
	}
	_, err = c.Events(r.Context(), after, func(ev feed.Event) error {
		writeEvent(w, ev)
		fl.Flush()
		return nil
	})
	if errors.Is(err, feed.ErrEnded) {
		fmt.Fprint(w, "event: end\ndata: {}\n\n")
		fl.Flush()
	}
}

// writeEvent writes one of a feed's events as SSE.
func writeEvent(w http.ResponseWriter, ev feed.Event) {
	if ev.ID > 0 {
		fmt.Fprintf(w, "id: %d\n", ev.ID)
	}
	if ev.Name != "" {
		fmt.Fprintf(w, "event: %s\n", ev.Name)
	}
	fmt.Fprintf(w, "data: %s\n\n", ev.Data)
}

// apiTranscript streams a session's transcript, as tai top's `l` shows it,
// one {"line": "..."} event a line, from the start of the run; an end
// event when the run ends.
func (s *Server) apiTranscript(w http.ResponseWriter, r *http.Request) {
	run, session := r.PathValue("run"), r.URL.Query().Get("session")
	if _, err := s.client(run, ""); err != nil {
		feedError(w, err)
		return
	}
	fl, ok := sse(w)
	if !ok {
		return
	}
	err := top.FeedSource{Dir: s.o.Feeds}.Follow(r.Context(), run, session, func(line string) {
		b, _ := json.Marshal(map[string]string{"line": line})
		fmt.Fprintf(w, "data: %s\n\n", b)
		fl.Flush()
	})
	if err == nil {
		fmt.Fprint(w, "event: end\ndata: {}\n\n")
		fl.Flush()
	}
}

// runEvent is one event of a run's feed, for the stream of all runs.
type runEvent struct {
	run   string
	ev    feed.Event
	ended bool
}

// apiEvents streams the frames of every live run on this host, from now
// on (each frame names its run): a "runs" event when a run starts, an
// "ended" event ({"run":...}) when one ends. The page refreshes on them.
func (s *Server) apiEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := sse(w)
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	ch := make(chan runEvent, 64)
	following := map[string]bool{}
	scan := func() bool {
		eps, err := feed.List(s.o.Feeds)
		if err != nil {
			s.o.Logger.Warn("web: listing the feeds", "err", err)
		}
		started := false
		for _, ep := range eps {
			if following[ep.Run] {
				continue
			}
			following[ep.Run], started = true, true
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.follow(ctx, ep, ch)
			}()
		}
		return started
	}
	scan()
	tick := s.o.Clock.NewTicker(s.o.Rescan, "web", "rescan")
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if scan() {
				fmt.Fprint(w, "event: runs\ndata: {}\n\n")
				fl.Flush()
			}
		case e := <-ch:
			if e.ended {
				b, _ := json.Marshal(map[string]string{"run": e.run})
				fmt.Fprintf(w, "event: ended\ndata: %s\n\n", b)
			} else if e.ev.Name == "" {
				fmt.Fprintf(w, "data: %s\n\n", e.ev.Data)
			}
			fl.Flush()
		}
	}
}

// follow hands ep's frames after its current state to ch until ctx ends or
// the run does (an ended event then).
func (s *Server) follow(ctx context.Context, ep feed.Endpoint, ch chan<- runEvent) {
	c := feed.Dial(ep.Path)
	defer c.Close()
	send := func(e runEvent) error {
		select {
		case ch <- e:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	st, err := c.State(ctx)
	if err == nil {
		_, err = c.Events(ctx, st.LastEventID, func(ev feed.Event) error { return send(runEvent{run: ep.Run, ev: ev}) })
	}
	if ctx.Err() == nil {
		if !errors.Is(err, feed.ErrEnded) {
			s.o.Logger.Debug("web: following a feed", "run", ep.Run, "err", err)
		}
		_ = send(runEvent{run: ep.Run, ended: true})
	}
}
