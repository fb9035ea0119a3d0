package runner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/internal/jsonw"
	"github.com/tai-dev/tai/quota"
	"github.com/tai-dev/tai/sandbox"
)

// Result is the one document `tai run --output json` prints, and the last
// frame of --output stream-json (with "type":"result").
type Result struct {
	Status     string      `json:"status"` // ok | denied | error | timeout | interrupted | output_closed | no_session | usage | parked
	RunID      string      `json:"run_id,omitempty"`
	Audit      string      `json:"audit,omitempty"` // the audit log's path
	StopReason string      `json:"stop_reason,omitempty"`
	SessionID  string      `json:"session_id,omitempty"`
	Resumable  bool        `json:"resumable"` // the agent can load or resume SessionID later
	Agent      string      `json:"agent"`
	Driver     driver.Name `json:"driver"`
	Cwd        string      `json:"cwd,omitempty"`
	Message    string      `json:"message"` // the agent's text of the last turn
	// Turns are every turn's text and stop reason, in order, where the
	// run kept them (Options.TurnResults: tai chat); the last is Message's.
	Turns        []TurnResult                `json:"turns,omitempty"`
	Usage        *driver.Usage               `json:"usage,omitempty"`
	Permissions  []driver.PermissionDecision `json:"permissions"`
	Denials      []driver.PermissionDecision `json:"denials"`
	FilesWritten []driver.FileWrite          `json:"files_written"`
	Terminals    []driver.TerminalExit       `json:"terminals"`
	Errors       []driver.ErrorInfo          `json:"errors"`
	// Elicitations are the answers given to the agent's elicitations,
	// secret fields redacted.
	Elicitations []driver.ElicitationAnswer `json:"elicitations,omitempty"`
	// Sandbox says how the agent was confined (nil: no launcher, or A2A).
	Sandbox *sandbox.Status `json:"sandbox,omitempty"`
	// Confinement says whose sandbox confines the agent: tai's, the
	// agent's own, or none (nil: A2A, which starts no process).
	Confinement *Confinement `json:"confinement,omitempty"`
	DurationMS  int64        `json:"duration_ms"`
	ExitCode    int          `json:"exit_code"`
	Error       string       `json:"error,omitempty"`

	// Parked, on status "parked", says which limit stopped the run, when
	// it resets, whose account it is and the session to resume.
	Parked *Parked `json:"parked,omitempty"`
	// Resumed says how the run took its session back after its agent
	// died while the run waited for a usage limit to reset: session/load,
	// session/resume, --resume, or new_session (a new session told what
	// was done so far). Empty: it did not have to.
	Resumed Resumed `json:"resumed,omitempty"`

	// LastSeq is the sequence number of the last event, so that the result
	// frame can follow it.
	LastSeq uint64 `json:"-"`
}

// TurnResult is one turn of a multi-turn run.
type TurnResult struct {
	Message    string `json:"message"`
	StopReason string `json:"stop_reason,omitempty"`
}

// NotStarted is the result of a run refused before it started (an
// unknown agent, a bad flag value or policy): its status and exit code
// are err's.
func NotStarted(err error) Result {
	code := exitcode.Of(err)
	return Result{Status: statusOf(code), ExitCode: int(code), Error: err.Error(),
		Permissions: []driver.PermissionDecision{}, Denials: []driver.PermissionDecision{},
		FilesWritten: []driver.FileWrite{}, Terminals: []driver.TerminalExit{}, Errors: []driver.ErrorInfo{}}
}

