// Package feed serves a running tai's live feed: the cap.md frames of its
// sessions as server-sent events (resumable with Last-Event-ID), a JSON
// snapshot of its sessions, tasks, budgets and what waits for a human
// (asks, questions, elicitations), and answers to those. It listens on a Unix socket per run under DefaultDir (directory
// 0700, socket 0600, the peer's uid checked on every connection) and, on
// request, on TCP. Every request must come from outside every agent's
// sandbox (sandbox.ConfinedPeer) and carry a secret no sandbox can read:
// the user's feed secret (TokenFile) on the socket, the token --listen
// printed on TCP. What it serves is redacted as the run's audit log is.
// tai top and fleet logs read it.
package feed

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/redact"
	"github.com/tai-dev/tai/render"
	"github.com/tai-dev/tai/sandbox"
)

// Kind is what a feed's run is.
type Kind string

// Kinds of runs.
const (
	KindRun   Kind = "run"
	KindFleet Kind = "fleet"
)

// Options configure a feed.
type Options struct {
	Run  string // the run id: the socket is Dir/Run.sock
	Kind Kind
	Dir  string // default DefaultDir()
	// MaxFrames bounds the frames kept for resuming clients (default
	// 50000); a client that resumes from before them is told how many it
	// missed.
	MaxFrames int
	// MaxBytes bounds their size too (default 4 MiB): a feed is a window on
	// the run, not its record (that is the audit log and fleet frames).
	MaxBytes int
	// IdleBytes is the bound while no stream reads (default 1 MiB, at
	// most MaxBytes, and at most 2048 frames): a run nobody watches keeps
	// only a short history for a client that comes later, and encodes it
	// only when one does.
	IdleBytes int
	Clock     quartz.Clock
	Logger    *slog.Logger
	// OnAsk, if set, hears of every ask that starts waiting on the feed
	// (notifications). It must not block.
	OnAsk func(Ask)
	// OnElicit, likewise, hears of every elicitation that starts waiting.
	OnElicit func(Elicitation)
	// Confined says whether a connection's peer is inside an agent's
	// sandbox (default sandbox.ConfinedPeer; tests fake one).
	Confined func(net.Conn) (bool, string)
}

// Server is one run's feed. Its methods are safe for concurrent use.
type Server struct {
	o       Options
	path    string
	started time.Time
	srvs    []*http.Server
	wg      sync.WaitGroup
	refused atomic.Int64
	token   string // TCP only
	secret  string // the socket's: TokenFile's

	mu       sync.Mutex
	red      *redact.Redactor // what is served is redacted (SetRedactor)
	onRefuse func(Refusal)
	onAnswer func(Answered)
	onCancel func(Cancel)
	onHand   func(Hand)
	frames   ring
	lazy     lazyFrames // frames after the ring's, while no stream reads
	payload  lazyPayload
	enc      render.FrameEncoder
	buf      bytes.Buffer // a frame being encoded
	// changed is closed on the next frame; nil while no stream waits, so
	// a feed nobody reads makes no channel a frame.
	changed   chan struct{}
	streams   int // streams reading /events
	closed    bool
	st        state
	asks      *pendings[Ask, policy.Answer]
	questions *pendings[Question, string]
	elicits   *pendings[Elicitation, elicitReply]
	done      map[string]closedItem // answered or withdrawn items, for 409s
	seq       int                   // of the items' ids
	budget    *Budget               // the run's or fleet's, if it has one
}

