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
// that come by the thousand (message, thought and user chunks of text,
// plain tool calls and plans) are read in the one pass that finds their
// members; any other update is decoded by its own union decoder, and
// anything unusual by encoding/json, so the result is always what
// json.Unmarshal gives.
func DecodeSessionNotification(data []byte, n *SessionNotification) error {
	var d Decoder
	return d.Decode(data, n)
}

// A Decoder decodes session/update params as DecodeSessionNotification
// does, and reuses the strings that repeat from one update to the next
// (the session id, the ids of the latest tool calls) instead of copying
// them out of every line. It is not safe for concurrent use: a connection
// has one, used in wire order.
type Decoder struct {
	session string
	toolIDs [8]string // the latest, round robin
	nextID  int
}

// Retains reports whether what Decode gives for data of size bytes may
// refer to data: only the text of a chunk of aliasMin bytes or more does.
// Anything shorter may be decoded from a buffer the caller reuses.
func (d *Decoder) Retains(size int) bool { return size >= aliasMin }

// Decode decodes one session/update's params into n.
func (d *Decoder) Decode(data []byte, n *SessionNotification) error {
	if d.fastNotification(data, n) {
		return nil
	}
	var m SessionNotification // on the heap only on this, the slow, path
	err := json.Unmarshal(data, &m)
	*n = m
	return err
}

