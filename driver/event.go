package driver

import (
	"encoding/json"
	"time"
)

// EventType names an event. Values are the `type` of tai's stream-json
// frames (see cap.md); readers must skip types they do not know.
type EventType string

// Event types. Tool calls, plans, modes, commands and config options are
// upserts: each event carries the full current state for its key, so a
// consumer that only keeps the latest event per key is always right.
const (
	EventSessionStarted    EventType = "session.started"
	EventMessage           EventType = "message.chunk"
	EventToolCall          EventType = "tool_call"
	EventPlan              EventType = "plan"
	EventPermissionAsked   EventType = "permission.asked"
	EventPermissionDecided EventType = "permission.decided"
	EventModeChanged       EventType = "mode.changed"
	EventCommands          EventType = "commands"
	EventConfigOptions     EventType = "config_options"
	EventSessionInfo       EventType = "session.info"
	EventUsage             EventType = "usage"
	EventStatus            EventType = "status"
	EventScreenDelta       EventType = "screen.delta"
	EventFileWritten       EventType = "file.written"
	EventTerminalExited    EventType = "terminal.exited"
	EventTurnEnded         EventType = "turn.ended"
	EventError             EventType = "error"
	EventProcessExited     EventType = "process.exited"
	EventScreenFinal       EventType = "screen.final"
	EventAgentStop         EventType = "agent.stop"
	EventRaw               EventType = "raw"

	EventElicitationAsked     EventType = "elicitation.asked"
	EventElicitationAnswered  EventType = "elicitation.answered"
	EventElicitationCompleted EventType = "elicitation.completed"
)

// EventTypes lists every type this build emits, in a stable order. The
// capability manifest and cap.md's drift tests read it.
var EventTypes = []EventType{
	EventSessionStarted, EventMessage, EventToolCall, EventPlan,
	EventPermissionAsked, EventPermissionDecided, EventModeChanged,
	EventCommands, EventConfigOptions, EventSessionInfo, EventUsage,
	EventStatus, EventScreenDelta, EventFileWritten, EventTerminalExited,
	EventTurnEnded, EventError, EventProcessExited, EventScreenFinal,
	EventAgentStop, EventRaw,
	EventElicitationAsked, EventElicitationAnswered, EventElicitationCompleted,
}

// Event is one thing that happened in a session. Exactly one payload field
// is set, matching Type. Seq and Time are stamped by the session's sink.
type Event struct {
	Type    EventType `json:"type"`
	Session string    `json:"session,omitempty"`
	Seq     uint64    `json:"seq"`
	Time    time.Time `json:"ts"`

	Started    *SessionStarted     `json:"started,omitempty"`
	Message    *MessageChunk       `json:"message,omitempty"`
	ToolCall   *ToolCall           `json:"tool_call,omitempty"`
	Plan       *Plan               `json:"plan,omitempty"`
	Permission *PermissionRequest  `json:"permission,omitempty"`
	Decision   *PermissionDecision `json:"decision,omitempty"`
	Mode       *Mode               `json:"mode,omitempty"`
	Commands   []Command           `json:"commands,omitempty"`
	Config     []ConfigOption      `json:"config_options,omitempty"`
	Info       *SessionInfo        `json:"info,omitempty"`
	Usage      *Usage              `json:"usage,omitempty"`
	Status     *Status             `json:"status,omitempty"`
	Screen     *ScreenDelta        `json:"screen,omitempty"`
	File       *FileWrite          `json:"file,omitempty"`
	Terminal   *TerminalExit       `json:"terminal,omitempty"`
	Turn       *TurnEnded          `json:"turn,omitempty"`
	Error      *ErrorInfo          `json:"error,omitempty"`
	Process    *ProcessExit        `json:"process,omitempty"`
	Raw        *RawUpdate          `json:"raw,omitempty"`

	Elicitation         *ElicitationRequest  `json:"elicitation,omitempty"`
	ElicitationAnswer   *ElicitationAnswer   `json:"elicitation_answer,omitempty"`
	ElicitationComplete *ElicitationComplete `json:"elicitation_complete,omitempty"`

	FinalScreen *FinalScreen `json:"final_screen,omitempty"`
	AgentStop   *AgentStop   `json:"agent_stop,omitempty"`
}

// SessionStarted describes a session once its handshake is done.
type SessionStarted struct {
	Agent        string         `json:"agent"`
	Driver       Name           `json:"driver"`
	Cwd          string         `json:"cwd"`
	AgentName    string         `json:"agent_name,omitempty"`
	AgentVersion string         `json:"agent_version,omitempty"`
	Protocol     string         `json:"protocol,omitempty"`
	Resumed      bool           `json:"resumed,omitempty"`
	Modes        []ModeInfo     `json:"modes,omitempty"`
	CurrentMode  string         `json:"current_mode,omitempty"`
	Config       []ConfigOption `json:"config_options,omitempty"`
	Capabilities Capabilities   `json:"capabilities"`
}

// Role says whose text a message chunk is.
type Role string

// Roles of message chunks.
const (
	RoleAgent   Role = "agent"
	RoleThought Role = "thought"
	RoleUser    Role = "user"
)

