package modelserver

import (
	"context"
	"errors"
	"fmt"
	"github.com/tai-dev/tai/internal/lazyre"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// maxBody bounds request bodies; agents send large but not unbounded prompts.
const maxBody = 64 << 20

// Options configure a Server.
type Options struct {
	// Script to serve. When nil, ScriptPath is loaded; when both are empty
	// every request gets the fallback answer.
	Script *Script
	// ScriptPath is reloaded by POST /_reset and Reset.
	ScriptPath string
	// Cwd is the value of {{CWD}} when the script sets none. Default: the
	// process working directory.
	Cwd string
	// Log, when set, receives one JSON line per request (see LogEntry).
	Log io.Writer
	// Logger receives diagnostics. Default: discard.
	Logger *slog.Logger
	// Now is the clock for timestamps. Default: time.Now.
	Now func() time.Time
	// Sleep implements scripted delays; it must return early with an error
	// when ctx is done. Default: a timer. Tests inject a no-op.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Server is a scripted fake LLM provider. It is safe for concurrent use.
type Server struct {
	opts   Options
	logger *slog.Logger
	now    func() time.Time
	sleep  func(context.Context, time.Duration) error
	cwd    string

	mu       sync.Mutex
	script   *Script
	next     int // index of the next scripted turn
	requests int // requests received, all endpoints
	answered int // generation requests answered before a script's limit
	refused  int // requests the script's limit refused
	calls    int // tool call ids handed out since the last rewind
	srv      *http.Server

	logMu sync.Mutex

	// ctx ends when the server closes, so scripted delays and streams stop.
	ctx      context.Context
	cancel   context.CancelFunc
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// State is the scripted progress reported by GET /_state.
type State struct {
	NextTurn   int    `json:"next_turn"` // index of the next turn to consume
	Turns      int    `json:"turns"`     // number of scripted turns
	Exhausted  bool   `json:"exhausted"` // NextTurn == Turns
	Requests   int    `json:"requests"`  // requests received since start, all endpoints
	ScriptPath string `json:"script_path,omitempty"`
	Cwd        string `json:"cwd"`
}

// New returns a server for opts. It loads opts.ScriptPath when opts.Script is nil.
func New(opts Options) (*Server, error) {
	s := &Server{opts: opts, logger: opts.Logger, now: opts.Now, sleep: opts.Sleep, script: opts.Script}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.sleep == nil {
		s.sleep = sleepCtx
	}
	s.cwd = opts.Cwd
	if s.cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("modelserver: working directory: %w", err)
		}
		s.cwd = wd
	}
	switch {
	case s.script != nil:
		if err := s.script.Validate(); err != nil {
			return nil, fmt.Errorf("modelserver: %w", err)
		}
	case opts.ScriptPath != "":
		sc, err := LoadScript(opts.ScriptPath)
		if err != nil {
			return nil, fmt.Errorf("modelserver: %w", err)
		}
		s.script = sc
	default:
		s.script = &Script{}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Handler serves the provider APIs and the control endpoints.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// Start listens on addr ("" or "127.0.0.1:0" picks a free port) and serves
// until ctx is done or Close is called. It returns the base URL, e.g.
// "http://127.0.0.1:41234".
func (s *Server) Start(ctx context.Context, addr string) (string, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return "", errors.New("modelserver: already started")
	}
	if s.ctx.Err() != nil {
		return "", errors.New("modelserver: closed")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("modelserver: listen: %w", err)
	}
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelDebug),
	}
	s.srv = srv
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logger.Error("modelserver: serve", "err", err)
		}
	}()
	go func() {
		defer s.wg.Done()
		select {
		case <-ctx.Done():
			s.stop()
		case <-s.ctx.Done():
		}
	}()
	url := "http://" + hostPort(ln.Addr())
	s.logger.Info("modelserver: listening", "url", url)
	return url, nil
}

// hostPort makes a dialable address out of a wildcard listen address.
func hostPort(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// Close stops the server, ending in-flight streams and delays, and waits
// for its goroutines. It is safe to call more than once.
func (s *Server) Close() error {
	err := s.stop()
	s.wg.Wait()
	return err
}

func (s *Server) stop() error {
	var err error
	s.stopOnce.Do(func() {
		s.cancel()
		s.mu.Lock()
		srv := s.srv
		s.mu.Unlock()
		if srv == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err = srv.Shutdown(ctx); err != nil {
			err = errors.Join(err, srv.Close())
		}
		if err != nil {
			err = fmt.Errorf("modelserver: close: %w", err)
		}
	})
	return err
}

// State reports scripted progress.
func (s *Server) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return State{
		NextTurn:   s.next,
		Turns:      len(s.script.Turns),
		Exhausted:  s.next >= len(s.script.Turns),
		Requests:   s.requests,
		ScriptPath: s.opts.ScriptPath,
		Cwd:        s.cwdLocked(),
	}
}

