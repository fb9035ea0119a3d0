// Package web serves tai serve's page: every live run and fleet task on
// this host (the local feeds, and a hub's runs), what waits for a human
// first, and the answers to it, from any browser, a phone's included. The
// page is server-rendered (html/template) with a small embedded script;
// its JSON API is the feed's (cap.md §7), one across the local runs. Every
// request needs the user's token (a link once, then an HttpOnly,
// SameSite=Strict cookie) and must come from outside every agent's
// sandbox; every POST is checked for its origin and CSRF token; answers go
// to the runs' feeds as via "web" with the browser's address, which the
// runs' audit logs record.
package web

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/feed"
	"github.com/tai-dev/tai/sandbox"
	"github.com/tai-dev/tai/top"
)

// Options configure the page.
type Options struct {
	Feeds string // the feed directory (default feed.DefaultDir())
	Token string // the user's token (TokenFile)
	// Audit, if set, records every request refused (web.refused).
	Audit  *audit.Log
	Clock  quartz.Clock
	Logger *slog.Logger
	// Confined says whether a connection's peer is inside an agent's
	// sandbox (default sandbox.ConfinedPeer; tests fake one).
	Confined func(net.Conn) (bool, string)
	// Rescan is how often an event stream looks for runs that started
	// (default 1s).
	Rescan time.Duration
	// Remote, if set, lists the runs a hub knows of that have no feed on
	// this host (tai hub --serve): shown, not answered here.
	Remote func(ctx context.Context) ([]feed.State, error)
}

// Server is the page and its API.
type Server struct {
	o    Options
	csrf string
	cop  *http.CrossOriginProtection
	h    http.Handler
}

// cookieName is the cookie that keeps the token.
const cookieName = "tai_web"

// New returns the page's server.
func New(o Options) (*Server, error) {
	if len(o.Token) < 32 {
		return nil, errors.New("web: a token of at least 32 characters is needed")
	}
	if o.Feeds == "" {
		o.Feeds = feed.DefaultDir()
	}
	if o.Clock == nil {
		o.Clock = quartz.NewReal()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Confined == nil {
		o.Confined = sandbox.ConfinedPeer
	}
	if o.Rescan <= 0 {
		o.Rescan = time.Second
	}
	s := &Server{o: o, csrf: csrfToken(o.Token), cop: http.NewCrossOriginProtection()}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.index)
	mux.HandleFunc("GET /runs/{run}", s.runPage)
	mux.HandleFunc("GET /api/runs", s.apiRuns)
	mux.HandleFunc("GET /api/runs/{run}", s.apiRun)
	mux.HandleFunc("GET /api/runs/{run}/events", s.apiRunEvents)
	mux.HandleFunc("GET /api/runs/{run}/transcript", s.apiTranscript)
	mux.HandleFunc("GET /api/events", s.apiEvents)
	mux.HandleFunc("POST /api/runs/{run}/asks/{id}", s.postAsk)
	mux.HandleFunc("POST /api/runs/{run}/questions/{id}", s.postQuestion)
	mux.HandleFunc("POST /api/runs/{run}/elicitations/{id}", s.postElicitation)
	mux.HandleFunc("POST /api/runs/{run}/cancel", s.postCancel)
	mux.HandleFunc("POST /api/runs/{run}/pause", s.postHand(feed.HandPause))
	mux.HandleFunc("POST /api/runs/{run}/release", s.postHand(feed.HandRelease))
	s.h = s.guard(mux)
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.h.ServeHTTP(w, r) }

// ConnContext is the http.Server's ConnContext: it keeps each connection
// for the peer check (a TLS connection's own TCP connection: the peer is
// found by its socket).
func (s *Server) ConnContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	return context.WithValue(ctx, connKey{}, c)
}

type connKey struct{}

