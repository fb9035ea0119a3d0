package a2a

import (
	"fmt"
	"strings"

	"github.com/tai-dev/tai/driver"
)

// Dialect names.
const (
	Dialect10    = "1.0"
	Dialect03    = "0.3" // also 0.2.x: same methods and JSON
	DialectDraft = "draft"
)

// dialect is one A2A wire spelling: its method table and codec.
type dialect struct {
	name                                   string
	send, stream, get, cancel, resubscribe string
	// version is the A2A-Version header value; only 1.0 sends one (a
	// server treats a missing header as 0.3).
	version string
}

var (
	d10 = &dialect{name: Dialect10, send: "SendMessage", stream: "SendStreamingMessage", get: "GetTask",
		cancel: "CancelTask", resubscribe: "SubscribeToTask", version: "1.0"}
	d03 = &dialect{name: Dialect03, send: "message/send", stream: "message/stream", get: "tasks/get",
		cancel: "tasks/cancel", resubscribe: "tasks/resubscribe"}
	dDraft = &dialect{name: DialectDraft, send: "tasks/send", stream: "tasks/sendSubscribe", get: "tasks/get",
		cancel: "tasks/cancel", resubscribe: "tasks/resubscribe"}
)

// Dialects lists the A2A dialects this driver speaks, in negotiation order.
func Dialects() []string { return []string{Dialect10, Dialect03, DialectDraft} }

func lookupDialect(name string) (*dialect, bool) {
	for _, d := range []*dialect{d10, d03, dDraft} {
		if d.name == name {
			return d, true
		}
	}
	return nil, false
}

// outMessage is a user message to send, before it is spelled in a dialect.
type outMessage struct {
	ID        string
	ContextID string // "" on the first turn: the server assigns one (0.2+)
	TaskID    string // set when answering an interrupted task
	Content   []driver.Content

	// The draft has client-owned ids: the task id of a new turn and the
	// session id of a new session.
	DraftTaskID    string
	DraftSessionID string
}

// sendParams spells the SendMessage params. blocking asks a 0.3 server to
// answer with the finished task (1.0 blocks by default).
func (d *dialect) sendParams(m outMessage, tenant string, blocking bool) map[string]any {
	parts := make([]map[string]any, 0, len(m.Content))
	for _, c := range m.Content {
		parts = append(parts, d.part(c))
	}
	switch d {
	case dDraft:
		msg := map[string]any{"role": roleUser, "parts": parts}
		return map[string]any{"id": orDefault(m.TaskID, m.DraftTaskID), "sessionId": orDefault(m.ContextID, m.DraftSessionID), "message": msg}
	case d03:
		msg := map[string]any{"kind": "message", "messageId": m.ID, "role": roleUser, "parts": parts}
		setIf(msg, "contextId", m.ContextID)
		setIf(msg, "taskId", m.TaskID)
		p := map[string]any{"message": msg}
		if blocking {
			p["configuration"] = map[string]any{"blocking": true}
		}
		return p
	}
	msg := map[string]any{"messageId": m.ID, "role": "ROLE_USER", "parts": parts}
	setIf(msg, "contextId", m.ContextID)
	setIf(msg, "taskId", m.TaskID)
	p := map[string]any{"message": msg}
	setIf(p, "tenant", tenant)
	return p
}

// taskParams spells the params of GetTask, CancelTask and SubscribeToTask.
func (d *dialect) taskParams(id, tenant string) map[string]any {
	p := map[string]any{"id": id}
	if d == d10 {
		setIf(p, "tenant", tenant)
	}
	return p
}

// part spells one prompt block. Embedded files go inline as text (a
// remote agent cannot read tai's disk); links go as file/url parts.
func (d *dialect) part(c driver.Content) map[string]any {
	if c.Type == "resource_link" {
		file := map[string]any{"uri": c.URI}
		setIf(file, "name", c.Name)
		setIf(file, "mimeType", c.MimeType)
		switch d {
		case d10:
			p := map[string]any{"url": c.URI}
			setIf(p, "filename", c.Name)
			setIf(p, "mediaType", c.MimeType)
			return p
		case d03:
			return map[string]any{"kind": "file", "file": file}
		}
		return map[string]any{"type": "file", "file": file}
	}
	text := c.Text
	if c.Type == "resource" {
		text = fmt.Sprintf("<file path=%q>\n%s\n</file>", strings.TrimPrefix(c.URI, "file://"), c.Text)
	}
	switch d {
	case d10:
		return map[string]any{"text": text}
	case d03:
		return map[string]any{"kind": "text", "text": text}
	}
	return map[string]any{"type": "text", "text": text}
}

// checkContent refuses blocks no dialect can carry.
func checkContent(prompt []driver.Content) error {
	for _, c := range prompt {
		switch c.Type {
		case "text", "resource", "resource_link":
		default:
			return fmt.Errorf("%w: prompt content of type %q over A2A", driver.ErrUnsupported, c.Type)
		}
	}
	return nil
}

func setIf(m map[string]any, k, v string) {
	if v != "" {
		m[k] = v
	}
}
