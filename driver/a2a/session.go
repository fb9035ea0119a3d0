// Package a2a is tai's driver for agents served over A2A (Agent2Agent):
// JSON-RPC 2.0 over HTTP, streamed as server-sent events. It speaks the
// three wire dialects a client meets: 1.0 (SendMessage, TASK_STATE_*
// enums, {statusUpdate:…} wrappers, the A2A-Version header), 0.2/0.3
// (message/send, `kind` discriminators) and the 2025 draft (tasks/send,
// client-owned task ids). The dialect is read off the agent card and
// confirmed by error: a method the endpoint does not know moves the
// session to the next dialect, 1.0 → 0.3 → draft, and the one that answers
// is kept for the session.
//
// The agent is a URL, not a process: Launch takes it from Argv[0], which
// must start with http:// or https://. It is the agent's base URL, whose
// card tai reads from /.well-known/agent-card.json (falling back to
// /.well-known/agent.json), or the URL of the card itself when its path
// ends in ".json". An agent serving no card is tried at that URL in each
// dialect.
//
// A tai session is an A2A context (contextId), a turn is a task. A turn
// ends when its task does: completed is end_turn, canceled is cancelled,
// failed and rejected are a *TaskError, auth-required is an
// *driver.AuthRequiredError. The agent's usage or rate limit is a
// *quota.Error, read with quota's readers: an HTTP 429 (or 503 with
// Retry-After) on any call, a task that failed or was rejected saying so
// in its status message or metadata. input-required is how an A2A agent asks: a
// question offering yes/no is put to the Host's Decider as a permission
// request and answered in the same task, so tai's policy decides and the
// decision is audited; any other question ends the turn with stop reason
// input_required, and the next Prompt answers it.
//
// Like every driver it only translates: it decides nothing itself.
package a2a

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coder/quartz"
	"github.com/google/uuid"

	"github.com/tai-dev/tai/driver"
)

// Name is this driver's name in presets and the capability manifest.
const Name = driver.A2A

// Features are what the capability manifest lists for this driver.
var Features = []string{
	"agent_card", "dialects:" + strings.Join(Dialects(), ","), "negotiate_by_error",
	"message/stream", "message/send", "multi_turn", "resume_context",
	"artifact_chunks", "input_required_permission", "input_required_question", "auth_required",
	"tasks/cancel", "tasks/resubscribe", "tasks/get_poll", "resource", "resource_link",
}

// Stop reasons A2A adds to driver's: the task's state when it is not one
// the common model names.
const (
	// StopInputRequired: the agent asked a question tai's policy cannot
	// answer; the question was the turn's last message, and the next
	// Prompt answers it.
	StopInputRequired = "input_required"
	// StopAuthRequired: the agent wants credentials (Prompt returns a
	// *driver.AuthRequiredError).
	StopAuthRequired = "auth_required"
	// StopFailed and StopRejected: the task failed or the agent refused
	// it (Prompt returns a *TaskError).
	StopFailed   = "failed"
	StopRejected = "rejected"
)

// TaskError is a task that ended failed or rejected (or in a state tai
// does not know), with the agent's status message.
type TaskError struct {
	TaskID  string
	State   State
	Message string
}

// LimitChecked: the driver read the task's message and metadata for a
// limit (a task at its limit is a *quota.Error): quota.FromError must not
// read this error's text again, whose task id may hold "429".
func (*TaskError) LimitChecked() {}