// MessageChunk is a piece of a message. Text holds the text of a text block;
// other content blocks (images, resources) are kept raw in Content.
type MessageChunk struct {
	Role      Role            `json:"role"`
	MessageID string          `json:"message_id,omitempty"`
	Text      string          `json:"text,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	// Replace: Text is the whole message, replacing the chunks sent before
	// with the same MessageID. A reply read off a screen can change as the
	// TUI redraws it; the last word is the final screen's.
	Replace bool `json:"replace,omitempty"`
}

// ToolKind is an open set; these are the ACP kinds tai knows.
type ToolKind string

// Tool kinds.
const (
	KindRead       ToolKind = "read"
	KindEdit       ToolKind = "edit"
	KindDelete     ToolKind = "delete"
	KindMove       ToolKind = "move"
	KindSearch     ToolKind = "search"
	KindExecute    ToolKind = "execute"
	KindThink      ToolKind = "think"
	KindFetch      ToolKind = "fetch"
	KindSwitchMode ToolKind = "switch_mode"
	KindOther      ToolKind = "other"
)

// ToolCall is the full current state of one tool call.
type ToolCall struct {
	ID        string          `json:"id"`
	Title     string          `json:"title,omitempty"`
	Kind      ToolKind        `json:"kind,omitempty"`
	Status    string          `json:"status,omitempty"`
	Name      string          `json:"name,omitempty"`
	Locations []Location      `json:"locations,omitempty"`
	Content   []ToolContent   `json:"content,omitempty"`
	RawInput  json.RawMessage `json:"raw_input,omitempty"`
	RawOutput json.RawMessage `json:"raw_output,omitempty"`
}

// Location is a file a tool call touches. Line is 1-based; 0 means unknown.
type Location struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
}

// ToolContent is one item a tool call produced: text, a diff or a terminal.
type ToolContent struct {
	Type       string          `json:"type"` // "text", "diff", "terminal", or another block type kept raw
	Text       string          `json:"text,omitempty"`
	Path       string          `json:"path,omitempty"`
	OldText    *string         `json:"old_text,omitempty"` // nil: a new file
	NewText    string          `json:"new_text,omitempty"`
	TerminalID string          `json:"terminal_id,omitempty"`
	Raw        json.RawMessage `json:"raw,omitempty"`
}

// Plan is the agent's whole current plan; each event replaces the last.
type Plan struct {
	Entries []PlanEntry `json:"entries"`
}

// PlanEntry is one step of a plan.
type PlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority,omitempty"`
	Status   string `json:"status,omitempty"`
}

// PermissionOption is one answer the agent offers. Kind is the hint that
// policy chooses by (allow_once, allow_always, reject_once, reject_always).
type PermissionOption struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Kind string `json:"kind"`
}

// Permission option kinds.
const (
	OptionAllowOnce    = "allow_once"
	OptionAllowAlways  = "allow_always"
	OptionRejectOnce   = "reject_once"
	OptionRejectAlways = "reject_always"
)

// PermissionRequest is an agent asking to do something.
type PermissionRequest struct {
	ID       string             `json:"id"`
	Session  string             `json:"session,omitempty"`
	ToolCall ToolCall           `json:"tool_call"`
	Options  []PermissionOption `json:"options"`
	// Unrequested: the agent did not ask. tai made this request up for a
	// file or terminal call it was about to serve that no granted
	// permission covered, and decided it like any other.
	Unrequested bool `json:"unrequested,omitempty"`
}

// Outcome of a permission request on the wire.
const (
	OutcomeSelected  = "selected"
	OutcomeCancelled = "cancelled"
)

// Verdicts of a decision.
const (
	VerdictAllow     = "allow"
	VerdictDeny      = "deny"
	VerdictCancelled = "cancelled"
)

// PermissionDecision is the answer to a PermissionRequest with its
// provenance: who or what decided, and why.
type PermissionDecision struct {
	RequestID  string     `json:"request_id"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Title      string     `json:"title,omitempty"`
	ToolKind   ToolKind   `json:"tool_kind,omitempty"`
	Outcome    string     `json:"outcome"` // selected | cancelled
	OptionID   string     `json:"option_id,omitempty"`
	OptionKind string     `json:"option_kind,omitempty"`
	Verdict    string     `json:"verdict"` // allow | deny | cancelled
	DecidedBy  Provenance `json:"decided_by"`
	Reason     string     `json:"reason,omitempty"`
	// Via is the channel a human answered by (decided_by "human"):
	// terminal, dashboard (tai top), feed.
	Via string `json:"via,omitempty"`
	// Unrequested: the decision of a call the agent made without asking
	// (see PermissionRequest.Unrequested).
	Unrequested bool `json:"unrequested,omitempty"`
}

// Denied reports whether the decision refused the request.
func (d PermissionDecision) Denied() bool { return d.Verdict == VerdictDeny }

// ModeInfo is one mode a session can be in.
type ModeInfo struct {
	ID          string `json:"id"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
}

// Mode is the session's current mode.
type Mode struct {
	ID string `json:"id"`
}

