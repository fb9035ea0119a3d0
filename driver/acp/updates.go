package acp

import (
	"encoding/json"

	"github.com/tai-dev/tai/driver"
	schema "github.com/tai-dev/tai/protocol/acp"
)

// maxBuffered bounds the updates held for a session whose session/new has
// not answered yet; an agent flooding before the answer loses the excess,
// counted, rather than tai's memory.
const maxBuffered = 10000

func (s *Session) onUpdate(params json.RawMessage) {
	var n schema.SessionNotification
	if err := s.dec.Decode(params, &n); err != nil {
		s.emit(driver.Event{Type: driver.EventError, Error: &driver.ErrorInfo{Code: "bad_update", Message: "undecodable session/update: " + err.Error()}})
		return
	}
	if s.dec.Retains(len(params)) {
		// A long chunk's text is in the decoder's structs: it goes with
		// its line once applied, not at the next update.
		defer s.dec.Release()
	}
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	switch {
	case s.replaying && n.SessionId == s.id && !s.cfg.LoadReplay:
		s.dropped++
	case s.replaying && n.SessionId == s.id:
		// Asked for (tai acp's session/load): the editor shows the history.
		s.apply(n.Update)
	case s.awaiting:
		if m, ok := s.own(params, n); ok && len(s.buffered) < maxBuffered {
			s.buffered = append(s.buffered, m)
		} else {
			s.dropped++
		}
	case n.SessionId != s.id:
		s.dropped++
		s.log.Debug("update for an unknown session dropped", "session", n.SessionId)
	default:
		s.apply(n.Update)
	}
}

// own returns n, which params decoded to, as memory of its own: a
// reusing decoder's structs are its again at the next update. The rare
// notification that is kept is decoded anew.
func (s *Session) own(params json.RawMessage, n schema.SessionNotification) (schema.SessionNotification, bool) {
	if !s.dec.Reuse {
		return n, true
	}
	var m schema.SessionNotification
	err := json.Unmarshal(params, &m) // it decoded once: it does again
	return m, err == nil
}

// apply translates one update into events. Callers hold applyMu.
func (s *Session) apply(u schema.SessionUpdate) {
	switch {
	case u.AgentMessageChunk != nil:
		s.emitLocked(driver.Event{Type: driver.EventMessage, Message: chunk(driver.RoleAgent, u.AgentMessageChunk)})
	case u.AgentThoughtChunk != nil:
		s.emitLocked(driver.Event{Type: driver.EventMessage, Message: chunk(driver.RoleThought, u.AgentThoughtChunk)})
	case u.UserMessageChunk != nil:
		s.emitLocked(driver.Event{Type: driver.EventMessage, Message: chunk(driver.RoleUser, u.UserMessageChunk)})
	case u.ToolCall != nil:
		// The call kept and the call sent are one: a kept call is never
		// changed, only replaced (mergeToolCall), so what a sink holds
		// stays as it was sent.
		tc := convertToolCall(u.ToolCall)
		s.keepTool(tc)
		s.emitLocked(driver.Event{Type: driver.EventToolCall, ToolCall: tc})
	case u.ToolCallUpdate != nil:
		s.emitLocked(driver.Event{Type: driver.EventToolCall, ToolCall: s.mergeToolCall(u.ToolCallUpdate)})
	case u.Plan != nil:
		// A plan of one entry in one allocation, a longer one in two.
		pe := new(struct {
			driver.Plan
			entries [1]driver.PlanEntry
		})
		p := &pe.Plan
		p.Entries = pe.entries[:0]
		if n := len(u.Plan.Entries); n > 1 {
			p.Entries = make([]driver.PlanEntry, 0, n)
		}
		for _, e := range u.Plan.Entries {
			p.Entries = append(p.Entries, driver.PlanEntry{Content: e.Content, Priority: string(e.Priority), Status: string(e.Status)})
		}
		s.emitLocked(driver.Event{Type: driver.EventPlan, Plan: p})
	case u.AvailableCommandsUpdate != nil:
		cmds := []driver.Command{}
		for _, c := range u.AvailableCommandsUpdate.AvailableCommands {
			dc := driver.Command{Name: c.Name, Description: c.Description}
			if c.Input != nil {
				dc.Hint = c.Input.Hint
			}
			cmds = append(cmds, dc)
		}
		s.emitLocked(driver.Event{Type: driver.EventCommands, Commands: cmds})
	case u.CurrentModeUpdate != nil:
		s.mode = u.CurrentModeUpdate.CurrentModeId
		s.emitLocked(driver.Event{Type: driver.EventModeChanged, Mode: &driver.Mode{ID: s.mode}})
	case u.ConfigOptionUpdate != nil:
		s.setConfigLocked(convertConfig(u.ConfigOptionUpdate.ConfigOptions))
	case u.SessionInfoUpdate != nil:
		info := &driver.SessionInfo{}
		empty := ""
		if t, ok := u.SessionInfoUpdate.Title.Get(); ok {
			info.Title = &t
		} else if u.SessionInfoUpdate.Title.Null {
			info.Title = &empty
		}
		if t, ok := u.SessionInfoUpdate.UpdatedAt.Get(); ok {
			info.UpdatedAt = &t
		}
		info.Meta = u.SessionInfoUpdate.Meta
		s.emitLocked(driver.Event{Type: driver.EventSessionInfo, Info: info})
	case u.UsageUpdate != nil:
		us := &driver.Usage{ContextUsed: u.UsageUpdate.Used, ContextSize: u.UsageUpdate.Size}
		if c := u.UsageUpdate.Cost; c != nil {
			us.CostAmount, us.Currency = c.Amount, c.Currency
		}
		s.emitLocked(driver.Event{Type: driver.EventUsage, Usage: us})
	default:
		// notice, compaction (not offered by tai) and kinds newer than tai:
		// passed through raw, never misread.
		raw, _ := u.MarshalJSON()
		s.emitLocked(driver.Event{Type: driver.EventRaw, Raw: &driver.RawUpdate{Kind: driver.RawKind(u.Kind()), Data: raw}})
	}
}