func (e *TaskError) Error() string {
	s := fmt.Sprintf("a2a: the agent's task %s ended %s", e.TaskID, e.State)
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// errClosed: the session was closed by tai.
var errClosed = errors.New("a2a: session closed")

// Options tune a session beyond driver.Launch.
type Options struct {
	// Dialect pins the dialect ("1.0", "0.3", "draft") instead of
	// negotiating.
	Dialect string
	// HTTPClient makes the requests; default a client of its own, whose
	// idle connections Close drops.
	HTTPClient *http.Client
	// PollInterval spaces GetTask polls when a task must be followed
	// without a stream. Default 1s.
	PollInterval time.Duration
	// Resubscribes bounds reconnects after a dropped stream, per turn,
	// before tai polls instead. Default 3.
	Resubscribes int
	// CancelTimeout bounds the CancelTask tai sends on its own (a turn
	// abandoned by its context, Close). Default 5s.
	CancelTimeout time.Duration
	// NewID makes message and draft ids (tests); default a random UUID.
	NewID func() string
}

// Session is a live A2A session: one context with one agent.
type Session struct {
	l     driver.Launch
	o     Options
	log   *slog.Logger
	clock quartz.Clock
	c     *client
	own   *http.Transport // nil when the caller gave the HTTP client

	card      *Card
	eps       []endpoint
	streaming bool
	draftSess string

	ctx  context.Context // the session's life; Close ends it
	stop context.CancelFunc
	bg   sync.WaitGroup // cancels sent in the background

	mu        sync.Mutex
	epIdx     int
	confirmed bool // the dialect at epIdx answered: no more negotiation
	contextID string
	started   bool
	turn      *turn       // the running turn, nil between turns
	inputTask string      // an input-required task the next prompt answers
	refused   *outMessage // a message refused at the limit, sent again with the next prompt
	closed    bool

	idle      chan struct{} // holds a token while no turn runs
	exited    chan struct{}
	closeOnce sync.Once
}

// Launch resolves the agent's card and returns a session ready for its
// first prompt. session.started follows once the agent has named the
// context (its first answer), or at once when resuming one.
func Launch(ctx context.Context, l driver.Launch) (*Session, error) {
	return Start(ctx, l, Options{})
}

// Start is Launch with driver-specific options.
func Start(ctx context.Context, l driver.Launch, o Options) (*Session, error) {
	if len(l.Argv) == 0 {
		return nil, fmt.Errorf("%w: a2a needs the agent's URL", driver.ErrBadValue)
	}
	raw := l.Argv[0]
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: the a2a agent must be an http:// or https:// URL, not %q", driver.ErrBadValue, raw)
	}
	if len(l.Argv) > 1 {
		return nil, fmt.Errorf("%w: the a2a driver takes one URL, got extra arguments %q", driver.ErrBadValue, l.Argv[1:])
	}
	if l.Logger == nil {
		l.Logger = slog.New(slog.DiscardHandler)
	}
	if l.Clock == nil {
		l.Clock = quartz.NewReal()
	}
	if l.Agent == "" {
		l.Agent = raw
	}
	if l.MaxLineBytes <= 0 {
		l.MaxLineBytes = defaultMaxFrame
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.Resubscribes <= 0 {
		o.Resubscribes = 3
	}
	if o.CancelTimeout <= 0 {
		o.CancelTimeout = 5 * time.Second
	}
	if o.NewID == nil {
		o.NewID = uuid.NewString
	}
	s := &Session{l: l, o: o, log: l.Logger.With("agent", l.Agent, "driver", Name), clock: l.Clock,
		exited: make(chan struct{}), idle: make(chan struct{}, 1), contextID: l.ResumeID, draftSess: orDefault(l.ResumeID, o.NewID())}
	s.idle <- struct{}{}
	hc := o.HTTPClient
	if hc == nil {
		s.own = http.DefaultTransport.(*http.Transport).Clone()
		hc = &http.Client{Transport: s.own}
	}
	s.c = &client{hc: hc, trace: l.Trace, max: l.MaxLineBytes, now: func() time.Time { return l.Clock.Now("a2a", "limit") }}
	s.ctx, s.stop = context.WithCancel(context.Background())

	if err := s.resolve(ctx, u); err != nil {
		s.shutdown()
		return nil, err
	}
	if o.Dialect != "" {
		d, ok := lookupDialect(o.Dialect)
		if !ok {
			s.shutdown()
			return nil, fmt.Errorf("%w: no A2A dialect %q (choose from: %s)", driver.ErrBadValue, o.Dialect, strings.Join(Dialects(), ", "))
		}
		ep := endpoint{d: d, url: u.String()}
		for _, e := range s.eps {
			if e.d == d {
				ep = e
				break
			}
		}
		s.eps, s.confirmed = []endpoint{ep}, true
	}
	if l.ResumeID != "" {
		s.mu.Lock()
		s.startedLocked(true)
		s.mu.Unlock()
	}
	return s, nil
}

// resolve reads the agent card and picks the endpoints to negotiate over.
func (s *Session) resolve(ctx context.Context, u *url.URL) error {
	var paths []string
	if strings.HasSuffix(u.Path, ".json") {
		paths = []string{u.String()}
	} else {
		base := strings.TrimSuffix(u.String(), "/")
		paths = []string{base + CardPath, base + LegacyCardPath}
	}
	for _, p := range paths {
		b, err := s.fetchCard(ctx, p)
		if errors.Is(err, errNoCard) {
			continue
		}
		if err != nil {
			return err
		}
		card, err := parseCard(b)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		eps, err := card.endpoints(p)
		if err != nil {
			return err
		}
		s.card, s.eps, s.streaming = card, eps, card.Capabilities.Streaming
		s.log.Debug("agent card", "url", p, "shape", card.Classify(), "streaming", s.streaming, "first", eps[0].d.name, "at", eps[0].url)
		return nil
	}
	if len(paths) == 1 {
		return fmt.Errorf("%w: no agent card at %s", driver.ErrBadValue, paths[0])
	}
	// No card: the URL is the endpoint; without a card tai cannot know the
	// agent streams, so it sends blocking requests.
	s.log.Debug("no agent card; negotiating at the URL", "url", u.String())
	s.eps = noCardEndpoints(u.String())
	return nil
}

var errNoCard = errors.New("no agent card")

func (s *Session) fetchCard(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("a2a: agent card %s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("a2a: reading the agent card %s: %w", u, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, errNoCard
	case resp.StatusCode/100 != 2:
		return nil, &HTTPError{Method: "GET agent card", URL: u, Status: resp.StatusCode}
	}
	return s.c.readBody("agent card", resp.Body)
}

// ep is the endpoint of the session's current dialect.
func (s *Session) ep() endpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.eps[s.epIdx]
}

