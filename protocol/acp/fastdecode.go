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

	// Reuse makes the fast path decode each update into the same structs,
	// the ones the last Decode gave: for a caller that is done with a
	// notification (and copies what it keeps) before it decodes the next.
	// The strings and raw values are still its own.
	Reuse   bool
	scratch scratch
}

// scratch is a reusing Decoder's own structs, one of each.
type scratch struct {
	chunk  chunkBox
	tool   ToolCall
	update toolUpdateBox
	plan   planBox
}

// The structs the fast path decodes into, each one allocation for an
// update and the members it points to.
type (
	chunkBox struct {
		ContentChunk
		text TextContent
		id   string
	}
	toolUpdateBox struct {
		ToolCallUpdate
		title, name string
		kind        ToolKind
		status      ToolCallStatus
	}
	// planBox has room for one entry: a longer plan grows as it would.
	planBox struct {
		Plan
		entries [1]PlanEntry
	}
)

// box returns a zeroed struct to decode into: a new one, or with Reuse
// the decoder's own.
func box[T any](reuse bool, own *T) *T {
	if reuse {
		*own = *new(T)
		return own
	}
	return new(T)
}

// Retains reports whether what Decode gives for data of size bytes may
// refer to data: only the text of a chunk of aliasMin bytes or more does.
// Anything shorter may be decoded from a buffer the caller reuses.
func (d *Decoder) Retains(size int) bool { return size >= aliasMin }

// Release lets go of what the decoder's own structs refer to (Reuse): the
// text of a long chunk shares its line's memory, which must not stay
// pinned until the next update.
func (d *Decoder) Release() { d.scratch = scratch{} }

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
	var update bool
	_, ok := members(data, func(key, val []byte) (int, bool) {
		switch string(key) {
		case "sessionId":
			s, end, ok := d.sessionID(val)
			n.SessionId = s
			return end, ok
		case "update":
			// Read in place: a later duplicate overwrites it, as in
			// encoding/json.
			update = true
			return d.update(val, &n.Update)
		case "_meta":
			return 0, false
		}
		return 0, !folds(key, "sessionId", "update", "_meta")
	})
	return ok && update
}

// update reads the update at the start of data and returns its length:
// the updates of a flood in the one pass that finds their members, any
// other by its union decoder.
func (d *Decoder) update(data []byte, u *SessionUpdate) (int, bool) {
	*u = SessionUpdate{}
	c, tag, end, ok := d.fastChunk(data)
	if ok {
		switch tag {
		case UpdateAgentMessageChunk:
			u.AgentMessageChunk = c
		case UpdateAgentThoughtChunk:
			u.AgentThoughtChunk = c
		case UpdateUserMessageChunk:
			u.UserMessageChunk = c
		}
		return end, true
	}
	if end, ok := d.fastVariant(data, tag, u); ok {
		return end, true
	}
	*u = SessionUpdate{}
	end, ok = skipValue(data, 0)
	return end, ok && u.UnmarshalJSON(data[:end]) == nil
}

// sessionID decodes the session id at the start of val, which is the
// same in every update of a session.
func (d *Decoder) sessionID(val []byte) (string, int, bool) {
	if raw, end, ok := plainString(val); ok && string(raw) == d.session {
		return d.session, end, true
	}
	s, end, ok := stringValue(val)
	if ok {
		d.session = s
	}
	return s, end, ok
}

// toolID decodes the tool call id at the start of val: a call's updates
// follow it closely.
func (d *Decoder) toolID(val []byte) (string, int, bool) {
	if raw, end, ok := plainString(val); ok {
		for _, id := range d.toolIDs {
			if string(raw) == id && id != "" {
				return id, end, true
			}
		}
	}
	s, end, ok := stringValue(val)
	if ok {
		d.toolIDs[d.nextID] = s
		d.nextID = (d.nextID + 1) % len(d.toolIDs)
	}
	return s, end, ok
}

