package acp

import "encoding/json"

// ToolKind tells the client how to present a tool call. Open enum.
type ToolKind string

// Tool kinds. A missing kind means ToolKindOther.
const (
	ToolKindRead       ToolKind = "read"
	ToolKindEdit       ToolKind = "edit"
	ToolKindDelete     ToolKind = "delete"
	ToolKindMove       ToolKind = "move"
	ToolKindSearch     ToolKind = "search"
	ToolKindExecute    ToolKind = "execute"
	ToolKindThink      ToolKind = "think"
	ToolKindFetch      ToolKind = "fetch"
	ToolKindSwitchMode ToolKind = "switch_mode" // "exit plan mode"; option IDs are often mode IDs
	ToolKindOther      ToolKind = "other"
)

// ToolCallStatus is a tool call's lifecycle state. Open enum.
type ToolCallStatus string

// Tool call statuses. A missing status on tool_call means pending.
const (
	ToolCallPending    ToolCallStatus = "pending"
	ToolCallInProgress ToolCallStatus = "in_progress"
	ToolCallCompleted  ToolCallStatus = "completed"
	ToolCallFailed     ToolCallStatus = "failed"
)

// ToolCall is the tool_call session update: it creates a tool call.
type ToolCall struct {
	ToolCallId string             `json:"toolCallId"`
	Title      string             `json:"title"`
	Kind       ToolKind           `json:"kind,omitempty"`
	Status     ToolCallStatus     `json:"status,omitempty"`
	Content    []ToolCallContent  `json:"content,omitempty"`
	Locations  []ToolCallLocation `json:"locations,omitempty"`
	RawInput   json.RawMessage    `json:"rawInput,omitempty"`
	RawOutput  json.RawMessage    `json:"rawOutput,omitempty"`
	// Name is the programmatic tool name (stable in the 2.4.0 schema).
	Name string         `json:"name,omitempty"`
	Meta map[string]any `json:"_meta,omitempty"`
}

// ToolCallUpdate patches a tool call (tool_call_update), and is also the
// toolCall of a permission request. Every field but ToolCallId is optional.
//
// Content and Locations replace the stored collection when present, so nil
// (absent: keep) and an empty non-nil slice (present: clear) differ; the
// `omitzero` tags preserve that on the wire, and decoding "[]" yields an
// empty non-nil slice.
type ToolCallUpdate struct {
	ToolCallId string             `json:"toolCallId"`
	Title      *string            `json:"title,omitempty"`
	Kind       *ToolKind          `json:"kind,omitempty"`
	Status     *ToolCallStatus    `json:"status,omitempty"`
	Content    []ToolCallContent  `json:"content,omitzero"`
	Locations  []ToolCallLocation `json:"locations,omitzero"`
	RawInput   json.RawMessage    `json:"rawInput,omitempty"`
	RawOutput  json.RawMessage    `json:"rawOutput,omitempty"`
	Name       *string            `json:"name,omitempty"`
	Meta       map[string]any     `json:"_meta,omitempty"`
}

// ToolCallLocation is a file a tool call touches; Line is 1-based.
type ToolCallLocation struct {
	Path string         `json:"path"`
	Line *int           `json:"line,omitempty"`
	Meta map[string]any `json:"_meta,omitempty"`
}

// ToolCallContent discriminator values (the "type" key).
const (
	ToolContentContent  = "content"
	ToolContentDiff     = "diff"
	ToolContentTerminal = "terminal"
)

// ToolCallContent is one item of a tool call's output, discriminated by
// "type". Exactly one field is set; see the package doc for union rules.
type ToolCallContent struct {
	Content  *ToolCallContentBlock
	Diff     *Diff
	Terminal *ToolCallTerminal
	Unknown  *UnknownVariant
}

// ToolCallContentBlock is {type:"content"}: ordinary content.
type ToolCallContentBlock struct {
	Content ContentBlock   `json:"content"`
	Meta    map[string]any `json:"_meta,omitempty"`
}

// Diff is {type:"diff"}. A nil OldText means the file is new.
type Diff struct {
	Path    string         `json:"path"`
	OldText *string        `json:"oldText,omitempty"`
	NewText string         `json:"newText"`
	Meta    map[string]any `json:"_meta,omitempty"`
}

// ToolCallTerminal is {type:"terminal"}: embed a client terminal's live
// output. Clients keep showing it after terminal/release.
type ToolCallTerminal struct {
	TerminalId string         `json:"terminalId"`
	Meta       map[string]any `json:"_meta,omitempty"`
}

// Kind returns the "type" discriminator, or "" when empty.
func (c ToolCallContent) Kind() string {
	switch {
	case c.Content != nil:
		return ToolContentContent
	case c.Diff != nil:
		return ToolContentDiff
	case c.Terminal != nil:
		return ToolContentTerminal
	case c.Unknown != nil:
		return c.Unknown.Kind
	}
	return ""
}

// MarshalJSON implements json.Marshaler.
func (c ToolCallContent) MarshalJSON() ([]byte, error) {
	switch variantCount(c.Content != nil, c.Diff != nil, c.Terminal != nil, c.Unknown != nil) {
	case 0:
		return jsonNull, nil
	case 1:
	default:
		return nil, tooMany("ToolCallContent")
	}
	switch {
	case c.Content != nil:
		return withTag("type", ToolContentContent, c.Content)
	case c.Diff != nil:
		return withTag("type", ToolContentDiff, c.Diff)
	case c.Terminal != nil:
		return withTag("type", ToolContentTerminal, c.Terminal)
	}
	return c.Unknown.MarshalJSON()
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *ToolCallContent) UnmarshalJSON(data []byte) error {
	*c = ToolCallContent{}
	if isNull(data) {
		return nil
	}
	tag, ok, err := peekTagFast(data, "type")
	if err != nil {
		return err
	}
	if !ok {
		c.Unknown = newUnknown("", data)
		return nil
	}
	switch tag {
	case ToolContentContent:
		c.Content = new(ToolCallContentBlock)
		return json.Unmarshal(data, c.Content)
	case ToolContentDiff:
		c.Diff = new(Diff)
		return json.Unmarshal(data, c.Diff)
	case ToolContentTerminal:
		c.Terminal = new(ToolCallTerminal)
		return json.Unmarshal(data, c.Terminal)
	}
	c.Unknown = newUnknown(tag, data)
	return nil
}

// ToolContent wraps a content block as tool call content.
func ToolContent(block ContentBlock) ToolCallContent {
	return ToolCallContent{Content: &ToolCallContentBlock{Content: block}}
}

// ToolText is ToolContent(TextBlock(text)).
func ToolText(text string) ToolCallContent { return ToolContent(TextBlock(text)) }

// ToolDiff returns diff content; oldText nil marks a new file.
func ToolDiff(path string, oldText *string, newText string) ToolCallContent {
	return ToolCallContent{Diff: &Diff{Path: path, OldText: oldText, NewText: newText}}
}

// ToolTerminal returns content embedding a client terminal.
func ToolTerminal(terminalID string) ToolCallContent {
	return ToolCallContent{Terminal: &ToolCallTerminal{TerminalId: terminalID}}
}