// negotiate runs fn in the session's dialect. Until a dialect has
// answered, an error saying the endpoint does not speak it moves on to the
// next; the first that answers is kept for the session.
func (s *Session) negotiate(fn func(endpoint) error) error {
	s.mu.Lock()
	i, fixed := s.epIdx, s.confirmed
	s.mu.Unlock()
	for {
		ep := s.eps[i]
		err := fn(ep)
		if err != nil && !fixed && notSpoken(err) && i+1 < len(s.eps) {
			s.log.Debug("dialect not spoken; trying the next", "dialect", ep.d.name, "url", ep.url, "err", err)
			i++
			continue
		}
		if err == nil && !fixed {
			s.mu.Lock()
			s.epIdx, s.confirmed = i, true
			s.mu.Unlock()
			s.log.Debug("dialect confirmed", "dialect", ep.d.name, "url", ep.url)
		}
		return err
	}
}

// Dialect is the session's dialect: the confirmed one once the agent
// answered, the card's first choice before.
func (s *Session) Dialect() string { return s.ep().d.name }

// Card is the agent card read at launch (nil when the agent serves none).
func (s *Session) Card() *Card { return s.card }

// startedLocked emits session.started once; s.mu is held.
func (s *Session) startedLocked(resumed bool) {
	if s.started {
		return
	}
	s.started = true
	st := &driver.SessionStarted{Agent: s.l.Agent, Driver: Name, Cwd: s.l.Cwd, Protocol: "a2a/" + s.eps[s.epIdx].d.name,
		Resumed: resumed, Capabilities: capabilities}
	if s.card != nil {
		st.AgentName, st.AgentVersion = s.card.Name, s.card.Version
	}
	s.l.Host.Sink.Emit(driver.Event{Type: driver.EventSessionStarted, Session: s.contextID, Started: st})
}

// capabilities: a context can be continued by id (ResumeID); nothing else
// of the common model's optional set exists in A2A.
var capabilities = driver.Capabilities{ResumeSession: true}

func (s *Session) emit(ev driver.Event) {
	if ev.Session == "" {
		ev.Session = s.ID()
	}
	s.l.Host.Sink.Emit(ev)
}

// ID is the A2A contextId: the agent's, known from its first answer (or
// the ResumeID); empty before.
func (s *Session) ID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.contextID
}

// Capabilities says what the session supports.
func (s *Session) Capabilities() driver.Capabilities { return capabilities }

// Cancel cancels the running turn's task (CancelTask / tasks/cancel);
// Prompt then returns with StopCancelled. Between turns, or repeated, it
// does nothing. Asked before the agent named the task, the cancel goes out
// as soon as a stream names it; a blocking send, which names it only at
// the end, is dropped instead (an error event says the agent was not
// told).
func (s *Session) Cancel(ctx context.Context, cause error) error {
	s.mu.Lock()
	t := s.turn
	if t == nil {
		s.mu.Unlock()
		return nil
	}
	t.cancelled = true
	if t.cause == nil {
		t.cause = cause
	}
	id := t.taskID
	send := id != "" && !t.cancelSent
	t.cancelSent = t.cancelSent || send
	s.mu.Unlock()
	if id == "" && !s.streaming {
		// A blocking send names its task only when it is over: drop it.
		t.abort(errCancelUnsent)
		return nil
	}
	if !send {
		return nil
	}
	return s.cancelTask(ctx, t, id)
}