// Refusal is a request the page refused, as the audit log records it.
type Refusal struct {
	Client string `json:"client"`
	Method string `json:"method"`
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

func (s *Server) refuse(w http.ResponseWriter, r *http.Request, code int, reason, msg string) {
	ref := Refusal{Client: r.RemoteAddr, Method: r.Method, Path: r.URL.Path, Reason: reason}
	s.o.Logger.Warn("web: refused a request", "client", ref.Client, "method", ref.Method, "path", ref.Path, "reason", reason)
	if s.o.Audit != nil {
		_ = s.o.Audit.Append(audit.KindWebRefused, "", ref)
	}
	if code == http.StatusUnauthorized && wantsHTML(r) {
		s.page(w, code, "login", pageData{Note: msg})
		return
	}
	httpError(w, code, msg)
}

// guard admits a request from outside every sandbox, with the token (the
// link's ?token=, which sets the cookie; the cookie; or a bearer header),
// and a POST only from this page's origin with its CSRF token.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setSecurityHeaders(w)
		c, _ := r.Context().Value(connKey{}).(net.Conn)
		if c == nil {
			s.refuse(w, r, http.StatusForbidden, "the connection is unknown", "the page answers no agent")
			return
		}
		if in, why := s.o.Confined(c); in {
			s.refuse(w, r, http.StatusForbidden, "from inside an agent's sandbox: "+why, "the page answers no agent")
			return
		}
		if strings.HasPrefix(r.URL.Path, "/static/") && r.Method == http.MethodGet {
			serveAsset(w, r) // the script and style: nothing secret
			return
		}
		if q := r.URL.Query().Get("token"); q != "" && r.Method == http.MethodGet {
			if !s.valid(q) {
				s.refuse(w, r, http.StatusUnauthorized, "a wrong token in the link", "this link's token is not this tai's: open the link tai serve printed")
				return
			}
			s.signIn(w, r)
			return
		}
		bearer, isBearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		ck, _ := r.Cookie(cookieName)
		switch {
		case isBearer && s.valid(bearer):
		case !isBearer && ck != nil && s.valid(ck.Value):
		default:
			s.refuse(w, r, http.StatusUnauthorized, "no valid token", "this page needs the link tai serve printed (it holds your token)")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if err := s.cop.Check(r); err != nil {
				s.refuse(w, r, http.StatusForbidden, "a cross-origin request: "+err.Error(), "a request from another site is refused")
				return
			}
			// A bearer header is no ambient credential: a page of another
			// site cannot send it. The cookie is: its POSTs carry the CSRF
			// token too.
			if !isBearer {
				got := r.Header.Get("X-CSRF-Token")
				if got == "" && isForm(r) {
					got = r.PostFormValue("csrf")
				}
				if subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) != 1 {
					s.refuse(w, r, http.StatusForbidden, "no valid CSRF token", "this form is not this page's (reload the page)")
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) valid(tok string) bool {
	return subtle.ConstantTimeCompare([]byte(tok), []byte(s.o.Token)) == 1
}

// signIn keeps the link's token in the cookie and moves on to the page
// without it. Not a redirect: a SameSite=Strict cookie is not sent on a
// redirect that another site's link started (a phone's chat app), so the
// page navigates itself, same-site.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.o.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil, MaxAge: 400 * 24 * 3600})
	q := r.URL.Query()
	q.Del("token")
	next := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
	s.page(w, http.StatusOK, "signin", pageData{Next: next.String()})
}

func setSecurityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "+
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer") // the link's token never leaves in a Referer
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
}

func wantsHTML(r *http.Request) bool {
	return !strings.HasPrefix(r.URL.Path, "/api/") && strings.Contains(r.Header.Get("Accept"), "text/html")
}

func isForm(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	return strings.HasPrefix(ct, "application/x-www-form-urlencoded") || strings.HasPrefix(ct, "multipart/form-data")
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	_ = enc.Encode(v)
}

// Runs is GET /api/runs: every live run's state, and the attention queue
// across them (what blocks first, each oldest first).
type Runs struct {
	Runs   []feed.State `json:"runs"`
	Remote []feed.State `json:"remote,omitempty"` // a hub's runs with no feed here: shown, answered at their coordinator
	Queue  []QueueItem  `json:"queue"`
}

