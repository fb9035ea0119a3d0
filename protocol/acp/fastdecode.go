package acp

import (
	"encoding/json"
	"unicode/utf8"
	"unsafe"
)

// aliasMin is the length from which a chunk's text shares the line's memory
// instead of being copied: a 100 MiB chunk then exists once, and the many
// small chunks of a long reply do not each pin the line they came in.
const aliasMin = 64 << 10

// DecodeSessionNotification decodes the params of a session/update. data
// must be valid JSON (jsonrpc hands over nothing else) and must not be
// modified afterwards: the text of a long chunk refers to it. The updates
// that come by the thousand (message, thought and user chunks of text) are
// read in the one pass that finds their members; any other update is
// decoded by its own union decoder, and anything unusual by encoding/json,
// so the result is always what json.Unmarshal gives.
func DecodeSessionNotification(data []byte, n *SessionNotification) error {
	if fastNotification(data, n) {
		return nil
	}
	*n = SessionNotification{}
	return json.Unmarshal(data, n)
}

func fastNotification(data []byte, n *SessionNotification) bool {
	*n = SessionNotification{}
	var update []byte
	ok := members(data, func(key, val []byte) bool {
		switch string(key) {
		case "sessionId":
			s, ok := stringValue(val)
			n.SessionId = s
			return ok
		case "update":
			update = val
			return true
		case "_meta":
			return false
		}
		return !folds(key, "sessionId", "update", "_meta")
	})
	if !ok || update == nil {
		return false
	}
	if c, tag, ok := fastChunk(update); ok {
		switch tag {
		case UpdateAgentMessageChunk:
			n.Update.AgentMessageChunk = c
		case UpdateAgentThoughtChunk:
			n.Update.AgentThoughtChunk = c
		case UpdateUserMessageChunk:
			n.Update.UserMessageChunk = c
		}
		return true
	}
	if fastVariant(update, &n.Update) {
		return true
	}
	return n.Update.UnmarshalJSON(update) == nil
}

// fastVariant reads the other updates of a flood, tool calls, their
// updates and plans, when they hold only plain members.
func fastVariant(data []byte, u *SessionUpdate) bool {
	tag, present, err := peekTagFast(data, "sessionUpdate")
	if err != nil || !present {
		return false
	}
	str := func(dst *string) func([]byte) bool {
		return func(val []byte) bool {
			s, ok := stringValue(val)
			*dst = s
			return ok
		}
	}
	ptr := func(dst **string) func([]byte) bool {
		return func(val []byte) bool {
			s, ok := stringValue(val)
			*dst = &s
			return ok
		}
	}
	raw := func(dst *json.RawMessage) func([]byte) bool {
		return func(val []byte) bool {
			*dst = append(json.RawMessage(nil), val...)
			return string(val) != "null"
		}
	}
	switch tag {
	case UpdateToolCall:
		tc := new(ToolCall)
		var kind, status string
		if !fields(data, map[string]func([]byte) bool{
			"toolCallId": str(&tc.ToolCallId), "title": str(&tc.Title), "kind": str(&kind), "status": str(&status),
			"name": str(&tc.Name), "rawInput": raw(&tc.RawInput), "rawOutput": raw(&tc.RawOutput),
		}, "content", "locations", "_meta") {
			return false
		}
		tc.Kind, tc.Status = ToolKind(kind), ToolCallStatus(status)
		*u = SessionUpdate{ToolCall: tc}
		return true
	case UpdateToolCallUpdate:
		tu := new(ToolCallUpdate)
		var title, kind, status, name *string
		if !fields(data, map[string]func([]byte) bool{
			"toolCallId": str(&tu.ToolCallId), "title": ptr(&title), "kind": ptr(&kind), "status": ptr(&status),
			"name": ptr(&name), "rawInput": raw(&tu.RawInput), "rawOutput": raw(&tu.RawOutput),
		}, "content", "locations", "_meta") {
			return false
		}
		tu.Title, tu.Name = title, name
		if kind != nil {
			tu.Kind = (*ToolKind)(kind)
		}
		if status != nil {
			tu.Status = (*ToolCallStatus)(status)
		}
		*u = SessionUpdate{ToolCallUpdate: tu}
		return true
	case UpdatePlan:
		p := new(Plan)
		if !fields(data, map[string]func([]byte) bool{
			"entries": func(val []byte) bool { return planEntries(val, &p.Entries) },
		}, "_meta") {
			return false
		}
		*u = SessionUpdate{Plan: p}
		return true
	}
	return false
}