func (s *Session) setConfigLocked(opts []driver.ConfigOption) {
	s.caps.ConfigOptions = len(opts) > 0 || s.caps.ConfigOptions
	s.config = opts
	changed := false
	if v := configMode(opts); v != "" && v != s.mode && !s.caps.Modes {
		s.mode, changed = v, true
	}
	s.emitLocked(driver.Event{Type: driver.EventConfigOptions, Config: opts})
	if changed {
		// Agents whose modes are only a config option (opencode): the mode
		// changed all the same.
		s.emitLocked(driver.Event{Type: driver.EventModeChanged, Mode: &driver.Mode{ID: s.mode}})
	}
}

// configMode is the current value of the config option of category mode.
func configMode(opts []driver.ConfigOption) string {
	for _, o := range opts {
		var v string
		if o.Category == "mode" && json.Unmarshal(o.CurrentValue, &v) == nil {
			return v
		}
	}
	return ""
}

func (s *Session) findConfig(id string) (driver.ConfigOption, bool) {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	for _, o := range s.config {
		if o.ID == id {
			return o, true
		}
	}
	for _, o := range s.config {
		if o.Category == id {
			return o, true
		}
	}
	return driver.ConfigOption{}, false
}

func (s *Session) configIDs() []string {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	var ids []string
	for _, o := range s.config {
		ids = append(ids, o.ID)
	}
	return ids
}

func chunk(role driver.Role, c *schema.ContentChunk) *driver.MessageChunk {
	m := &driver.MessageChunk{Role: role, MessageID: deref(c.MessageId)}
	if c.Content.Text != nil {
		m.Text = c.Content.Text.Text
	} else {
		m.Content, _ = c.Content.MarshalJSON()
	}
	return m
}

func convertToolCall(t *schema.ToolCall) *driver.ToolCall {
	tc := &driver.ToolCall{ID: t.ToolCallId, Title: t.Title, Kind: driver.ToolKind(t.Kind), Status: string(t.Status), Name: t.Name,
		RawInput: t.RawInput, RawOutput: t.RawOutput, Locations: convertLocations(t.Locations), Content: convertContent(t.Content)}
	if tc.Kind == "" {
		tc.Kind = driver.KindOther
	}
	if tc.Status == "" {
		tc.Status = "pending"
	}
	return tc
}

// maxTools is how many tool calls are kept for merging updates before the
// finished ones are let go: a long session's calls must not all stay.
// maxRunningTools bounds the calls kept at all: an agent that starts calls
// and never ends them must not grow tai without end.
const maxTools, maxRunningTools = 1024, 1 << 16

// keepTool stores a call for later patches.
func (s *Session) keepTool(tc *driver.ToolCall) {
	if s.toolsMax == 0 {
		s.toolsMax = maxTools
	}
	if len(s.tools) >= s.toolsMax {
		for id, t := range s.tools {
			if t.Status == "completed" || t.Status == "failed" {
				delete(s.tools, id)
			}
		}
		limit := s.toolsCap
		if limit == 0 {
			limit = maxRunningTools
		}
		switch {
		case len(s.tools) <= s.toolsMax/2:
		case s.toolsMax < limit: // mostly running: grow, so the sweeps stay rare
			s.toolsMax = min(2*s.toolsMax, limit)
		default:
			// As many running as tai keeps: half of them, any half, are
			// let go. A later update of one arrives as a call of its own,
			// without what its start said.
			drop := len(s.tools) - s.toolsMax/2
			for id := range s.tools {
				if drop == 0 {
					break
				}
				delete(s.tools, id)
				drop--
			}
			s.log.Warn("the agent keeps too many tool calls running: some are let go", "kept", len(s.tools))
		}
	}
	s.tools[tc.ID] = tc
}