// Open creates the run's socket (removing stale ones of dead runs first)
// and serves it until Close.
func Open(o Options) (*Server, error) {
	if o.Dir == "" {
		o.Dir = DefaultDir()
	}
	if o.Clock == nil {
		o.Clock = quartz.NewReal()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxFrames <= 0 {
		o.MaxFrames = 50000
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 4 << 20
	}
	if o.IdleBytes <= 0 {
		o.IdleBytes = 1 << 20
	}
	o.IdleBytes = min(o.IdleBytes, o.MaxBytes)
	if o.Kind == "" {
		o.Kind = KindRun
	}
	if o.Confined == nil {
		o.Confined = sandbox.ConfinedPeer
	}
	if o.Run == "" || strings.ContainsAny(o.Run, "/\x00") || strings.HasPrefix(o.Run, ".") {
		return nil, fmt.Errorf("feed: invalid run id %q", o.Run)
	}
	if err := ensureDir(o.Dir); err != nil {
		return nil, err
	}
	secret, err := Secret(o.Dir)
	if err != nil {
		return nil, err
	}
	if _, err := List(o.Dir); err != nil { // cleans up dead runs' sockets
		o.Logger.Warn("feed: listing the feeds", "err", err)
	}
	s := &Server{o: o, path: filepath.Join(o.Dir, o.Run+SocketExt), started: o.Clock.Now().UTC(),
		frames: ring{maxFrames: o.MaxFrames, maxBytes: o.IdleBytes, recycle: true}, done: map[string]closedItem{},
		secret: secret, red: redact.Default()}
	s.asks = newPendings(s, "ask", "ask-", s.askClosed, answerName, func(a any) (policy.Answer, bool) {
		ans, _, ok := policy.ElsewhereAnswer(&ask.AnsweredElsewhere{Answer: a})
		return ans, ok
	})
	s.questions = newPendings(s, "question", "q-", s.questionClosed, func(string) string { return "an answer" }, func(a any) (string, bool) {
		text, ok := a.(string)
		return text, ok
	})
	s.elicits = newPendings(s, "elicitation", "el-", s.elicitClosed, func(r elicitReply) string { return string(r.Action) }, func(a any) (elicitReply, bool) {
		ans, ok := a.(driver.ElicitationAnswer)
		return elicitReply{Action: ans.Action}, ok
	})
	s.st.init()
	// The path names this run: a socket is there only if this run id was
	// used before, so the dial (the first of the process: costly) is only
	// for that case.
	if _, err := os.Lstat(s.path); err == nil && live(s.path) {
		return nil, fmt.Errorf("feed: run %s already has a live feed at %s", o.Run, s.path)
	}
	_ = os.Remove(s.path) // a socket nothing listens on
	// Bound under a name no reader looks at, then renamed into place once
	// it listens and has its mode: a reader that dialled it between bind
	// and listen would take it for a dead run's and remove it.
	tmp := filepath.Join(o.Dir, fmt.Sprintf(".%s.%d.tmp", o.Run, os.Getpid()))
	_ = os.Remove(tmp)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("feed: %w", err)
	}
	ln.SetUnlinkOnClose(false) // Close removes s.path itself
	err = os.Chmod(tmp, 0o600)
	if err == nil {
		err = os.Rename(tmp, s.path)
	}
	if err != nil {
		ln.Close()
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("feed: %w", err)
	}
	s.serve(&uidListener{Listener: ln, uid: os.Getuid(), s: s}, s.handler(false))
	return s, nil
}

// Path is the feed's socket.
func (s *Server) Path() string { return s.path }

// Refused counts the connections refused for coming from another user and
// the requests refused by the guard.
func (s *Server) Refused() int64 { return s.refused.Load() }

// Listen serves the feed on TCP too, at addr ("127.0.0.1:0"): every
// request must carry the bearer token it returns and come from outside
// every sandbox. It returns the address it listens on.
func (s *Server) Listen(addr string) (string, string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", "", fmt.Errorf("feed: --listen: %w", err)
	}
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		ln.Close()
		return "", "", fmt.Errorf("feed: token: %w", err)
	}
	s.mu.Lock()
	s.token = hex.EncodeToString(b)
	tok := s.token
	s.mu.Unlock()
	s.serve(ln, s.handler(true))
	return ln.Addr().String(), tok, nil
}

