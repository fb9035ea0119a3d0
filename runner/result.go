package runner

import (
	"sync"
	"time"

	"github.com/tai-dev/tai/driver"
)

// Result is the one document `tai run --output json` prints, and the last
// frame of --output stream-json (with "type":"result").
type Result struct {
	Status       string                      `json:"status"` // ok | denied | error | timeout | interrupted | output_closed | no_session | usage
	RunID        string                      `json:"run_id,omitempty"`
	Audit        string                      `json:"audit,omitempty"` // the audit log's path
	StopReason   string                      `json:"stop_reason,omitempty"`
	SessionID    string                      `json:"session_id,omitempty"`
	Resumable    bool                        `json:"resumable"` // the agent can load or resume SessionID later
	Agent        string                      `json:"agent"`
	Driver       string                      `json:"driver"`
	Cwd          string                      `json:"cwd,omitempty"`
	Message      string                      `json:"message"` // the agent's text of the last turn
	Usage        *driver.Usage               `json:"usage,omitempty"`
	Permissions  []driver.PermissionDecision `json:"permissions"`
	Denials      []driver.PermissionDecision `json:"denials"`
	FilesWritten []driver.FileWrite          `json:"files_written"`
	Terminals    []driver.TerminalExit       `json:"terminals"`
	Errors       []driver.ErrorInfo          `json:"errors"`
	// Elicitations are the answers given to the agent's elicitations,
	// secret fields redacted.
	Elicitations []driver.ElicitationAnswer `json:"elicitations,omitempty"`
	DurationMS   int64                      `json:"duration_ms"`
	ExitCode     int                        `json:"exit_code"`
	Error        string                     `json:"error,omitempty"`

	// LastSeq is the sequence number of the last event, so that the result
	// frame can follow it.
	LastSeq uint64 `json:"-"`
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
	mu      sync.Mutex
	res     Result
	message []byte // agent text since the last turn began
	lastID  string // message id of the last agent chunk
	broken  bool   // something other than agent text came since the last chunk
	// starts: where each message id's text begins in message, for a
	// chunk that replaces it.
	starts map[string]int
	modes  []string // the mode ids the session offers, as it started
}

func newCollector() *collector {
	return &collector{res: Result{
		Permissions: []driver.PermissionDecision{}, Denials: []driver.PermissionDecision{},
		FilesWritten: []driver.FileWrite{}, Terminals: []driver.TerminalExit{}, Errors: []driver.ErrorInfo{},
	}}
}

func (c *collector) Emit(ev driver.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch ev.Type {
	case driver.EventSessionStarted:
		c.res.SessionID = ev.Session
		if st := ev.Started; st != nil {
			c.res.Resumable = st.Capabilities.LoadSession || st.Capabilities.ResumeSession
			c.modes = c.modes[:0]
			for _, m := range st.Modes {
				c.modes = append(c.modes, m.ID)
			}
		}
	case driver.EventMessage:
		if ev.Message.Role != driver.RoleAgent {
			c.broken = true
			break
		}
		id := ev.Message.MessageID
		if start, ok := c.starts[id]; ev.Message.Replace && ok {
			// Everything from that message's first chunk on is replaced.
			c.message = append(c.message[:start], ev.Message.Text...)
			c.lastID, c.broken = id, false
			break
		}
		// Separate messages, so that "…first." and "Now…" do not run
		// together: a new message id, or text resumed after a tool call.
		newMsg := id != "" && c.lastID != "" && id != c.lastID
		if (newMsg || c.broken) && len(c.message) > 0 && c.message[len(c.message)-1] != '\n' {
			c.message = append(c.message, "\n\n"...)
		}
		if _, ok := c.starts[id]; id != "" && !ok {
			if c.starts == nil {
				c.starts = map[string]int{}
			}
			c.starts[id] = len(c.message)
		}
		c.lastID, c.broken = id, false
		c.message = append(c.message, ev.Message.Text...)
	case driver.EventToolCall, driver.EventPermissionAsked:
		c.broken = true
	case driver.EventPermissionDecided:
		d := *ev.Decision
		c.res.Permissions = append(c.res.Permissions, d)
		if d.Denied() {
			c.res.Denials = append(c.res.Denials, d)
		}
	case driver.EventFileWritten:
		c.res.FilesWritten = append(c.res.FilesWritten, *ev.File)
	case driver.EventTerminalExited:
		c.res.Terminals = append(c.res.Terminals, *ev.Terminal)
	case driver.EventUsage:
		u := c.usage()
		u.ContextUsed, u.ContextSize = ev.Usage.ContextUsed, ev.Usage.ContextSize
		if ev.Usage.CostAmount > 0 {
			u.CostAmount, u.Currency = ev.Usage.CostAmount, ev.Usage.Currency
		}
	case driver.EventTurnEnded:
		c.res.StopReason = ev.Turn.StopReason
		if tu := ev.Turn.Usage; tu != nil {
			u := c.usage()
			u.InputTokens += tu.InputTokens
			u.OutputTokens += tu.OutputTokens
			u.TotalTokens += tu.TotalTokens
		}
	case driver.EventError:
		c.res.Errors = append(c.res.Errors, *ev.Error)
	case driver.EventElicitationAsked:
		c.broken = true
	case driver.EventElicitationAnswered:
		c.res.Elicitations = append(c.res.Elicitations, *ev.ElicitationAnswer)
	}
}

func (c *collector) usage() *driver.Usage {
	if c.res.Usage == nil {
		c.res.Usage = &driver.Usage{}
	}
	return c.res.Usage
}

// newTurn starts collecting the message of a new turn.
func (c *collector) newTurn() {
	c.mu.Lock()
	c.message, c.lastID, c.broken, c.starts = c.message[:0], "", false, nil
	c.mu.Unlock()
}

// availableModes is what the session said it offers (nil: it did not say).
func (c *collector) availableModes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.modes...)
}

func (c *collector) result() Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.res
	r.Message = string(c.message)
	return r
}
