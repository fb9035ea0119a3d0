package acpserver

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/protocol/acp"
)

// update is one session/update's "update" object.
type update = map[string]any

// updater turns tai's events into ACP updates. It keeps what the editor
// has been told: which tool calls it knows, and how much of each message
// read off a screen it has.
type updater struct {
	rawOK bool // raw events are ACP updates (the ACP driver's)
	// editor is what the editor advertised of the session's features:
	// an update or a config option it did not is rendered in what it
	// takes, or left out (gated).
	editor   acp.ClientSessionCapabilities
	log      *slog.Logger
	tools    map[string]bool // tool call ids sent
	messages map[string]string
}

func (u *updater) newTurn() {
	u.messages = map[string]string{}
}

func (u *updater) updates(ev driver.Event) []update {
	switch ev.Type {
	case driver.EventMessage:
		if m := ev.Message; m != nil {
			return u.message(m)
		}
	case driver.EventToolCall:
		if tc := ev.ToolCall; tc != nil {
			return []update{u.toolCall(*tc)}
		}
	case driver.EventPlan:
		return planUpdate(ev.Plan)
	case driver.EventModeChanged:
		if ev.Mode != nil {
			return []update{{"sessionUpdate": "current_mode_update", "currentModeId": ev.Mode.ID}}
		}
	case driver.EventCommands:
		return commandsUpdate(ev.Commands)
	case driver.EventConfigOptions:
		return []update{{"sessionUpdate": "config_option_update", "configOptions": configOptions(ev.Config, u.editor)}}
	case driver.EventSessionInfo:
		return infoUpdate(ev.Info)
	case driver.EventUsage:
		return usageUpdate(ev.Usage)
	case driver.EventRaw:
		return u.rawUpdate(ev.Raw)
	}
	return nil
}

func planUpdate(p *driver.Plan) []update {
	if p == nil {
		return nil
	}
	entries := []map[string]any{}
	for _, e := range p.Entries {
		entries = append(entries, map[string]any{"content": e.Content, "priority": oneOf(e.Priority, "medium", "high", "medium", "low"),
			"status": oneOf(e.Status, "pending", "pending", "in_progress", "completed")})
	}
	return []update{{"sessionUpdate": "plan", "entries": entries}}
}

func commandsUpdate(commands []driver.Command) []update {
	cmds := []map[string]any{}
	for _, c := range commands {
		m := map[string]any{"name": c.Name, "description": c.Description}
		if c.Hint != "" {
			m["input"] = map[string]any{"hint": c.Hint}
		}
		cmds = append(cmds, m)
	}
	return []update{{"sessionUpdate": "available_commands_update", "availableCommands": cmds}}
}

func infoUpdate(i *driver.SessionInfo) []update {
	if i == nil {
		return nil
	}
	m := update{"sessionUpdate": "session_info_update"}
	if i.Title != nil {
		m["title"] = *i.Title
	}
	if i.UpdatedAt != nil {
		m["updatedAt"] = *i.UpdatedAt
	}
	return []update{m}
}

func usageUpdate(us *driver.Usage) []update {
	if us == nil || us.ContextSize <= 0 {
		return nil
	}
	m := update{"sessionUpdate": "usage_update", "used": us.ContextUsed, "size": us.ContextSize}
	if us.Currency != "" {
		m["cost"] = map[string]any{"amount": us.CostAmount, "currency": us.Currency}
	}
	return []update{m}
}

// rawUpdate passes on an update tai does not know, from an ACP agent: the
// editor may.
func (u *updater) rawUpdate(r *driver.RawUpdate) []update {
	if r == nil || !u.rawOK || !json.Valid(r.Data) {
		return nil
	}
	var m update
	if json.Unmarshal(r.Data, &m) != nil || m["sessionUpdate"] == nil {
		return nil
	}
	if kind, _ := m["sessionUpdate"].(string); !u.editor.AllowsUpdate(kind) {
		return u.gated(kind, r.Data)
	}
	return []update{m}
}