// SetScript replaces the script and rewinds, like POST /_script.
func (s *Server) SetScript(sc *Script) error {
	if err := sc.Validate(); err != nil {
		return fmt.Errorf("modelserver: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = sc
	s.next, s.calls, s.answered, s.refused = 0, 0, 0, 0
	return nil
}

// Reset reloads Options.ScriptPath (when set) and rewinds, like POST /_reset.
// On a load error the current script stays and is not rewound.
func (s *Server) Reset() error {
	if s.opts.ScriptPath != "" {
		sc, err := LoadScript(s.opts.ScriptPath)
		if err != nil {
			return fmt.Errorf("modelserver: reset: %w", err)
		}
		return s.SetScript(sc)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next, s.calls, s.answered, s.refused = 0, 0, 0, 0
	return nil
}

func (s *Server) cwdLocked() string {
	if s.script.Cwd != "" {
		return s.script.Cwd
	}
	return s.cwd
}

// geminiPath matches "/v1beta/models/gemini-2.5-flash:streamGenerateContent".
var geminiPath = lazyre.New(`^(?:/[^/]+)*/models/([^/:]+):([A-Za-z]+)$`)

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	rec := s.begin(r)
	sw := &statusWriter{ResponseWriter: w}
	defer func() { s.finish(rec, sw) }()

	p := strings.TrimSuffix(r.URL.Path, "/")
	if m := geminiPath().FindStringSubmatch(p); m != nil && r.Method == http.MethodPost {
		rec.API = apiGemini
		switch m[2] {
		case "generateContent", "streamGenerateContent":
			s.serveModel(sw, r, rec, geminiProvider(m[1], m[2] == "streamGenerateContent"))
		case "countTokens":
			s.serveCount(sw, r, rec, geminiError, func(n int) any { return obj("totalTokens", n) })
		default:
			geminiError(sw, http.StatusNotFound, "unknown method "+m[2], 0)
		}
		return
	}
	switch {
	case p == "/_script" || p == "/_reset" || p == "/_state":
		rec.API = apiControl
		s.serveControl(sw, r, rec, p)
	case strings.HasSuffix(p, "/chat/completions"):
		rec.API = apiChat
		s.serveModel(sw, r, rec, chatProvider)
	case strings.HasSuffix(p, "/responses/input_tokens"):
		rec.API = apiResponses
		s.serveCount(sw, r, rec, openAIError, func(n int) any {
			return obj("object", "response.input_tokens", "input_tokens", n)
		})
	case strings.HasSuffix(p, "/responses"):
		rec.API = apiResponses
		s.serveModel(sw, r, rec, responsesProvider)
	case strings.HasSuffix(p, "/messages/count_tokens"):
		rec.API = apiAnthropic
		s.serveCount(sw, r, rec, anthropicError, func(n int) any { return obj("input_tokens", n) })
	case strings.HasSuffix(p, "/messages"):
		rec.API = apiAnthropic
		s.serveModel(sw, r, rec, anthropicProvider)
	case r.Method == http.MethodGet && (strings.HasSuffix(p, "/models") || strings.Contains(p, "/models/")):
		rec.API = apiModels
		s.serveModels(sw, r, p)
	case r.Method == http.MethodGet && (p == "" || p == "/healthz"):
		rec.API = apiControl
		sw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(sw, "tai modelserver: ok\n")
	default:
		rec.API = "unknown"
		openAIError(sw, http.StatusNotFound, fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path), 0)
	}
}

// provider adapts one wire API to the shared turn logic.
type provider struct {
	parse func(r *http.Request, body []byte) (*apiRequest, error)
	write func(w http.ResponseWriter, r *http.Request, out *sseWriter, req *apiRequest, rp *reply) error
	fail  func(w http.ResponseWriter, status int, msg string, retryAfter time.Duration)
	// limitHeaders, if set, adds the provider's rate-limit headers to a
	// 429: the limit is used up and resets retryAfter from now; window,
	// when set, is the subscription plan's usage window that ran out.
	limitHeaders func(h http.Header, now time.Time, retryAfter time.Duration, window string)
	// planFail, if set, writes the 429 of a subscription plan's usage
	// window (a limit's window) where the provider's plans answer with a
	// body of their own.
	planFail func(w http.ResponseWriter, now time.Time, retryAfter time.Duration, window, msg string)
}

func (s *Server) serveModel(w http.ResponseWriter, r *http.Request, rec *LogEntry, p provider) {
	if r.Method != http.MethodPost {
		p.fail(w, http.StatusMethodNotAllowed, "use POST", 0)
		return
	}
	body, err := readBody(r, rec)
	if err != nil {
		p.fail(w, http.StatusBadRequest, err.Error(), 0)
		return
	}
	req, err := p.parse(r, body)
	if err != nil {
		p.fail(w, http.StatusBadRequest, "invalid request body: "+err.Error(), 0)
		return
	}
	req.body = body
	rec.Model, rec.Stream, rec.OfferedTools = req.model, req.stream, req.toolNames()

	rp := s.plan(req, rec.N)
	rec.Consumed, rec.Turn, rec.Reason = rp.consumed, rp.turn, rp.reason
	s.logger.Debug("modelserver: request", "n", rec.N, "api", rec.API, "turn", rp.turn, "reason", rp.reason)

	if rp.delay > 0 {
		if err := s.sleep(r.Context(), rp.delay); err != nil {
			rec.Status = 499 // client went away (nginx's convention)
			return
		}
	}
	if rp.errStatus != 0 {
		msg := rp.errMsg
		if msg == "" {
			msg = defaultErrorMessage(rp.errStatus)
		}
		if rp.errStatus == http.StatusTooManyRequests && p.limitHeaders != nil {
			p.limitHeaders(w.Header(), s.now(), rp.retryAfter, rp.window)
		}
		if rp.errStatus == http.StatusTooManyRequests && rp.window != "" && p.planFail != nil {
			p.planFail(w, s.now(), rp.retryAfter, rp.window, rp.errMsg)
			return
		}
		p.fail(w, rp.errStatus, msg, rp.retryAfter)
		return
	}
	var out *sseWriter
	if req.stream {
		out = newSSE(w, r.Context(), s.sleep, rp.chunkDelay)
	}
	if err := p.write(w, r, out, req, rp); err != nil {
		s.logger.Debug("modelserver: write response", "n", rec.N, "err", err)
	}
}

func (s *Server) serveCount(w http.ResponseWriter, r *http.Request, rec *LogEntry, fail func(http.ResponseWriter, int, string, time.Duration), shape func(int) any) {
	if r.Method != http.MethodPost {
		fail(w, http.StatusMethodNotAllowed, "use POST", 0)
		return
	}
	body, err := readBody(r, rec)
	if err != nil {
		fail(w, http.StatusBadRequest, err.Error(), 0)
		return
	}
	if m := geminiPath().FindStringSubmatch(strings.TrimSuffix(r.URL.Path, "/")); m != nil {
		rec.Model = m[1]
	} else {
		rec.Model = modelOf(body)
	}
	writeJSON(w, http.StatusOK, shape(inputTokens(body)))
}

func (s *Server) serveControl(w http.ResponseWriter, r *http.Request, rec *LogEntry, p string) {
	fail := func(status int, err error) {
		writeJSON(w, status, obj("error", err.Error()))
	}
	want := http.MethodPost
	if p == "/_state" {
		want = http.MethodGet
	}
	if r.Method != want {
		fail(http.StatusMethodNotAllowed, fmt.Errorf("use %s", want))
		return
	}
	switch p {
	case "/_script":
		body, err := readBody(r, rec)
		if err != nil {
			fail(http.StatusBadRequest, err)
			return
		}
		format := r.URL.Query().Get("format")
		if format == "" && strings.Contains(r.Header.Get("Content-Type"), "yaml") {
			format = "yaml"
		}
		sc, err := ParseScript(body, format)
		if err != nil {
			fail(http.StatusBadRequest, err)
			return
		}
		if err := s.SetScript(sc); err != nil {
			fail(http.StatusBadRequest, err)
			return
		}
	case "/_reset":
		if _, err := readBody(r, rec); err != nil {
			fail(http.StatusBadRequest, err)
			return
		}
		if err := s.Reset(); err != nil {
			fail(http.StatusInternalServerError, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, s.State())
}

func readBody(r *http.Request, rec *LogEntry) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	rec.setBody(body)
	if err != nil {
		return body, fmt.Errorf("read request body: %w", err)
	}
	return body, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(mustMarshal(v), '\n'))
}

// statusWriter records the status for the request log. Unwrap lets
// http.ResponseController reach the connection's Flush.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
