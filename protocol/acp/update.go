package acp

import "encoding/json"

// SessionNotification is the params of session/update (agent → client).
type SessionNotification struct {
	SessionId string         `json:"sessionId"`
	Update    SessionUpdate  `json:"update"`
	Meta      map[string]any `json:"_meta,omitempty"`
}

// SessionUpdate discriminator values (the "sessionUpdate" key).
const (
	UpdateUserMessageChunk        = "user_message_chunk"
	UpdateAgentMessageChunk       = "agent_message_chunk"
	UpdateAgentThoughtChunk       = "agent_thought_chunk"
	UpdateToolCall                = "tool_call"
	UpdateToolCallUpdate          = "tool_call_update"
	UpdatePlan                    = "plan"
	UpdateAvailableCommandsUpdate = "available_commands_update"
	UpdateCurrentModeUpdate       = "current_mode_update"
	UpdateConfigOptionUpdate      = "config_option_update"
	UpdateSessionInfoUpdate       = "session_info_update"
	UpdateUsageUpdate             = "usage_update"
	UpdateNotice                  = "notice"
	UpdateCompactionUpdate        = "compaction_update"
	UpdateCompactionSummaryChunk  = "compaction_summary_chunk"
)

// SessionUpdate is the update of a session/update notification,
// discriminated by "sessionUpdate". Exactly one field is set; see the package
// doc for union rules. Unstable kinds (plan_update, subagent_update, ...)
// arrive as Unknown on purpose: they are not part of stable v1.
type SessionUpdate struct {
	UserMessageChunk        *ContentChunk
	AgentMessageChunk       *ContentChunk
	AgentThoughtChunk       *ContentChunk
	ToolCall                *ToolCall
	ToolCallUpdate          *ToolCallUpdate
	Plan                    *Plan
	AvailableCommandsUpdate *AvailableCommandsUpdate
	CurrentModeUpdate       *CurrentModeUpdate
	ConfigOptionUpdate      *ConfigOptionUpdate
	SessionInfoUpdate       *SessionInfoUpdate
	UsageUpdate             *UsageUpdate
	Notice                  *Notice
	CompactionUpdate        *CompactionUpdate
	CompactionSummaryChunk  *CompactionSummaryChunk
	Unknown                 *UnknownVariant
}

// ContentChunk is a streamed piece of a user, agent or thought message. A
// change of MessageId starts a new message.
type ContentChunk struct {
	Content   ContentBlock   `json:"content"`
	MessageId *string        `json:"messageId,omitempty"`
	Meta      map[string]any `json:"_meta,omitempty"`
}

// Plan is the agent's full plan; each update replaces the previous one.
type Plan struct {
	Entries PlanEntryList  `json:"entries"`
	Meta    map[string]any `json:"_meta,omitempty"`
}

// PlanEntryPriority is an open enum.
type PlanEntryPriority string

// Plan entry priorities.
const (
	PlanPriorityHigh   PlanEntryPriority = "high"
	PlanPriorityMedium PlanEntryPriority = "medium"
	PlanPriorityLow    PlanEntryPriority = "low"
)

// PlanEntryStatus is an open enum.
type PlanEntryStatus string

// Plan entry statuses.
const (
	PlanStatusPending    PlanEntryStatus = "pending"
	PlanStatusInProgress PlanEntryStatus = "in_progress"
	PlanStatusCompleted  PlanEntryStatus = "completed"
)

// PlanEntry is one task of a plan.
type PlanEntry struct {
	Content  string            `json:"content"`
	Priority PlanEntryPriority `json:"priority"`
	Status   PlanEntryStatus   `json:"status"`
	Meta     map[string]any    `json:"_meta,omitempty"`
}

// PlanEntryList drops entries that fail to decode and encodes nil as [].
type PlanEntryList []PlanEntry

// MarshalJSON implements json.Marshaler.
func (l PlanEntryList) MarshalJSON() ([]byte, error) { return marshalList([]PlanEntry(l)) }