// gated renders an update of a kind the editor did not advertise: a
// notice as a line of the agent's message (what every editor shows), a
// compaction update not at all (the editor has nothing to show it in).
func (u *updater) gated(kind string, data json.RawMessage) []update {
	if kind == acp.UpdateNotice {
		var n acp.Notice
		if json.Unmarshal(data, &n) == nil && n.Title != "" {
			text := fmt.Sprintf("\n[%s] %s", oneOf(string(n.Severity), "info", "info", "warning", "error"), n.Title)
			if n.Description != nil && *n.Description != "" {
				text += ": " + *n.Description
			}
			return []update{{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": text + "\n"}}}
		}
	}
	if u.log != nil {
		u.log.Debug("acp: an update the editor did not advertise, not sent", "kind", kind)
	}
	return nil
}

// message sends a chunk. A screen's message (Replace) is the whole text so
// far: the editor gets what is new; a redraw that changed earlier text
// cannot be taken back in ACP, so only a longer text is sent on.
func (u *updater) message(m *driver.MessageChunk) []update {
	kind := "agent_message_chunk"
	switch m.Role {
	case driver.RoleThought:
		kind = "agent_thought_chunk"
	case driver.RoleUser:
		kind = "user_message_chunk"
	}
	if len(m.Content) > 0 && m.Text == "" {
		return []update{{"sessionUpdate": kind, "content": json.RawMessage(m.Content)}}
	}
	text := m.Text
	if m.Replace {
		key := string(m.Role) + "\x00" + m.MessageID
		sent := u.messages[key]
		if !strings.HasPrefix(text, sent) {
			return nil
		}
		u.messages[key] = text
		text = text[len(sent):]
	}
	if text == "" {
		return nil
	}
	return []update{{"sessionUpdate": kind, "content": map[string]any{"type": "text", "text": text}}}
}

func (u *updater) toolCall(tc driver.ToolCall) update {
	m := toolCallUpdate(tc)
	if u.tools[tc.ID] {
		m["sessionUpdate"] = "tool_call_update"
		return m
	}
	u.tools[tc.ID] = true
	m["sessionUpdate"] = "tool_call"
	if m["title"] == nil {
		m["title"] = tc.Kind
	}
	return m
}

// isACPKind reports whether k is one of ACP's tool kinds.
func isACPKind(k driver.ToolKind) bool {
	switch k {
	case driver.KindRead, driver.KindEdit, driver.KindDelete, driver.KindMove, driver.KindSearch, driver.KindExecute,
		driver.KindThink, driver.KindFetch, driver.KindSwitchMode, driver.KindOther:
		return true
	}
	return false
}

// isACPStatus reports whether s is one of ACP's tool call statuses.
func isACPStatus(s string) bool {
	switch s {
	case "pending", "in_progress", "completed", "failed":
		return true
	}
	return false
}

// isContentKind reports whether t is a ContentBlock type; a raw tool
// content of another type is a whole ToolCallContent.
func isContentKind(t string) bool {
	switch t {
	case "text", "image", "audio", "resource", "resource_link":
		return true
	}
	return false
}

// toolCallUpdate is a tool call's full state in ACP's shape.
func toolCallUpdate(tc driver.ToolCall) map[string]any {
	m := map[string]any{"toolCallId": tc.ID}
	if tc.Title != "" {
		m["title"] = tc.Title
	}
	if tc.Kind != "" {
		if isACPKind(tc.Kind) {
			m["kind"] = tc.Kind
		} else {
			m["kind"] = driver.KindOther
		}
	}
	if isACPStatus(tc.Status) {
		m["status"] = tc.Status
	}
	if len(tc.Locations) > 0 {
		locs := []map[string]any{}
		for _, l := range tc.Locations {
			loc := map[string]any{"path": l.Path}
			if l.Line > 0 {
				loc["line"] = l.Line
			}
			locs = append(locs, loc)
		}
		m["locations"] = locs
	}
	if tc.Content == nil {
		if d := ownDiff(tc); d != nil {
			m["content"] = []any{d}
		}
	} else {
		content := []any{}
		for _, c := range tc.Content {
			switch {
			case c.Type == "diff":
				d := map[string]any{"type": "diff", "path": c.Path, "newText": c.NewText, "oldText": nil}
				if c.OldText != nil {
					d["oldText"] = *c.OldText
				}
				content = append(content, d)
			case c.Type == "text":
				content = append(content, map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": c.Text}})
			case c.Type == "terminal":
				// tai runs the agent's terminals, not the editor: it could not
				// show one by its id.
			case len(c.Raw) > 0 && json.Valid(c.Raw) && isContentKind(c.Type):
				content = append(content, map[string]any{"type": "content", "content": json.RawMessage(c.Raw)})
			case len(c.Raw) > 0 && json.Valid(c.Raw):
				content = append(content, json.RawMessage(c.Raw))
			}
		}
		m["content"] = content
	}
	if len(tc.RawInput) > 0 && json.Valid(tc.RawInput) {
		m["rawInput"] = json.RawMessage(tc.RawInput)
	}
	if len(tc.RawOutput) > 0 && json.Valid(tc.RawOutput) {
		m["rawOutput"] = json.RawMessage(tc.RawOutput)
	}
	return m
}

// configOptions are config options in ACP's shape.
func configOptions(opts []driver.ConfigOption, editor acp.ClientSessionCapabilities) []map[string]any {
	out := []map[string]any{}
	for _, o := range opts {
		if o.Type == "boolean" && editor.ConfigOptions.Boolean == nil {
			continue // an editor that did not advertise booleans may not get one
		}
		m := map[string]any{"id": o.ID, "name": o.Name, "type": o.Type}
		if m["name"] == "" {
			m["name"] = o.ID
		}
		if o.Category != "" {
			m["category"] = o.Category
		}
		if len(o.CurrentValue) > 0 && json.Valid(o.CurrentValue) {
			m["currentValue"] = json.RawMessage(o.CurrentValue)
		}
		if o.Type == "select" {
			vals := []map[string]any{}
			for _, v := range o.Values {
				name := v.Name
				if name == "" {
					name = v.Value
				}
				vals = append(vals, map[string]any{"value": v.Value, "name": name})
			}
			m["options"] = vals
		}
		out = append(out, m)
	}
	return out
}

// oneOf is v if it is one of allowed, else def.
func oneOf(v, def string, allowed ...string) string {
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	return def
}

// ownDiff is the diff of an edit an agent makes with its own tools (a
// stream-json CLI's Write or Edit), read off the tool's input.
func ownDiff(tc driver.ToolCall) map[string]any {
	if tc.Kind != driver.KindEdit || len(tc.RawInput) == 0 {
		return nil
	}
	var in struct {
		FilePath  string  `json:"file_path"`
		Path      string  `json:"path"`
		Content   *string `json:"content"`
		OldString *string `json:"old_string"`
		NewString *string `json:"new_string"`
	}
	if json.Unmarshal(tc.RawInput, &in) != nil {
		return nil
	}
	path := in.FilePath
	if path == "" {
		path = in.Path
	}
	switch {
	case path == "":
		return nil
	case in.Content != nil:
		return map[string]any{"type": "diff", "path": path, "oldText": nil, "newText": *in.Content}
	case in.NewString != nil && in.OldString != nil:
		return map[string]any{"type": "diff", "path": path, "oldText": *in.OldString, "newText": *in.NewString}
	}
	return nil
}