// fastVariant reads the other updates of a flood, tool calls, their
// updates and plans, when they hold only plain members, and returns the
// update's length. tag is the update's tag when fastChunk saw it ("" if
// not): every sessionUpdate member must say the same.
func (d *Decoder) fastVariant(data []byte, tag string, u *SessionUpdate) (int, bool) {
	if tag == "" {
		t, present, err := peekTagFast(data, "sessionUpdate")
		if err != nil || !present {
			return 0, false
		}
		tag = t
	}
	sameTag := func(val []byte) (int, bool) {
		raw, end, ok := plainString(val)
		return end, ok && string(raw) == tag
	}
	switch tag {
	case UpdateToolCall:
		tc := box(d.Reuse, &d.scratch.tool)
		var kind, status string
		end, ok := fields(data, toolCallNames, toolCallSlow, func(i int, val []byte) (end int, ok bool) {
			switch i {
			case 0:
				tc.ToolCallId, end, ok = d.toolID(val)
			case 1:
				tc.Title, end, ok = stringValue(val)
			case 2:
				kind, end, ok = knownString(val, toolKinds)
			case 3:
				status, end, ok = knownString(val, toolStatuses)
			case 4:
				tc.Name, end, ok = stringValue(val)
			case 5:
				tc.RawInput, end, ok = rawValue(val)
			case 6:
				tc.RawOutput, end, ok = rawValue(val)
			case 7:
				end, ok = sameTag(val)
			}
			return end, ok
		})
		if !ok {
			return 0, false
		}
		tc.Kind, tc.Status = ToolKind(kind), ToolCallStatus(status)
		*u = SessionUpdate{ToolCall: tc}
		return end, true
	case UpdateToolCallUpdate:
		tu := box(d.Reuse, &d.scratch.update)
		end, ok := fields(data, toolCallNames, toolCallSlow, func(i int, val []byte) (end int, ok bool) {
			switch i {
			case 0:
				tu.ToolCallId, end, ok = d.toolID(val)
			case 1:
				tu.title, end, ok = stringValue(val)
				tu.Title = &tu.title
			case 2:
				var k string
				k, end, ok = knownString(val, toolKinds)
				tu.kind = ToolKind(k)
				tu.Kind = &tu.kind
			case 3:
				var st string
				st, end, ok = knownString(val, toolStatuses)
				tu.status = ToolCallStatus(st)
				tu.Status = &tu.status
			case 4:
				tu.name, end, ok = stringValue(val)
				tu.Name = &tu.name
			case 5:
				tu.RawInput, end, ok = rawValue(val)
			case 6:
				tu.RawOutput, end, ok = rawValue(val)
			case 7:
				end, ok = sameTag(val)
			}
			return end, ok
		})
		if !ok {
			return 0, false
		}
		*u = SessionUpdate{ToolCallUpdate: &tu.ToolCallUpdate}
		return end, true
	case UpdatePlan:
		p := box(d.Reuse, &d.scratch.plan)
		p.Entries = p.entries[:0]
		end, ok := fields(data, planNames, metaSlow, func(i int, val []byte) (int, bool) {
			if i == 1 {
				return sameTag(val)
			}
			return planEntries(val, &p.Entries)
		})
		if !ok {
			return 0, false
		}
		*u = SessionUpdate{Plan: &p.Plan}
		return end, true
	}
	return 0, false
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

// plainString returns the bytes of the JSON string at the start of val,
// if it has no escapes, and its length.
func plainString(val []byte) (raw []byte, end int, ok bool) {
	if len(val) < 2 || val[0] != '"' {
		return nil, 0, false
	}
	_, end, escaped, ok := scanString(val, 0)
	if !ok || escaped {
		return nil, 0, false
	}
	return val[1 : end-1], end, true
}

// knownString decodes the JSON string at the start of val, returning the
// one of names it spells (no copy) or else a decoded copy.
func knownString(val []byte, names []string) (string, int, bool) {
	if raw, end, ok := plainString(val); ok {
		for _, n := range names {
			if string(raw) == n {
				return n, end, true
			}
		}
	}
	return stringValue(val)
}

// rawValue copies the value at the start of val, as json.RawMessage does;
// null is left to encoding/json.
func rawValue(val []byte) (json.RawMessage, int, bool) {
	end, ok := skipValue(val, 0)
	if !ok {
		return nil, 0, false
	}
	return append(json.RawMessage(nil), val[:end]...), end, string(val[:end]) != "null"
}

// planEntries reads the array of plain plan entries at the start of data
// and returns its length.
func planEntries(data []byte, dst *PlanEntryList) (int, bool) {
	if len(data) == 0 || data[0] != '[' {
		return 0, false
	}
	list := (*dst)[:0]
	if list == nil {
		list = PlanEntryList{}
	}
	i := skipWS(data, 1)
	if i < len(data) && data[i] == ']' {
		*dst = list
		return i + 1, true
	}
	for {
		var e PlanEntry
		var prio, status string
		n, ok := fields(data[i:], planEntryNames, metaSlow, func(k int, v []byte) (end int, ok bool) {
			switch k {
			case 0:
				e.Content, end, ok = stringValue(v)
			case 1:
				prio, end, ok = knownString(v, planPriority)
			case 2:
				status, end, ok = knownString(v, planStatuses)
			}
			return end, ok
		})
		if !ok {
			return 0, false
		}
		e.Priority, e.Status = PlanEntryPriority(prio), PlanEntryStatus(status)
		list = append(list, e)
		i = skipWS(data, i+n)
		if i >= len(data) {
			return 0, false
		}
		switch data[i] {
		case ',':
			i = skipWS(data, i+1)
		case ']':
			*dst = list
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// fields reads the members named in names of the object at the start of
// data with set (by index), which returns the length of the value it read;
// a member in slow, or one encoding/json would match to a name but for
// case, makes it fail. It returns the object's length.
func fields(data []byte, names, slow []string, set func(i int, val []byte) (int, bool)) (int, bool) {
	return members(data, func(key, val []byte) (int, bool) {
		for i, n := range names {
			if string(key) == n {
				return set(i, val)
			}
		}
		for _, list := range [2][]string{names, slow} {
			for _, n := range list {
				if len(key) == len(n) && foldASCII(key, n) {
					return 0, false
				}
			}
		}
		return 0, true
	})
}

// fastChunk reads the text chunk update at the start of data and returns
// its length; ok is false for anything else, and tag then names the
// update when its first sessionUpdate member is another known one (what
// made fastChunk stop).
func (d *Decoder) fastChunk(data []byte) (c *ContentChunk, tag string, end int, ok bool) {
	var typ, text, messageID string
	var hasContent, hasText, hasID bool
	end, ok = members(data, func(key, val []byte) (int, bool) {
		switch string(key) {
		case "sessionUpdate":
			// Anything but a plainly spelled chunk tag is another update:
			// stop here, without a copy of the tag.
			tag = ""
			raw, end, ok := plainString(val)
			if ok {
				tag = knownTags[string(raw)]
			}
			switch tag {
			case UpdateAgentMessageChunk, UpdateAgentThoughtChunk, UpdateUserMessageChunk:
				return end, true
			}
			return 0, false
		case "content":
			hasContent = true
			typ, text, hasText = "", "", false
			return members(val, func(key, val []byte) (end int, ok bool) {
				switch string(key) {
				case "type":
					typ, end, ok = knownString(val, contentTypes)
					return end, ok
				case "text":
					hasText = true
					text, end, ok = stringValue(val)
					return end, ok
				case "annotations", "_meta":
					return 0, false
				}
				return 0, !folds(key, "type", "text", "annotations", "_meta")
			})
		case "messageId":
			if len(val) >= 4 && string(val[:4]) == "null" {
				hasID = false
				return 4, true
			}
			s, end, ok := stringValue(val)
			messageID, hasID = s, true
			return end, ok
		case "_meta":
			return 0, false
		}
		return 0, !folds(key, "sessionUpdate", "content", "messageId", "_meta")
	})
	switch tag {
	case UpdateAgentMessageChunk, UpdateAgentThoughtChunk, UpdateUserMessageChunk:
	default:
		return nil, tag, 0, false
	}
	if !ok || !hasContent || typ != ContentText || !hasText {
		return nil, "", 0, false
	}
	tc := box(d.Reuse, &d.scratch.chunk)
	tc.text.Text = text
	tc.Content = ContentBlock{Text: &tc.text}
	if hasID {
		tc.id = messageID
		tc.MessageId = &tc.id
	}
	return &tc.ContentChunk, tag, end, true
}

// members calls f with each member of the object at the start of data
// (valid JSON, which may go on after it) and returns the object's length.
// f gets the member's name and data from its value on, and returns the
// length of the value if it read it, or 0 to have it skipped. members
// reports false, for the caller to fall back, if f does or the object is
// not a plain one of plainly spelled names.
func members(data []byte, f func(key, val []byte) (int, bool)) (int, bool) {
	i := skipWS(data, 0)
	if i >= len(data) || data[i] != '{' {
		return 0, false
	}
	i = skipWS(data, i+1)
	if i < len(data) && data[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return 0, false
		}
		ks, ke, escaped, ok := scanString(data, i)
		if !ok || escaped || !ascii(data[ks:ke]) {
			return 0, false // encoding/json folds names Unicode-wise
		}
		i = skipWS(data, ke)
		if i >= len(data) || data[i] != ':' {
			return 0, false
		}
		vs := skipWS(data, i+1)
		n, ok := f(data[ks+1:ke-1], data[vs:])
		if !ok {
			return 0, false
		}
		if n == 0 {
			ve, ok := skipValue(data, vs)
			if !ok {
				return 0, false
			}
			n = ve - vs
		}
		i = skipWS(data, vs+n)
		if i >= len(data) {
			return 0, false
		}
		switch data[i] {
		case ',':
			i = skipWS(data, i+1)
		case '}':
			return i + 1, true
		default:
			return 0, false
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

// stringValue decodes the JSON string at the start of val and returns its
// length. Without escapes and in valid UTF-8 it is taken as is: shared
// with val from aliasMin bytes on, copied below that.
func stringValue(val []byte) (string, int, bool) {
	if len(val) < 2 || val[0] != '"' {
		return "", 0, false
	}
	_, end, escaped, ok := scanString(val, 0)
	if !ok {
		return "", 0, false
	}
	raw := val[1 : end-1]
	if escaped || !utf8.Valid(raw) {
		var s string
		if json.Unmarshal(val[:end], &s) != nil {
			return "", 0, false
		}
		return s, end, true
	}
	if len(raw) >= aliasMin {
		return unsafe.String(&raw[0], len(raw)), end, true
	}
	return string(raw), end, true
}