// cancelTask sends CancelTask. An agent that confirms the cancel (the
// task it returns is canceled) ends the turn even if its stream never
// says so.
func (s *Session) cancelTask(ctx context.Context, t *turn, id string) error {
	var res Event
	err := s.negotiate(func(ep endpoint) error {
		raw, err := s.c.call(ctx, ep, ep.d.cancel, ep.d.taskParams(id, ep.tenant))
		if err != nil {
			return err
		}
		res, err = DecodeEvent(raw)
		return err
	})
	switch remoteCode(err) {
	case codeTaskNotCancelable:
		return nil // already over: the turn ends by itself
	case codeTaskNotFound:
		return fmt.Errorf("a2a: cancel task %s: %w", id, err)
	}
	if err != nil {
		return fmt.Errorf("a2a: cancel task %s: %w", id, err)
	}
	if res.Task != nil && res.Task.Status.State == StateCanceled && t != nil {
		t.confirmCancel()
	}
	return nil
}

// cancelInBackground sends a cancel tai owes the agent (a turn abandoned,
// a cancel asked before the task id was known), bounded by CancelTimeout
// and the session's life.
func (s *Session) cancelInBackground(t *turn, id string) {
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		ctx, cancel := s.clockTimeout(s.ctx, s.o.CancelTimeout)
		defer cancel()
		if err := s.cancelTask(ctx, t, id); err != nil {
			s.log.Debug("cancelling the task", "task", id, "err", err)
		}
	}()
}

// clockTimeout is context.WithTimeout on the session's clock.
func (s *Session) clockTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	t := s.clock.AfterFunc(d, func() { cancel(context.DeadlineExceeded) }, "a2a", "timeout")
	return ctx, func() {
		t.Stop()
		cancel(context.Canceled)
	}
}

// SetMode: A2A has no modes.
func (s *Session) SetMode(context.Context, string) error {
	return fmt.Errorf("--mode: %w: A2A has no session modes", driver.ErrUnsupported)
}

// SetModel: A2A has no model selection.
func (s *Session) SetModel(context.Context, string) error {
	return fmt.Errorf("--model: %w: A2A has no model selection; configure the agent itself", driver.ErrUnsupported)
}

// SetConfigOption: A2A has no config options.
func (s *Session) SetConfigOption(_ context.Context, id, _ string) error {
	return fmt.Errorf("%w: A2A has no config option %q", driver.ErrUnsupported, id)
}

// CurrentMode is always "": A2A has no modes.
func (s *Session) CurrentMode() string { return "" }

// Pid is 0: the agent is an HTTP endpoint, not a process of tai's.
func (s *Session) Pid() int { return 0 }

// Exited is closed by Close: tai cannot see a remote agent end.
func (s *Session) Exited() <-chan struct{} { return s.exited }

// Close ends the session: the running task is cancelled (bounded by ctx
// and CancelTimeout), in-flight requests are dropped, and Close waits,
// within ctx, for the running Prompt to return and the background cancels
// to finish. The remote context itself lives on (A2A has no way to end
// one). It is idempotent.
func (s *Session) Close(ctx context.Context) error {
	var err error
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		t := s.turn
		var id string
		if t != nil && t.taskID != "" && !t.cancelSent {
			id, t.cancelSent, t.cancelled = t.taskID, true, true
		}
		s.mu.Unlock()
		if id != "" {
			cctx, cancel := s.clockTimeout(ctx, s.o.CancelTimeout)
			if cerr := s.cancelTask(cctx, t, id); cerr != nil {
				s.log.Debug("cancelling the task at close", "task", id, "err", cerr)
			}
			cancel()
		}
		s.stop()
		done := make(chan struct{})
		go func() {
			defer close(done)
			<-s.idle // the running Prompt returned
			s.bg.Wait()
		}()
		select {
		case <-done:
		case <-ctx.Done():
			err = fmt.Errorf("a2a: close: %w", ctx.Err())
		}
		s.shutdown()
	})
	return err
}

// shutdown releases what the session holds.
func (s *Session) shutdown() {
	s.stop()
	if s.own != nil {
		s.own.CloseIdleConnections()
	}
	select {
	case <-s.exited:
	default:
		close(s.exited)
	}
}

var _ driver.Session = (*Session)(nil)
