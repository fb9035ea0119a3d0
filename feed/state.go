package feed

import (
	"encoding/json"
	"os"
	"strings"
	"time"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/render"
)

// State is GET /state: what the run is doing now.
type State struct {
	Run          string        `json:"run"`
	Kind         Kind          `json:"kind"`
	PID          int           `json:"pid"`
	Started      time.Time     `json:"started"`
	LastEventID  uint64        `json:"last_event_id"` // resume /events from here to miss nothing after this snapshot
	Sessions     []Session     `json:"sessions"`
	Tasks        []Task        `json:"tasks,omitempty"`
	Asks         []Ask         `json:"asks"`         // pending, oldest first
	Questions    []Question    `json:"questions"`    // pending, oldest first
	Elicitations []Elicitation `json:"elicitations"` // pending, oldest first
	// Budget is the fleet's: its limits and what it used; nil without one.
	Budget *Budget `json:"budget,omitempty"`
}

// SessionState is a session's coarse state.
type SessionState string

// Session states.
const (
	StateWorking SessionState = "working"
	StateIdle    SessionState = "idle"
	StateWaiting SessionState = "waiting" // on a human
	StateExited  SessionState = "exited"
)

// Session is one agent session of the run.
type Session struct {
	ID        string       `json:"id"`
	Task      string       `json:"task,omitempty"`
	Agent     string       `json:"agent,omitempty"`
	Driver    string       `json:"driver,omitempty"`
	Model     string       `json:"model,omitempty"`
	Cwd       string       `json:"cwd,omitempty"`
	State     SessionState `json:"state"`
	Activity  string       `json:"activity,omitempty"` // the latest tool call or message line
	Started   time.Time    `json:"started"`
	LastEvent time.Time    `json:"last_event"`
	Tokens    int64        `json:"tokens"`
	Cost      float64      `json:"cost,omitempty"`
	Currency  string       `json:"currency,omitempty"`
	Added     int          `json:"added"`   // diff lines added by its edits
	Removed   int          `json:"removed"` // and removed
	Error     string       `json:"error,omitempty"`

	diffs map[string][2]int // tool call → its diff's +/-, as the latest upsert says
}

// Task is a fleet task, as the fleet last reported it.
type Task struct {
	ID      string    `json:"id"`
	Agent   string    `json:"agent,omitempty"`
	Status  string    `json:"status"`
	Detail  string    `json:"detail,omitempty"`
	Branch  string    `json:"branch,omitempty"`
	Updated time.Time `json:"updated"`
	// Budget is the task's: what it may spend (its own budget, or its
	// share of the fleet's) and what it spent.
	Budget *Budget `json:"budget,omitempty"`
	// Account is whose usage limit the task spends; ResetsAt, while the
	// task is parked, is when its account's limit clears (zero: paused
	// by hand, until tai fleet resume). tai top counts down to it.
	Account  string    `json:"account,omitempty"`
	ResetsAt time.Time `json:"resets_at,omitzero"`
}

// Limits are budget limits; zero means none.
type Limits struct {
	Tokens     int64   `json:"tokens,omitempty"`
	Turns      int     `json:"turns,omitempty"`
	Cost       float64 `json:"cost,omitempty"`
	WallTimeMS int64   `json:"wall_time_ms,omitempty"`
}

// Usage is what was spent against Limits.
type Usage struct {
	Tokens int64   `json:"tokens"`
	Turns  int     `json:"turns"`
	Cost   float64 `json:"cost"`
}

// Budget is a run's, fleet's or task's limits and what it used of them.
type Budget struct {
	Limit Limits `json:"limit"`
	Used  Usage  `json:"used"`
	// Over names the limits used up (tokens, turns, cost): the fleet or
	// task is stopped, or its next task blocked, at its budget.
	Over []string `json:"over,omitempty"`
	// Updated is when it was last reported.
	Updated time.Time `json:"updated,omitzero"`
}

// Exhausted fills in Over from the limits and the usage.
func (b *Budget) Exhausted() []string {
	b.Over = nil
	if b.Limit.Tokens > 0 && b.Used.Tokens >= b.Limit.Tokens {
		b.Over = append(b.Over, "tokens")
	}
	if b.Limit.Turns > 0 && b.Used.Turns >= b.Limit.Turns {
		b.Over = append(b.Over, "turns")
	}
	if b.Limit.Cost > 0 && b.Used.Cost >= b.Limit.Cost {
		b.Over = append(b.Over, "cost")
	}
	return b.Over
}

// maxDiffText bounds the files whose edits are counted in +/-.
const maxDiffText = 1 << 20

type state struct {
	sessions map[sessionKey]*Session
	order    []sessionKey
	tasks    map[string]*Task
	torder   []string
}

// sessionKey is a session of a task (an empty task outside a fleet).
type sessionKey struct{ task, session string }

func (s *state) init() {
	s.sessions, s.tasks = map[sessionKey]*Session{}, map[string]*Task{}
}