// UnmarshalJSON implements json.Unmarshaler.
func (l *PlanEntryList) UnmarshalJSON(data []byte) error {
	v, err := decodeSkipInvalid[PlanEntry](data, nil)
	*l = v
	return err
}

// AvailableCommandsUpdate replaces the list of slash commands. Commands are
// invoked by sending "/name args" as prompt text.
type AvailableCommandsUpdate struct {
	AvailableCommands AvailableCommandList `json:"availableCommands"`
	Meta              map[string]any       `json:"_meta,omitempty"`
}

// AvailableCommand is a slash command the agent accepts.
type AvailableCommand struct {
	Name        string                 `json:"name"`
	Description string                 `json:"description"`
	Input       *AvailableCommandInput `json:"input,omitempty"`
	Meta        map[string]any         `json:"_meta,omitempty"`
}

// AvailableCommandInput describes free-form command arguments.
type AvailableCommandInput struct {
	Hint string         `json:"hint"`
	Meta map[string]any `json:"_meta,omitempty"`
}

// AvailableCommandList drops commands that fail to decode or have no name,
// and encodes nil as [].
type AvailableCommandList []AvailableCommand

// MarshalJSON implements json.Marshaler.
func (l AvailableCommandList) MarshalJSON() ([]byte, error) {
	return marshalList([]AvailableCommand(l))
}

// UnmarshalJSON implements json.Unmarshaler.
func (l *AvailableCommandList) UnmarshalJSON(data []byte) error {
	v, err := decodeSkipInvalid(data, func(c *AvailableCommand) bool { return c.Name != "" })
	*l = v
	return err
}

// CurrentModeUpdate reports a mode change. The key is currentModeId; the v1
// docs example wrongly shows modeId, so that is accepted as a fallback on
// decode (and never written).
type CurrentModeUpdate struct {
	CurrentModeId string         `json:"currentModeId"`
	Meta          map[string]any `json:"_meta,omitempty"`
}