func (d *Decoder) fastNotification(data []byte, n *SessionNotification) bool {
	*n = SessionNotification{}
	var update []byte
	ok := members(data, func(key, val []byte) bool {
		switch string(key) {
		case "sessionId":
			s, ok := d.sessionID(val)
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
	c, tag, ok := fastChunk(update)
	if ok {
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
	if d.fastVariant(update, tag, &n.Update) {
		return true
	}
	return n.Update.UnmarshalJSON(update) == nil
}

// sessionID decodes the session id, which is the same in every update of
// a session.
func (d *Decoder) sessionID(val []byte) (string, bool) {
	if raw, ok := plainString(val); ok && string(raw) == d.session {
		return d.session, true
	}
	s, ok := stringValue(val)
	if ok {
		d.session = s
	}
	return s, ok
}

// toolID decodes a tool call id: a call's updates follow it closely.
func (d *Decoder) toolID(val []byte) (string, bool) {
	if raw, ok := plainString(val); ok {
		for _, id := range d.toolIDs {
			if string(raw) == id && id != "" {
				return id, true
			}
		}
	}
	s, ok := stringValue(val)
	if ok {
		d.toolIDs[d.nextID] = s
		d.nextID = (d.nextID + 1) % len(d.toolIDs)
	}
	return s, ok
}

// fastVariant reads the other updates of a flood, tool calls, their
// updates and plans, when they hold only plain members. tag is the
// update's tag when fastChunk saw it ("" if not): every sessionUpdate
// member must say the same.
func (d *Decoder) fastVariant(data []byte, tag string, u *SessionUpdate) bool {
	if tag == "" {
		t, present, err := peekTagFast(data, "sessionUpdate")
		if err != nil || !present {
			return false
		}
		tag = t
	}
	sameTag := func(val []byte) bool {
		raw, ok := plainString(val)
		return ok && string(raw) == tag
	}
	switch tag {
	case UpdateToolCall:
		tc := new(ToolCall)
		var kind, status string
		if !fields(data, toolCallNames, toolCallSlow, func(i int, val []byte) (ok bool) {
			switch i {
			case 0:
				tc.ToolCallId, ok = d.toolID(val)
			case 1:
				tc.Title, ok = stringValue(val)
			case 2:
				kind, ok = knownString(val, toolKinds)
			case 3:
				status, ok = knownString(val, toolStatuses)
			case 4:
				tc.Name, ok = stringValue(val)
			case 5:
				tc.RawInput, ok = rawValue(val)
			case 6:
				tc.RawOutput, ok = rawValue(val)
			case 7:
				ok = sameTag(val)
			}
			return ok
		}) {
			return false
		}
		tc.Kind, tc.Status = ToolKind(kind), ToolCallStatus(status)
		*u = SessionUpdate{ToolCall: tc}
		return true
	case UpdateToolCallUpdate:
		// One allocation for the update and the members it points to.
		tu := new(struct {
			ToolCallUpdate
			title, name string
			kind        ToolKind
			status      ToolCallStatus
		})
		if !fields(data, toolCallNames, toolCallSlow, func(i int, val []byte) (ok bool) {
			switch i {
			case 0:
				tu.ToolCallId, ok = d.toolID(val)
			case 1:
				tu.title, ok = stringValue(val)
				tu.Title = &tu.title
			case 2:
				var k string
				k, ok = knownString(val, toolKinds)
				tu.kind = ToolKind(k)
				tu.Kind = &tu.kind
			case 3:
				var st string
				st, ok = knownString(val, toolStatuses)
				tu.status = ToolCallStatus(st)
				tu.Status = &tu.status
			case 4:
				tu.name, ok = stringValue(val)
				tu.Name = &tu.name
			case 5:
				tu.RawInput, ok = rawValue(val)
			case 6:
				tu.RawOutput, ok = rawValue(val)
			case 7:
				ok = sameTag(val)
			}
			return ok
		}) {
			return false
		}
		*u = SessionUpdate{ToolCallUpdate: &tu.ToolCallUpdate}
		return true
	case UpdatePlan:
		// The plan and room for an entry: one allocation for a plan of one
		// (a longer one grows as it would have).
		p := new(struct {
			Plan
			entries [1]PlanEntry
		})
		p.Entries = p.entries[:0]
		if !fields(data, planNames, metaSlow, func(i int, val []byte) bool {
			if i == 1 {
				return sameTag(val)
			}
			return planEntries(val, &p.Entries)
		}) {
			return false
		}
		*u = SessionUpdate{Plan: &p.Plan}
		return true
	}
	return false
}

// The members the fast path reads, by index, and those it leaves to
// encoding/json.
var (
	toolCallNames  = []string{"toolCallId", "title", "kind", "status", "name", "rawInput", "rawOutput", "sessionUpdate"}
	toolCallSlow   = []string{"content", "locations", "_meta"}
	planNames      = []string{"entries", "sessionUpdate"}
	planEntryNames = []string{"content", "priority", "status"}
	metaSlow       = []string{"_meta"}

	// The values of the enumerations a flood repeats, decoded without a
	// copy.
	toolKinds = []string{string(ToolKindRead), string(ToolKindEdit), string(ToolKindDelete), string(ToolKindMove), string(ToolKindSearch),
		string(ToolKindExecute), string(ToolKindThink), string(ToolKindFetch), string(ToolKindSwitchMode), string(ToolKindOther)}
	toolStatuses = []string{string(ToolCallPending), string(ToolCallInProgress), string(ToolCallCompleted), string(ToolCallFailed)}
	planPriority = []string{string(PlanPriorityHigh), string(PlanPriorityMedium), string(PlanPriorityLow)}
	planStatuses = []string{string(PlanStatusPending), string(PlanStatusInProgress), string(PlanStatusCompleted)}
	contentTypes = []string{ContentText}
)

// plainString returns the bytes of a JSON string value without escapes.
func plainString(val []byte) ([]byte, bool) {
	if len(val) < 2 || val[0] != '"' || val[len(val)-1] != '"' {
		return nil, false
	}
	raw := val[1 : len(val)-1]
	for _, c := range raw {
		if c == '\\' || c == '"' {
			return nil, false
		}
	}
	return raw, true
}

// knownString decodes a JSON string, returning the one of names it spells
// (no copy) or else a decoded copy.
func knownString(val []byte, names []string) (string, bool) {
	if raw, ok := plainString(val); ok {
		for _, n := range names {
			if string(raw) == n {
				return n, true
			}
		}
	}
	return stringValue(val)
}

// rawValue copies a raw member, as json.RawMessage does; null is left to
// encoding/json.
func rawValue(val []byte) (json.RawMessage, bool) {
	return append(json.RawMessage(nil), val...), string(val) != "null"
}

// planEntries reads an array of plain plan entries.
func planEntries(data []byte, dst *PlanEntryList) bool {
	i := skipWS(data, 0)
	if i >= len(data) || data[i] != '[' {
		return false
	}
	list := (*dst)[:0]
	if list == nil {
		list = PlanEntryList{}
	}
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
		if !fields(data[i:end], planEntryNames, metaSlow, func(k int, v []byte) (ok bool) {
			switch k {
			case 0:
				e.Content, ok = stringValue(v)
			case 1:
				prio, ok = knownString(v, planPriority)
			case 2:
				status, ok = knownString(v, planStatuses)
			}
			return ok
		}) {
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

// fields reads an object's members named in names with set (by index);
// a member in slow, or one encoding/json would match to a name but for
// case, makes it fail.
func fields(data []byte, names, slow []string, set func(i int, val []byte) bool) bool {
	return members(data, func(key, val []byte) bool {
		for i, n := range names {
			if string(key) == n {
				return set(i, val)
			}
		}
		for _, list := range [2][]string{names, slow} {
			for _, n := range list {
				if len(key) == len(n) && foldASCII(key, n) {
					return false
				}
			}
		}
		return true
	})
}

// fastChunk reads a text chunk update; ok is false for anything else, and
// tag then names the update when its first sessionUpdate member is
// another known one (what made fastChunk stop).
func fastChunk(data []byte) (c *ContentChunk, tag string, ok bool) {
	var content, messageID []byte
	ok = members(data, func(key, val []byte) bool {
		switch string(key) {
		case "sessionUpdate":
			// Anything but a plainly spelled chunk tag is another update:
			// stop here, without a copy of the tag.
			tag = ""
			if raw, ok := plainString(val); ok {
				tag = knownTags[string(raw)]
			}
			switch tag {
			case UpdateAgentMessageChunk, UpdateAgentThoughtChunk, UpdateUserMessageChunk:
				return true
			}
			return false
		case "content":
			content = val
			return true
		case "messageId":
			messageID = val
			return true
		case "_meta":
			return false
		}
		return !folds(key, "sessionUpdate", "content", "messageId", "_meta")
	})
	switch tag {
	case UpdateAgentMessageChunk, UpdateAgentThoughtChunk, UpdateUserMessageChunk:
	default:
		return nil, tag, false
	}
	if !ok || content == nil {
		return nil, "", false
	}
	var typ string
	text, hasText := "", false
	ok = members(content, func(key, val []byte) bool {
		switch string(key) {
		case "type":
			s, ok := knownString(val, contentTypes)
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
	// One allocation for the chunk, its text block and its message id.
	tc := new(struct {
		ContentChunk
		text TextContent
		id   string
	})
	tc.text.Text = text
	tc.Content = ContentBlock{Text: &tc.text}
	if messageID != nil && string(messageID) != "null" {
		if tc.id, ok = stringValue(messageID); !ok {
			return nil, "", false
		}
		tc.MessageId = &tc.id
	}
	return &tc.ContentChunk, tag, true
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