// mergeToolCall applies an update to the call it patches (creating the
// call when the agent skipped the tool_call, as qwen 0.15 and gemini do),
// as a new call that replaces the kept one: the old one may be in an
// event a sink holds. Content and locations replace when present.
func (s *Session) mergeToolCall(u *schema.ToolCallUpdate) *driver.ToolCall {
	tc := new(driver.ToolCall)
	old, ok := s.tools[u.ToolCallId]
	if ok {
		*tc = *old
	} else {
		*tc = driver.ToolCall{ID: u.ToolCallId, Kind: driver.KindOther, Status: "pending"}
	}
	patchToolCall(tc, u)
	if ok {
		s.tools[u.ToolCallId] = tc
	} else {
		s.keepTool(tc)
	}
	return tc
}

func patchToolCall(tc *driver.ToolCall, u *schema.ToolCallUpdate) {
	if u.Title != nil {
		tc.Title = *u.Title
	}
	if u.Kind != nil {
		tc.Kind = driver.ToolKind(*u.Kind)
	}
	if u.Status != nil {
		tc.Status = string(*u.Status)
	}
	if u.Name != nil {
		tc.Name = *u.Name
	}
	if u.Content != nil {
		tc.Content = convertContent(u.Content)
	}
	if u.Locations != nil {
		tc.Locations = convertLocations(u.Locations)
	}
	if u.RawInput != nil {
		tc.RawInput = u.RawInput
	}
	if u.RawOutput != nil {
		tc.RawOutput = u.RawOutput
	}
}

func convertLocations(ls []schema.ToolCallLocation) []driver.Location {
	if ls == nil {
		return nil
	}
	out := make([]driver.Location, 0, len(ls))
	for _, l := range ls {
		out = append(out, driver.Location{Path: l.Path, Line: deref(l.Line)})
	}
	return out
}

func convertContent(cs []schema.ToolCallContent) []driver.ToolContent {
	if cs == nil {
		return nil
	}
	out := make([]driver.ToolContent, 0, len(cs))
	for _, c := range cs {
		switch {
		case c.Diff != nil:
			out = append(out, driver.ToolContent{Type: "diff", Path: c.Diff.Path, OldText: c.Diff.OldText, NewText: c.Diff.NewText})
		case c.Terminal != nil:
			out = append(out, driver.ToolContent{Type: "terminal", TerminalID: c.Terminal.TerminalId})
		case c.Content != nil && c.Content.Content.Text != nil:
			out = append(out, driver.ToolContent{Type: "text", Text: c.Content.Content.Text.Text})
		case c.Content != nil:
			raw, _ := c.Content.Content.MarshalJSON()
			out = append(out, driver.ToolContent{Type: c.Content.Content.Kind(), Raw: raw})
		default:
			raw, _ := c.MarshalJSON()
			out = append(out, driver.ToolContent{Type: c.Kind(), Raw: raw})
		}
	}
	return out
}

func convertConfig(opts schema.ConfigOptionList) []driver.ConfigOption {
	out := []driver.ConfigOption{}
	for _, o := range opts {
		switch {
		case o.Select != nil:
			cur, _ := json.Marshal(o.Select.CurrentValue)
			co := driver.ConfigOption{ID: o.Select.Id, Name: o.Select.Name, Category: string(o.Select.Category), Type: "select", CurrentValue: cur}
			for _, g := range o.Select.Options.Grouped {
				for _, v := range g.Options {
					co.Values = append(co.Values, driver.ConfigValue{Value: v.Value, Name: v.Name, Group: g.Name})
				}
			}
			if len(o.Select.Options.Grouped) == 0 {
				for _, v := range o.Select.Options.Flat {
					co.Values = append(co.Values, driver.ConfigValue{Value: v.Value, Name: v.Name})
				}
			}
			out = append(out, co)
		case o.Boolean != nil:
			cur, _ := json.Marshal(o.Boolean.CurrentValue)
			out = append(out, driver.ConfigOption{ID: o.Boolean.Id, Name: o.Boolean.Name, Category: string(o.Boolean.Category), Type: "boolean", CurrentValue: cur})
		}
	}
	return out
}