func (s *Server) serve(ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ConnContext: s.connContext, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(s.o.Logger.Handler(), slog.LevelDebug)}
	s.mu.Lock()
	s.srvs = append(s.srvs, srv)
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.o.Logger.Warn("feed: serving", "err", err)
		}
	}()
}

// Close ends the event streams (each client gets an end event after the
// last frame), stops serving and removes the socket. Pending asks stay
// with their other channels.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	// No new client from here on; the streams end after their last frame.
	rmErr := os.Remove(s.path)
	s.closed = true
	s.wakeLocked()
	srvs := s.srvs
	s.mu.Unlock()
	for _, srv := range srvs {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
		cancel()
	}
	s.wg.Wait()
	if rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
		return fmt.Errorf("feed: %w", rmErr)
	}
	return nil
}

// uidListener refuses connections from other users: the socket's mode
// already keeps them out, this holds even if the mode is changed.
type uidListener struct {
	net.Listener
	uid int
	s   *Server
}

func (l *uidListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		uid, err := peerUID(c)
		if err == nil && uid == l.uid {
			return c, nil
		}
		l.s.refused.Add(1)
		l.s.o.Logger.Warn("feed: refused a connection from another user", "uid", uid, "err", err)
		c.Close()
	}
}

// publishLocked keeps one frame (a JSON object, copied) and wakes the
// streams; s.mu is held.
func (s *Server) publishLocked(data []byte) {
	if s.closed || s.keepRawLocked(data) {
		return
	}
	s.encodeLazyLocked()
	s.frames.add(data)
	s.wakeLocked()
}