// UnmarshalJSON implements json.Unmarshaler.
func (u *CurrentModeUpdate) UnmarshalJSON(data []byte) error {
	type plain CurrentModeUpdate
	var p struct {
		plain
		ModeId *string `json:"modeId"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*u = CurrentModeUpdate(p.plain)
	if u.CurrentModeId == "" && p.ModeId != nil {
		u.CurrentModeId = *p.ModeId
	}
	return nil
}

// ConfigOptionUpdate carries the full, replacing set of config options.
type ConfigOptionUpdate struct {
	ConfigOptions ConfigOptionList `json:"configOptions"`
	Meta          map[string]any   `json:"_meta,omitempty"`
}

// SessionInfoUpdate patches session metadata: an absent field is unchanged
// and null clears it. UpdatedAt is ISO 8601.
type SessionInfoUpdate struct {
	Title     Nullable[string] `json:"title,omitzero"`
	UpdatedAt Nullable[string] `json:"updatedAt,omitzero"`
	Meta      map[string]any   `json:"_meta,omitempty"`
}

// UsageUpdate reports context window use in tokens.
type UsageUpdate struct {
	Used int64          `json:"used"`
	Size int64          `json:"size"`
	Cost *Cost          `json:"cost,omitempty"`
	Meta map[string]any `json:"_meta,omitempty"`
}

// Cost is a cumulative session cost.
type Cost struct {
	Amount   float64        `json:"amount"`
	Currency string         `json:"currency"`
	Meta     map[string]any `json:"_meta,omitempty"`
}

// NoticeSeverity is an open enum.
type NoticeSeverity string

// Notice severities.
const (
	NoticeInfo    NoticeSeverity = "info"
	NoticeWarning NoticeSeverity = "warning"
	NoticeError   NoticeSeverity = "error"
)

// Notice is advisory, not part of history. Agents send it only to clients
// that advertised session.notices.
type Notice struct {
	Severity    NoticeSeverity `json:"severity"`
	Title       string         `json:"title"`
	Description *string        `json:"description,omitempty"`
	Meta        map[string]any `json:"_meta,omitempty"`
}

// CompactionStatus is an open enum.
type CompactionStatus string

// Compaction statuses.
const (
	CompactionInProgress CompactionStatus = "in_progress"
	CompactionCompleted  CompactionStatus = "completed"
	CompactionFailed     CompactionStatus = "failed"
	CompactionCancelled  CompactionStatus = "cancelled"
)

// CompactionUpdate is an upsert keyed by CompactionId; Summary and Error
// follow patch semantics (absent = unchanged, null = clear). Sent only to
// clients that advertised session.compaction.
type CompactionUpdate struct {
	CompactionId string                   `json:"compactionId"`
	Status       CompactionStatus         `json:"status"`
	Summary      Nullable[[]ContentBlock] `json:"summary,omitzero"`
	Error        Nullable[string]         `json:"error,omitzero"`
	Meta         map[string]any           `json:"_meta,omitempty"`
}

// CompactionSummaryChunk appends one block to an in-progress compaction's
// summary.
type CompactionSummaryChunk struct {
	CompactionId string         `json:"compactionId"`
	Content      ContentBlock   `json:"content"`
	Meta         map[string]any `json:"_meta,omitempty"`
}

// Kind returns the "sessionUpdate" discriminator, or "" when empty.
func (u SessionUpdate) Kind() string {
	switch {
	case u.UserMessageChunk != nil:
		return UpdateUserMessageChunk
	case u.AgentMessageChunk != nil:
		return UpdateAgentMessageChunk
	case u.AgentThoughtChunk != nil:
		return UpdateAgentThoughtChunk
	case u.ToolCall != nil:
		return UpdateToolCall
	case u.ToolCallUpdate != nil:
		return UpdateToolCallUpdate
	case u.Plan != nil:
		return UpdatePlan
	case u.AvailableCommandsUpdate != nil:
		return UpdateAvailableCommandsUpdate
	case u.CurrentModeUpdate != nil:
		return UpdateCurrentModeUpdate
	case u.ConfigOptionUpdate != nil:
		return UpdateConfigOptionUpdate
	case u.SessionInfoUpdate != nil:
		return UpdateSessionInfoUpdate
	case u.UsageUpdate != nil:
		return UpdateUsageUpdate
	case u.Notice != nil:
		return UpdateNotice
	case u.CompactionUpdate != nil:
		return UpdateCompactionUpdate
	case u.CompactionSummaryChunk != nil:
		return UpdateCompactionSummaryChunk
	case u.Unknown != nil:
		return u.Unknown.Kind
	}
	return ""
}

// variant returns the set variant's value (nil for none) and how many are set.
func (u SessionUpdate) variant() (any, int) {
	var v any
	n := 0
	for _, c := range []struct {
		set bool
		val any
	}{
		{u.UserMessageChunk != nil, u.UserMessageChunk},
		{u.AgentMessageChunk != nil, u.AgentMessageChunk},
		{u.AgentThoughtChunk != nil, u.AgentThoughtChunk},
		{u.ToolCall != nil, u.ToolCall},
		{u.ToolCallUpdate != nil, u.ToolCallUpdate},
		{u.Plan != nil, u.Plan},
		{u.AvailableCommandsUpdate != nil, u.AvailableCommandsUpdate},
		{u.CurrentModeUpdate != nil, u.CurrentModeUpdate},
		{u.ConfigOptionUpdate != nil, u.ConfigOptionUpdate},
		{u.SessionInfoUpdate != nil, u.SessionInfoUpdate},
		{u.UsageUpdate != nil, u.UsageUpdate},
		{u.Notice != nil, u.Notice},
		{u.CompactionUpdate != nil, u.CompactionUpdate},
		{u.CompactionSummaryChunk != nil, u.CompactionSummaryChunk},
		{u.Unknown != nil, u.Unknown},
	} {
		if c.set {
			n++
			v = c.val
		}
	}
	return v, n
}

// MarshalJSON implements json.Marshaler.
func (u SessionUpdate) MarshalJSON() ([]byte, error) {
	v, n := u.variant()
	switch n {
	case 0:
		return jsonNull, nil
	case 1:
	default:
		return nil, tooMany("SessionUpdate")
	}
	if u.Unknown != nil {
		return u.Unknown.MarshalJSON()
	}
	return withTag("sessionUpdate", u.Kind(), v)
}

// UnmarshalJSON implements json.Unmarshaler.
func (u *SessionUpdate) UnmarshalJSON(data []byte) error {
	*u = SessionUpdate{}
	if isNull(data) {
		return nil
	}
	tag, ok, err := peekTagFast(data, "sessionUpdate")
	if err != nil {
		return err
	}
	if !ok {
		u.Unknown = newUnknown("", data)
		return nil
	}
	switch tag {
	case UpdateUserMessageChunk:
		return decodeInto(data, &u.UserMessageChunk)
	case UpdateAgentMessageChunk:
		return decodeInto(data, &u.AgentMessageChunk)
	case UpdateAgentThoughtChunk:
		return decodeInto(data, &u.AgentThoughtChunk)
	case UpdateToolCall:
		return decodeInto(data, &u.ToolCall)
	case UpdateToolCallUpdate:
		return decodeInto(data, &u.ToolCallUpdate)
	case UpdatePlan:
		return decodeInto(data, &u.Plan)
	case UpdateAvailableCommandsUpdate:
		return decodeInto(data, &u.AvailableCommandsUpdate)
	case UpdateCurrentModeUpdate:
		return decodeInto(data, &u.CurrentModeUpdate)
	case UpdateConfigOptionUpdate:
		return decodeInto(data, &u.ConfigOptionUpdate)
	case UpdateSessionInfoUpdate:
		return decodeInto(data, &u.SessionInfoUpdate)
	case UpdateUsageUpdate:
		return decodeInto(data, &u.UsageUpdate)
	case UpdateNotice:
		return decodeInto(data, &u.Notice)
	case UpdateCompactionUpdate:
		return decodeInto(data, &u.CompactionUpdate)
	case UpdateCompactionSummaryChunk:
		return decodeInto(data, &u.CompactionSummaryChunk)
	}
	u.Unknown = newUnknown(tag, data)
	return nil
}

// decodeInto allocates *dst and decodes into it, leaving *dst nil on error so
// a failed union never looks half-set.
func decodeInto[T any](data []byte, dst **T) error {
	v := new(T)
	if err := json.Unmarshal(data, v); err != nil {
		return err
	}
	*dst = v
	return nil
}

// NewAgentMessageChunk returns an agent_message_chunk update carrying text.
func NewAgentMessageChunk(text string) SessionUpdate {
	return SessionUpdate{AgentMessageChunk: &ContentChunk{Content: TextBlock(text)}}
}

// NewAgentThoughtChunk returns an agent_thought_chunk update carrying text.
func NewAgentThoughtChunk(text string) SessionUpdate {
	return SessionUpdate{AgentThoughtChunk: &ContentChunk{Content: TextBlock(text)}}
}

// NewUserMessageChunk returns a user_message_chunk update (used when
// replaying history on session/load).
func NewUserMessageChunk(text string) SessionUpdate {
	return SessionUpdate{UserMessageChunk: &ContentChunk{Content: TextBlock(text)}}
}

// NewToolCall returns a tool_call update for a pending call. Fill further
// fields through the ToolCall pointer before sending.
func NewToolCall(toolCallID, title string, kind ToolKind) SessionUpdate {
	return SessionUpdate{ToolCall: &ToolCall{
		ToolCallId: toolCallID,
		Title:      title,
		Kind:       kind,
		Status:     ToolCallPending,
	}}
}

// NewToolCallUpdate returns a tool_call_update that sets only the status;
// content, when given, replaces the call's content.
func NewToolCallUpdate(toolCallID string, status ToolCallStatus, content ...ToolCallContent) SessionUpdate {
	return SessionUpdate{ToolCallUpdate: &ToolCallUpdate{
		ToolCallId: toolCallID,
		Status:     &status,
		Content:    content,
	}}
}

// NewPlan returns a plan update with the given entries.
func NewPlan(entries ...PlanEntry) SessionUpdate {
	return SessionUpdate{Plan: &Plan{Entries: orEmpty(entries)}}
}