// ResultFrame is Result as a stream-json frame.
type ResultFrame struct {
	Type string    `json:"type"`
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"ts"`
	Result
}

// collector is the sink that builds the Result as events go by.
type collector struct {
	mu  sync.Mutex
	res Result
	// message is the agent text since the last turn began, joined once
	// for the result.
	message rope
	lastID  string // message id of the last agent chunk
	broken  bool   // something other than agent text came since the last chunk
	// starts: where each message id's text begins in message (a byte
	// offset), for a chunk that replaces it.
	starts map[string]int
	modes  []driver.ModeInfo // the modes the session offers, as it started
	// keepTurns: each turn's text is kept in turns when the next begins
	// (Options.TurnResults); turnStop is the running turn's stop reason.
	keepTurns bool
	inTurn    bool
	turns     []TurnResult
	turnStop  string
	// limit is what the turn's last quota_update said was used up (the
	// ACP quotas draft), for a turn that then fails.
	limit *quota.Limit
	now   func() time.Time
	// retry is the limit of the agent's last notice that it retries a
	// refused request (quota.FromRetryNotice), until the agent goes on
	// (a message or a tool call); notices is signalled at each such
	// notice, for the runner's grace.
	retry   *quota.Limit
	notices chan struct{}
}

func newCollector() *collector {
	return &collector{res: Result{
		Permissions: []driver.PermissionDecision{}, Denials: []driver.PermissionDecision{},
		FilesWritten: []driver.FileWrite{}, Terminals: []driver.TerminalExit{}, Errors: []driver.ErrorInfo{},
	}, notices: make(chan struct{}, 1), now: time.Now}
}

func (c *collector) Emit(ev driver.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// One small method per event type keeps this per-event path free of
	// closures and allocations.
	switch ev.Type {
	case driver.EventSessionStarted:
		c.sessionStarted(ev.Session, ev.Started)
	case driver.EventMessage:
		c.retry = nil
		c.messageChunk(ev.Message)
	case driver.EventToolCall, driver.EventPermissionAsked, driver.EventElicitationAsked:
		c.retry = nil
		c.broken = true
	case driver.EventSessionInfo:
		if ev.Info != nil && ev.Info.Meta != nil {
			c.retryNotice(ev.Info.Meta)
		}
	case driver.EventPermissionDecided:
		c.decided(*ev.Decision)
	case driver.EventFileWritten:
		c.res.FilesWritten = append(c.res.FilesWritten, *ev.File)
	case driver.EventTerminalExited:
		c.res.Terminals = append(c.res.Terminals, *ev.Terminal)
	case driver.EventUsage:
		c.usageUpdate(ev.Usage)
	case driver.EventTurnEnded:
		c.turnEnded(ev.Turn)
	case driver.EventError:
		c.res.Errors = append(c.res.Errors, *ev.Error)
	case driver.EventElicitationAnswered:
		c.res.Elicitations = append(c.res.Elicitations, *ev.ElicitationAnswer)
	case driver.EventRaw:
		if ev.Raw != nil && ev.Raw.Kind == quota.UpdateKind {
			c.quotaUpdate(ev.Raw.Data)
		}
	}
}

// quotaUpdate keeps what a quota_update says is used up, and forgets it
// when a later one says nothing is.
func (c *collector) quotaUpdate(data []byte) {
	if l, ok := quota.FromUpdate(data, c.now()); ok {
		c.limit = &l
	} else {
		c.limit = nil
	}
}

// retryNotice keeps the limit of an agent's notice that it retries a
// request refused at a 429, and tells the runner.
func (c *collector) retryNotice(meta map[string]any) {
	l, ok := quota.FromRetryNotice(meta, c.now())
	if !ok {
		return
	}
	c.retry = &l
	select {
	case c.notices <- struct{}{}:
	default: // one pending signal is enough: the runner reads retrying()
	}
}

// retrying is the limit of the running turn's last retry notice, while
// the agent has not gone on since.
func (c *collector) retrying() (quota.Limit, bool) { return c.limitOf(&c.retry) }

// turnLimit is what the running turn's quota_updates last said was used
// up, if anything.
func (c *collector) turnLimit() (quota.Limit, bool) { return c.limitOf(&c.limit) }

// limitOf reads one of the collector's limits under its lock.
func (c *collector) limitOf(p **quota.Limit) (quota.Limit, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if *p == nil {
		return quota.Limit{}, false
	}
	return **p, true
}

// sessionStarted records the session id, whether it can be resumed, and
// the modes it offers.
func (c *collector) sessionStarted(session string, st *driver.SessionStarted) {
	c.res.SessionID = session
	if st == nil {
		return
	}
	c.res.Resumable = st.Capabilities.LoadSession || st.Capabilities.ResumeSession
	c.modes = append(c.modes[:0], st.Modes...)
}

// messageChunk adds an agent text chunk to the message; any other role's
// text breaks it.
func (c *collector) messageChunk(m *driver.MessageChunk) {
	if m.Role != driver.RoleAgent {
		c.broken = true
		return
	}
	id := m.MessageID
	if start, ok := c.starts[id]; m.Replace && ok {
		c.replace(id, start, m.Text)
		return
	}
	// Separate messages, so that "…first." and "Now…" do not run
	// together: a new message id, or text resumed after a tool call.
	newMsg := id != "" && c.lastID != "" && id != c.lastID
	if (newMsg || c.broken) && !c.message.endsNL() {
		c.message.add("\n\n")
	}
	c.markStart(id)
	c.lastID, c.broken = id, false
	c.message.add(m.Text)
}

// replace puts text in place of everything from message id's first
// chunk (at start) on.
func (c *collector) replace(id string, start int, text string) {
	c.message.truncate(start)
	c.message.add(text)
	c.lastID, c.broken = id, false
}

// markStart notes where message id's text begins, the first time it is
// seen, for a later chunk that replaces it.
func (c *collector) markStart(id string) {
	if _, ok := c.starts[id]; id == "" || ok {
		return
	}
	if c.starts == nil {
		c.starts = map[string]int{}
	}
	c.starts[id] = c.message.Len()
}

// decided records a permission decision, and a denial among the denials.
func (c *collector) decided(d driver.PermissionDecision) {
	c.res.Permissions = append(c.res.Permissions, d)
	if d.Denied() {
		c.res.Denials = append(c.res.Denials, d)
	}
}

// usageUpdate takes the context figures and, when given, the cost.
func (c *collector) usageUpdate(eu *driver.Usage) {
	u := c.usage()
	u.ContextUsed, u.ContextSize = eu.ContextUsed, eu.ContextSize
	if eu.CostAmount > 0 {
		u.CostAmount, u.Currency = eu.CostAmount, eu.Currency
	}
}

// turnEnded records the stop reason and adds the turn's tokens.
func (c *collector) turnEnded(t *driver.TurnEnded) {
	c.res.StopReason, c.turnStop = t.StopReason, t.StopReason
	tu := t.Usage
	if tu == nil {
		return
	}
	u := c.usage()
	u.InputTokens += tu.InputTokens
	u.OutputTokens += tu.OutputTokens
	u.TotalTokens += tu.TotalTokens
}

func (c *collector) usage() *driver.Usage {
	if c.res.Usage == nil {
		c.res.Usage = &driver.Usage{}
	}
	return c.res.Usage
}

// resumed records how a relaunched agent took its session back.
func (c *collector) resumed(way Resumed) {
	c.mu.Lock()
	c.res.Resumed = way
	c.mu.Unlock()
}

// newTurn starts collecting the message of a new turn.
func (c *collector) newTurn() {
	c.mu.Lock()
	if c.keepTurns && c.inTurn {
		c.turns = append(c.turns, TurnResult{Message: c.message.String(), StopReason: c.turnStop})
	}
	c.inTurn, c.turnStop, c.limit, c.retry = true, "", nil, nil
	select {
	case <-c.notices: // a notice of the last turn
	default:
	}
	c.message.reset()
	c.lastID, c.broken, c.starts = "", false, nil
	c.mu.Unlock()
}

// turnMessage is the agent's text of the running turn so far.
func (c *collector) turnMessage() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.message.String()
}

// availableModes is what the session said it offers (nil: it did not say).
func (c *collector) availableModes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []string
	for _, m := range c.modes {
		ids = append(ids, m.ID)
	}
	return ids
}

// modeInfos is the modes the session offers, with their names and
// descriptions.
func (c *collector) modeInfos() []driver.ModeInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.modes)
}

func (c *collector) result() Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.res
	r.Message = c.message.String()
	if c.keepTurns && c.inTurn {
		r.Turns = append(slices.Clone(c.turns), TurnResult{Message: r.Message, StopReason: c.turnStop})
	}
	return r
}

// messageMarker stands for the message while the rest of a result is
// encoded; as JSON it is "\u0000tai-message\u0000", which a message
// encodes to only if it is that very text, and it is then written as is.
const messageMarker = "\x00tai-message\x00"

// WriteJSON writes the frame as encoding/json would, with the message
// streamed into place rather than encoded in memory with the rest: a
// 100 MiB message is not copied again on its way out.
func (f ResultFrame) WriteJSON(w *bufio.Writer) error {
	return writeWithMessage(w, &f, &f.Message, "")
}

// WriteIndented writes the result as `--output json` shows it: indented by
// two spaces, the message streamed into place.
func (r Result) WriteIndented(w *bufio.Writer) error {
	if err := writeWithMessage(w, &r, &r.Message, "  "); err != nil {
		return err
	}
	return w.WriteByte('\n')
}

// writeWithMessage encodes v (which holds *msg) with the message replaced
// by a marker, then writes the encoding with the message escaped straight
// into the marker's place.
func writeWithMessage(w *bufio.Writer, v any, msg *string, indent string) error {
	text := *msg
	*msg = messageMarker
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	err := enc.Encode(v)
	*msg = text
	if err != nil {
		return err
	}
	enc2, _ := json.Marshal(messageMarker)
	before, after, ok := bytes.Cut(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), enc2)
	if !ok {
		return errors.New("result: message marker not found")
	}
	if _, err := w.Write(before); err != nil {
		return err
	}
	if err := jsonw.String(w, text); err != nil {
		return err
	}
	_, err = w.Write(after)
	return err
}