// wakeLocked wakes the streams waiting for a frame; s.mu is held.
func (s *Server) wakeLocked() {
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// publishJSONLocked publishes v's JSON; s.mu is held.
func (s *Server) publishJSONLocked(v any) {
	data, err := json.Marshal(v)
	if err != nil {
		s.o.Logger.Warn("feed: a frame did not encode", "err", err)
		return
	}
	s.publishLocked(data)
}

// Publish sends a frame of tai's own (a fleet frame): v must marshal to a
// JSON object with a "type".
func (s *Server) Publish(v any) {
	data, err := json.Marshal(v)
	if err != nil {
		s.o.Logger.Warn("feed: a frame did not encode", "err", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.publishLocked(data)
}

// TaggedEvent is a session's frame as the feed (and fleet stream-json)
// sends it: the cap.md frame with the run and, in a fleet, the task.
type TaggedEvent = render.Tagged

// Sink is a runner sink that feeds the session's events into the feed,
// tagged with the task ("" outside a fleet).
func (s *Server) Sink(task string) driver.Sink { return sink{s, task} }

type sink struct {
	s    *Server
	task string
}

// Emit keeps the event's frame: unencoded while no stream reads and it is
// one render.FrameEncoder writes by hand (see lazyFrame), else encoded by
// hand into the feed's blocks. Either way a flood costs the feed no
// allocation a frame.
func (k sink) Emit(ev driver.Event) {
	s := k.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.event(k.task, ev)
	if s.closed {
		return
	}
	if m := ev.Message; m != nil && len(m.Text)+len(m.Content) > s.o.MaxBytes {
		// A message chunk larger than the whole feed (a 100 MiB line) is
		// not encoded, nor kept: counted, and missed by the streams.
		s.dropLazyLocked()
		s.frames.skip()
		s.wakeLocked()
		return
	}
	if s.keepLazyLocked(k.task, ev) {
		return // no stream reads, so none waits
	}
	if data := s.encodeLocked(k.task, ev); data != nil {
		s.publishLocked(data)
	}
	s.releaseBuf()
}

// encodeLocked encodes ev's frame (without its newline) into s.buf, valid
// until the next call; nil if it does not encode. s.mu is held.
func (s *Server) encodeLocked(task string, ev driver.Event) []byte {
	s.buf.Reset()
	if err := s.enc.Write(&s.buf, ev, s.o.Run, task); err != nil {
		s.o.Logger.Warn("feed: an event did not encode", "type", ev.Type, "err", err)
		return nil
	}
	return bytes.TrimSuffix(s.buf.Bytes(), []byte("\n"))
}

// releaseBuf lets go of a huge frame's buffer once its frame is kept.
func (s *Server) releaseBuf() {
	if s.buf.Cap() > blockSize {
		s.buf = bytes.Buffer{}
	}
}

// streaming counts a stream in or out: the feed keeps MaxBytes of
// frames while one reads, IdleBytes while none does.
func (s *Server) streaming(delta int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.streams += delta
	if s.streams > 0 {
		s.frames.maxBytes = s.o.MaxBytes
		s.frames.recycle, s.frames.spare = false, nil // a stream may hold a dropped block's frames
		s.encodeLazyLocked()
	} else {
		s.frames.setMaxBytes(s.o.IdleBytes)
		s.frames.recycle = true
	}
}

// streamBatch is how many frames a stream takes from the feed at once.
const streamBatch = 256

// since fills buf with the frames after id and returns how many before
// them are gone, the channel that closes on the next frame and whether
// the feed is closed.
func (s *Server) since(id uint64, buf []kept) ([]kept, uint64, chan struct{}, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.encodeLazyLocked()
	frames, missed := s.frames.since(id, buf)
	if len(frames) == 0 && !s.closed && s.changed == nil {
		s.changed = make(chan struct{})
	}
	return frames, missed, s.changed, s.closed
}

func (s *Server) handler(tcp bool) http.Handler {
	// The routes are built on the first request: most runs are never
	// watched, and parsing their patterns was a third of Open.
	routes := sync.OnceValue(func() *http.ServeMux {
		mux := http.NewServeMux()
		mux.HandleFunc("GET /events", s.events)
		mux.HandleFunc("GET /state", s.state)
		mux.HandleFunc("POST /asks/{id}", s.answer)
		mux.HandleFunc("POST /questions/{id}", s.answerQuestion)
		mux.HandleFunc("POST /elicitations/{id}", s.answerElicitation)
		mux.HandleFunc("POST /cancel", s.cancel)
		mux.HandleFunc("POST /pause", s.hand(HandPause))
		mux.HandleFunc("POST /release", s.hand(HandRelease))
		return mux
	})
	return s.guard(tcp, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { routes().ServeHTTP(w, r) }))
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// events streams the frames as SSE: "id: N" then "data: FRAME". A client
// that reconnects with Last-Event-ID (or ?last_event_id=) gets what
// followed it, no frame twice; once the run ends, an "end" event.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
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
	fl, ok := w.(http.Flusher)
	if !ok {
		httpError(w, http.StatusInternalServerError, "streaming is not supported")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	s.streaming(1)
	defer s.streaming(-1)
	buf := make([]kept, 0, streamBatch)
	var line []byte
	for {
		// Asked each time: a stream may start before the run's redactor
		// is known (its agent resolved).
		red := s.redactor()
		frames, missed, changed, closed := s.since(after, buf)
		if missed > 0 {
			fmt.Fprintf(w, "event: gap\ndata: {\"missed\":%d}\n\n", missed)
		}
		for _, f := range frames {
			line = strconv.AppendUint(append(line[:0], "id: "...), f.id, 10)
			line = append(line, "\ndata: "...)
			_, _ = w.Write(line)
			_, _ = w.Write(redactFrame(red, f.data))
			if _, err := io.WriteString(w, "\n\n"); err != nil {
				return
			}
			after = f.id
		}
		if len(frames) > 0 {
			continue // more may be kept already: wait only once none is
		}
		if closed {
			fmt.Fprint(w, "event: end\ndata: {}\n\n")
			fl.Flush()
			return
		}
		fl.Flush()
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		}
	}
}

func (s *Server) state(w http.ResponseWriter, _ *http.Request) {
	b, err := redactState(s.redactor(), s.Snapshot())
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