// QueueItem is one row of the attention queue.
type QueueItem struct {
	Kind  string    `json:"kind"` // ask, question, elicitation, budget, error, done
	Run   string    `json:"run"`
	Task  string    `json:"task,omitempty"`
	Agent string    `json:"agent,omitempty"`
	Title string    `json:"title"`
	Since time.Time `json:"since"`
	// ID is the item's id in its run's feed (an ask's, question's or
	// elicitation's): POST /api/runs/RUN/asks/ID and so on.
	ID          string            `json:"id,omitempty"`
	Ask         *feed.Ask         `json:"ask,omitempty"`
	Question    *feed.Question    `json:"question,omitempty"`
	Elicitation *feed.Elicitation `json:"elicitation,omitempty"`
	cwd         string
}

// Blocks says whether the run waits on this item.
func (q QueueItem) Blocks() bool { return q.Ask != nil || q.Question != nil || q.Elicitation != nil }

func (s *Server) runs(ctx context.Context) (Runs, error) {
	states, err := top.FeedSource{Dir: s.o.Feeds}.Runs(ctx)
	if err != nil {
		return Runs{}, err
	}
	out := Runs{Runs: states}
	if out.Runs == nil {
		out.Runs = []feed.State{}
	}
	if s.o.Remote != nil {
		rem, err := s.o.Remote(ctx)
		if err != nil {
			s.o.Logger.Warn("web: the hub's runs", "err", err)
		}
		local := map[string]bool{}
		for _, st := range states {
			local[st.Run] = true
		}
		for _, st := range rem {
			if !local[st.Run] {
				out.Remote = append(out.Remote, st)
			}
		}
	}
	for _, it := range top.Queue(states) {
		q := QueueItem{Kind: strings.ToLower(string(it.Chip)), Run: it.Run, Task: it.Task, Agent: it.Agent, Title: it.Title, Since: it.Since,
			Ask: it.Ask, Question: it.Question, Elicitation: it.Elicit, cwd: it.Cwd}
		switch {
		case it.Ask != nil:
			q.ID = it.Ask.ID
		case it.Question != nil:
			q.ID = it.Question.ID
		case it.Elicit != nil:
			q.Kind, q.ID = "elicitation", it.Elicit.ID
		}
		out.Queue = append(out.Queue, q)
	}
	// What blocks a run first; each part stays oldest first.
	sort.SliceStable(out.Queue, func(i, j int) bool { return out.Queue[i].Blocks() && !out.Queue[j].Blocks() })
	if out.Queue == nil {
		out.Queue = []QueueItem{}
	}
	return out, nil
}

// client is a client of run's feed, answering for the browser at from.
func (s *Server) client(run, from string) (*feed.Client, error) {
	eps, err := feed.List(s.o.Feeds)
	if err != nil {
		return nil, err
	}
	for _, ep := range eps {
		if ep.Run == run {
			c := feed.Dial(ep.Path)
			c.From = from
			return c, nil
		}
	}
	return nil, &feed.StatusError{Code: http.StatusNotFound, Msg: fmt.Sprintf("run %s is not running on this host", run)}
}

func (s *Server) apiRuns(w http.ResponseWriter, r *http.Request) {
	rs, err := s.runs(r.Context())
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, rs)
}

func (s *Server) apiRun(w http.ResponseWriter, r *http.Request) {
	c, err := s.client(r.PathValue("run"), r.RemoteAddr)
	if err != nil {
		feedError(w, err)
		return
	}
	defer c.Close()
	st, err := c.State(r.Context())
	if err != nil {
		feedError(w, err)
		return
	}
	writeJSON(w, st)
}

// feedError passes a feed's refusal on (its code and message), else 502.
func feedError(w http.ResponseWriter, err error) {
	var se *feed.StatusError
	if errors.As(err, &se) {
		httpError(w, se.Code, se.Msg)
		return
	}
	httpError(w, http.StatusBadGateway, err.Error())
}