func (s *state) event(task string, ev driver.Event) {
	ss := s.session(task, ev.Session, ev.Time)
	ss.LastEvent = ev.Time
	switch ev.Type {
	case driver.EventSessionStarted:
		st := ev.Started
		ss.Agent, ss.Driver, ss.Cwd = st.Agent, string(st.Driver), st.Cwd
		ss.model(st.Config)
	case driver.EventConfigOptions:
		ss.model(ev.Config)
	case driver.EventMessage:
		ss.message(ev.Message)
	case driver.EventToolCall:
		ss.toolCall(ev.ToolCall)
	case driver.EventPermissionAsked:
		ss.State = StateWaiting
	case driver.EventPermissionDecided:
		ss.State = StateWorking
	case driver.EventStatus:
		ss.State = SessionState(ev.Status.State)
	case driver.EventUsage:
		if ev.Usage.CostAmount > 0 {
			ss.Cost, ss.Currency = ev.Usage.CostAmount, ev.Usage.Currency
		}
	case driver.EventTurnEnded:
		ss.turnEnded(ev.Turn)
	case driver.EventError:
		ss.Error = ev.Error.Message
	case driver.EventProcessExited:
		ss.State = StateExited
	}
}

// session is task's session id, begun (working) at its first event, at.
func (s *state) session(task, id string, at time.Time) *Session {
	key := sessionKey{task, id}
	ss := s.sessions[key]
	if ss == nil {
		ss = &Session{ID: id, Task: task, State: StateWorking, Started: at, diffs: map[string][2]int{}}
		s.sessions[key] = ss
		s.order = append(s.order, key)
	}
	return ss
}

// message shows the last line of the agent's text as the activity.
func (ss *Session) message(m *driver.MessageChunk) {
	if m.Role == driver.RoleAgent {
		if l := lastLine(m.Text); l != "" {
			ss.Activity = l
		}
	}
	ss.State = StateWorking
}

// toolCall shows the tool call as the activity and counts its edits in
// +/-; a call's later updates replace its earlier count.
func (ss *Session) toolCall(tc *driver.ToolCall) {
	ss.Activity = strings.TrimSpace(tc.Title)
	var add, rm int
	for _, c := range tc.Content {
		a, r := diffStat(c)
		add, rm = add+a, rm+r
	}
	if add+rm > 0 {
		old := ss.diffs[tc.ID]
		ss.Added += add - old[0]
		ss.Removed += rm - old[1]
		ss.diffs[tc.ID] = [2]int{add, rm}
	}
	ss.State = StateWorking
}

// diffStat counts the lines a diff content adds and removes (0, 0 for
// other content).
func diffStat(c driver.ToolContent) (add, rm int) {
	if c.Type != "diff" || len(c.NewText) > maxDiffText {
		return 0, 0 // a huge file's +/- is not worth its diff on every update
	}
	lines, err := render.UnifiedDiff(c, "") // counted, not shown
	if err != nil {
		return 0, 0
	}
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
		case strings.HasPrefix(l, "+"):
			add++
		case strings.HasPrefix(l, "-"):
			rm++
		}
	}
	return add, rm
}

// turnEnded adds the turn's tokens (input plus output when no total is
// given) and makes the session idle.
func (ss *Session) turnEnded(t *driver.TurnEnded) {
	if u := t.Usage; u != nil {
		n := u.TotalTokens
		if n == 0 {
			n = u.InputTokens + u.OutputTokens
		}
		ss.Tokens += n
	}
	ss.State = StateIdle
}

func (ss *Session) model(opts []driver.ConfigOption) {
	for _, o := range opts {
		var v string
		if (o.Category == "model" || o.ID == "model") && json.Unmarshal(o.CurrentValue, &v) == nil {
			ss.Model = v
		}
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[i+1:])
	}
	return s
}

// SetTask records a fleet task's status for /state.
func (s *Server) SetTask(t Task) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.st.tasks[t.ID]; !ok {
		s.st.torder = append(s.st.torder, t.ID)
	}
	if t.Updated.IsZero() {
		t.Updated = s.o.Clock.Now().UTC()
	}
	if t.Budget != nil {
		b := *t.Budget
		b.Exhausted()
		t.Budget = &b
	}
	s.st.tasks[t.ID] = &t
}

// SetBudget records the fleet's (or run's) budget for /state.
func (s *Server) SetBudget(b Budget) {
	b.Exhausted()
	s.mu.Lock()
	defer s.mu.Unlock()
	if b.Updated.IsZero() {
		b.Updated = s.o.Clock.Now().UTC()
	}
	s.budget = &b
}

// Snapshot is the state /state serves.
func (s *Server) Snapshot() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := State{Run: s.o.Run, Kind: s.o.Kind, PID: os.Getpid(), Started: s.started, LastEventID: s.frames.next + uint64(s.lazy.n),
		Sessions: []Session{}, Asks: []Ask{}, Questions: []Question{}, Elicitations: []Elicitation{}}
	for _, k := range s.st.order {
		ss := *s.st.sessions[k]
		ss.diffs = nil
		st.Sessions = append(st.Sessions, ss)
	}
	for _, id := range s.st.torder {
		st.Tasks = append(st.Tasks, *s.st.tasks[id])
	}
	st.Asks = append(st.Asks, s.asks.list()...)
	st.Questions = append(st.Questions, s.questions.list()...)
	st.Elicitations = append(st.Elicitations, s.elicits.list()...)
	if s.budget != nil {
		b := *s.budget
		st.Budget = &b
	}
	return st
}