// Command is a slash command the agent advertises.
type Command struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Hint        string `json:"hint,omitempty"`
}

// ConfigOption is a session setting (model, mode, reasoning effort, ...).
type ConfigOption struct {
	ID           string          `json:"id"`
	Name         string          `json:"name,omitempty"`
	Category     string          `json:"category,omitempty"`
	Type         string          `json:"type"`
	CurrentValue json.RawMessage `json:"current_value,omitempty"`
	Values       []ConfigValue   `json:"values,omitempty"`
}

// ConfigValue is one allowed value of a select option.
type ConfigValue struct {
	Value string `json:"value"`
	Name  string `json:"name,omitempty"`
	Group string `json:"group,omitempty"`
}

// SessionInfo carries session metadata the agent reports.
type SessionInfo struct {
	Title     *string `json:"title,omitempty"`
	UpdatedAt *string `json:"updated_at,omitempty"`
	// Meta is the update's _meta, where some agents report a request's
	// failure and their retries (quota.FromRetryNotice); not part of the
	// event's output.
	Meta map[string]any `json:"-"`
}

// Usage is token and cost accounting. Context figures (Used/Size) come from
// ACP usage updates; token counts from turn results.
type Usage struct {
	ContextUsed  int64   `json:"context_used,omitempty"`
	ContextSize  int64   `json:"context_size,omitempty"`
	InputTokens  int64   `json:"input_tokens,omitempty"`
	OutputTokens int64   `json:"output_tokens,omitempty"`
	TotalTokens  int64   `json:"total_tokens,omitempty"`
	CostAmount   float64 `json:"cost,omitempty"`
	Currency     string  `json:"currency,omitempty"`
}

// Status is a coarse agent state, mainly from the PTY driver.
type Status struct {
	State string `json:"state"` // working | idle | waiting | unknown
}

// ScreenDelta is a transcript diff: lines added or replaced since the last
// frame.
type ScreenDelta struct {
	From  int      `json:"from"`
	Lines []string `json:"lines"`
}

// FileWrite records a file the host wrote for the agent.
type FileWrite struct {
	Path       string `json:"path"`
	Size       int64  `json:"size"`
	Created    bool   `json:"created,omitempty"`
	HashBefore string `json:"hash_before,omitempty"`
	HashAfter  string `json:"hash_after"`
}

// TerminalExit records a command the host ran for the agent.
type TerminalExit struct {
	ID         string   `json:"id"`
	Command    string   `json:"command"`
	Args       []string `json:"args,omitempty"`
	Cwd        string   `json:"cwd"`
	ExitCode   *int     `json:"exit_code,omitempty"`
	Signal     string   `json:"signal,omitempty"`
	DurationMS int64    `json:"duration_ms"`
}

// TurnEnded closes a prompt turn.
type TurnEnded struct {
	StopReason string `json:"stop_reason"`
	Usage      *Usage `json:"usage,omitempty"`
	// ReplySource says how a screen-based driver read the reply; empty
	// when the agent sent it as messages (or there was none).
	ReplySource ReplySource `json:"reply_source,omitempty"`
}

// ReplySource is where a PTY turn's reply was read from the screen.
type ReplySource string

// Reply sources: the agent's profile (its recorded layout), or the
// layout-independent fallback (the screen's diff across the turn) when the
// profile found none.
const (
	ReplyProfile  ReplySource = "profile"
	ReplyFallback ReplySource = "fallback"
)

// ErrorInfo is an error worth showing, which need not end the run.
type ErrorInfo struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ProcessExit records the agent process ending.
type ProcessExit struct {
	Pid      int    `json:"pid"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Signal   string `json:"signal,omitempty"`
	Stderr   string `json:"stderr,omitempty"`
}

// FinalScreen is a screen-based agent's last screen when its session ends,
// with the rows that scrolled off it: the scrollback users lose when a TUI
// dies. Fields are in name order, as the audit log has always kept them.
type FinalScreen struct {
	AltScreen         bool     `json:"alt_screen"`
	Cols              int      `json:"cols"`
	Cursor            []int    `json:"cursor"` // column, row
	Rows              int      `json:"rows"`
	Scrollback        []string `json:"scrollback,omitempty"`
	ScrollbackDropped int      `json:"scrollback_dropped,omitempty"` // oldest rows beyond the cap
	Text              string   `json:"text"`
}

// AgentStop is a CLI's own end-of-turn hook (Claude Code's Stop): its
// session, and the transcript file it keeps of the session outside tai.
// Fields are in name order, as the audit log has always kept them.
type AgentStop struct {
	Cwd            string `json:"cwd"`
	PermissionMode string `json:"permission_mode"`
	SessionID      string `json:"session_id"`
	StopHookActive bool   `json:"stop_hook_active"`
	TranscriptPath string `json:"transcript_path"`
}

// RawUpdate passes through an update this build does not understand.
type RawUpdate struct {
	Kind RawKind         `json:"kind"`
	Data json.RawMessage `json:"data"`
}

// RawKind names a raw update: the agent's own name for it.
type RawKind string