// planEntries reads an array of plain plan entries.
func planEntries(data []byte, dst *PlanEntryList) bool {
	i := skipWS(data, 0)
	if i >= len(data) || data[i] != '[' {
		return false
	}
	list := PlanEntryList{}
	i = skipWS(data, i+1)
	if i < len(data) && data[i] == ']' {
		*dst = list
		return true
	}
	for {
		end, ok := skipValue(data, i)
		if !ok {
			return false
		}
		var e PlanEntry
		var prio, status string
		if !fields(data[i:end], map[string]func([]byte) bool{
			"content":  func(v []byte) bool { s, ok := stringValue(v); e.Content = s; return ok },
			"priority": func(v []byte) bool { s, ok := stringValue(v); prio = s; return ok },
			"status":   func(v []byte) bool { s, ok := stringValue(v); status = s; return ok },
		}, "_meta") {
			return false
		}
		e.Priority, e.Status = PlanEntryPriority(prio), PlanEntryStatus(status)
		list = append(list, e)
		i = skipWS(data, end)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = skipWS(data, i+1)
		case ']':
			*dst = list
			return true
		default:
			return false
		}
	}
}

// fields reads an object's members with set; a member in slow, or one
// encoding/json would match to a name but for case, makes it fail.
func fields(data []byte, set map[string]func([]byte) bool, slow ...string) bool {
	return members(data, func(key, val []byte) bool {
		if f, ok := set[string(key)]; ok {
			return f(val)
		}
		for _, s := range slow {
			if foldASCII(key, s) && len(key) == len(s) {
				return false
			}
		}
		for name := range set {
			if len(key) == len(name) && foldASCII(key, name) {
				return false
			}
		}
		return true
	})
}

// fastChunk reads a text chunk update; ok is false for anything else.
func fastChunk(data []byte) (c *ContentChunk, tag string, ok bool) {
	var content []byte
	c = new(ContentChunk)
	ok = members(data, func(key, val []byte) bool {
		switch string(key) {
		case "sessionUpdate":
			s, ok := stringValue(val)
			tag = s
			return ok
		case "content":
			content = val
			return true
		case "messageId":
			if string(val) == "null" {
				c.MessageId = nil
				return true
			}
			s, ok := stringValue(val)
			c.MessageId = &s
			return ok
		case "_meta":
			return false
		}
		return !folds(key, "sessionUpdate", "content", "messageId", "_meta")
	})
	switch tag {
	case UpdateAgentMessageChunk, UpdateAgentThoughtChunk, UpdateUserMessageChunk:
	default:
		return nil, "", false
	}
	if !ok || content == nil {
		return nil, "", false
	}
	var typ string
	text, hasText := "", false
	ok = members(content, func(key, val []byte) bool {
		switch string(key) {
		case "type":
			s, ok := stringValue(val)
			typ = s
			return ok
		case "text":
			s, ok := stringValue(val)
			text, hasText = s, true
			return ok
		case "annotations", "_meta":
			return false
		}
		return !folds(key, "type", "text", "annotations", "_meta")
	})
	if !ok || typ != ContentText || !hasText {
		return nil, "", false
	}
	c.Content = ContentBlock{Text: &TextContent{Text: text}}
	return c, tag, true
}

// members calls f with each member of the object data (valid JSON); it
// reports false, for the caller to fall back, if f does or data is not
// a plain object of plainly spelled names.
func members(data []byte, f func(key, val []byte) bool) bool {
	i := skipWS(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = skipWS(data, i+1)
	if i < len(data) && data[i] == '}' {
		return true
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return false
		}
		ks, ke, escaped, ok := scanString(data, i)
		if !ok || escaped || !ascii(data[ks:ke]) {
			return false // encoding/json folds names Unicode-wise
		}
		i = skipWS(data, ke)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		vs := skipWS(data, i+1)
		ve, ok := skipValue(data, vs)
		if !ok || !f(data[ks+1:ke-1], data[vs:ve]) {
			return false
		}
		i = skipWS(data, ve)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = skipWS(data, i+1)
		case '}':
			return true
		default:
			return false
		}
	}
}

// folds reports whether key is one of names but for ASCII case, which
// encoding/json would match: such a document goes the slow way.
func folds(key []byte, names ...string) bool {
	for _, n := range names {
		if len(key) == len(n) && string(key) != n && foldASCII(key, n) {
			return true
		}
	}
	return false
}

func foldASCII(a []byte, b string) bool {
	for i := range a {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if lx := x | 0x20; lx != y|0x20 || lx < 'a' || lx > 'z' {
			return false
		}
	}
	return true
}

func ascii(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// stringValue decodes a JSON string value. Without escapes and in valid
// UTF-8 it is taken as is: shared with data from aliasMin bytes on, copied
// below that.
func stringValue(val []byte) (string, bool) {
	if len(val) < 2 || val[0] != '"' {
		return "", false
	}
	_, end, escaped, ok := scanString(val, 0)
	if !ok || end != len(val) {
		return "", false
	}
	raw := val[1 : len(val)-1]
	if escaped || !utf8.Valid(raw) {
		var s string
		if json.Unmarshal(val, &s) != nil {
			return "", false
		}
		return s, true
	}
	if len(raw) >= aliasMin {
		return unsafe.String(&raw[0], len(raw)), true
	}
	return string(raw), true
}
