package audit

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/tai-dev/tai/internal/jsonw"
)

// Payload types for the standard kinds. Producers should use them so that
// Render and other consumers find the fields they expect; any JSON value is
// accepted by Append, though.

// PermissionRequest is the data of a permission.request entry.
type PermissionRequest struct {
	RequestID string          `json:"request_id,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	Title     string          `json:"title,omitempty"`
	Options   []string        `json:"options,omitempty"`
	Request   json.RawMessage `json:"request,omitempty"` // the agent's request as received
	// Unrequested: the agent did not ask; tai made this request up for a
	// file or terminal call no granted permission covered.
	Unrequested bool `json:"unrequested,omitempty"`
}

// PermissionDecision is the data of a permission.decision entry.
type PermissionDecision struct {
	RequestID string          `json:"request_id,omitempty"`
	Decision  string          `json:"decision"`         // e.g. "allow", "deny", "cancelled"
	Option    string          `json:"option,omitempty"` // the option chosen, e.g. "allow_once"
	DecidedBy string          `json:"decided_by"`       // a driver.Provenance: rule:<id>, human, answerer, remembered, default, ...
	Reason    string          `json:"reason,omitempty"`
	Via       string          `json:"via,omitempty"` // a human's channel: terminal, dashboard, feed
	Request   json.RawMessage `json:"request,omitempty"`
	// Unrequested: the decision of a call the agent made without asking.
	Unrequested bool `json:"unrequested,omitempty"`
}

// FileWrite is the data of a file.write entry. Hashes are hex SHA-256;
// HashBefore is empty for a new file.
type FileWrite struct {
	Path       string `json:"path"`
	Size       int64  `json:"size"`
	HashBefore string `json:"hash_before,omitempty"`
	HashAfter  string `json:"hash_after"`
}

// Terminal is the data of terminal.start and terminal.exit entries.
type Terminal struct {
	TerminalID string   `json:"terminal_id,omitempty"`
	Command    string   `json:"command"`
	Args       []string `json:"args,omitempty"`
	Cwd        string   `json:"cwd,omitempty"`
	ExitStatus *int     `json:"exit_status,omitempty"` // terminal.exit only
	Signal     string   `json:"signal,omitempty"`
}

// ModeChange is the data of a mode.change entry.
type ModeChange struct {
	From string `json:"from,omitempty"`
	To   string `json:"to"`
	By   string `json:"by,omitempty"`
}

// Process is the data of process.start and process.exit entries.
type Process struct {
	Name       string   `json:"name,omitempty"`
	Path       string   `json:"path,omitempty"`
	Args       []string `json:"args,omitempty"`
	PID        int      `json:"pid,omitempty"`
	ExitStatus *int     `json:"exit_status,omitempty"`
	Signal     string   `json:"signal,omitempty"`
	Error      string   `json:"error,omitempty"`
}

// Prompt is the data of a prompt entry.
type Prompt struct {
	Text string `json:"text"`
}

// Error is the data of an error entry.
type Error struct {
	Error string `json:"error"`
	Op    string `json:"op,omitempty"`
}

// appender is data that writes its own compact JSON: the entries a flood
// of permissions writes two of per request, without reflection. What it
// writes decodes to what json.Marshal would write.
type appender interface {
	appendJSON(buf []byte) ([]byte, error)
}

func (p PermissionRequest) appendJSON(buf []byte) ([]byte, error) {
	buf = append(buf, '{')
	n := len(buf)
	buf = member(buf, n, "request_id", p.RequestID)
	buf = member(buf, n, "tool", p.Tool)
	buf = member(buf, n, "title", p.Title)
	if len(p.Options) > 0 {
		buf = comma(buf, n)
		buf = append(buf, `"options":[`...)
		for i, o := range p.Options {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendString(buf, o)
		}
		buf = append(buf, ']')
	}
	buf, err := rawMember(buf, n, "request", p.Request)
	if p.Unrequested {
		buf = comma(buf, n)
		buf = append(buf, `"unrequested":true`...)
	}
	return append(buf, '}'), err
}

func (p PermissionDecision) appendJSON(buf []byte) ([]byte, error) {
	buf = append(buf, '{')
	n := len(buf)
	buf = member(buf, n, "request_id", p.RequestID)
	buf = comma(buf, n)
	buf = append(buf, `"decision":`...)
	buf = appendString(buf, p.Decision)
	buf = member(buf, n, "option", p.Option)
	buf = append(buf, `,"decided_by":`...)
	buf = appendString(buf, p.DecidedBy)
	buf = member(buf, n, "reason", p.Reason)
	buf = member(buf, n, "via", p.Via)
	buf, err := rawMember(buf, n, "request", p.Request)
	if p.Unrequested {
		buf = append(buf, `,"unrequested":true`...)
	}
	return append(buf, '}'), err
}

// comma separates a member from the one before it, if any (the object's
// members start at buf[n:]).
func comma(buf []byte, n int) []byte {
	if len(buf) > n {
		buf = append(buf, ',')
	}
	return buf
}

// member appends an omitempty string member.
func member(buf []byte, n int, name, v string) []byte {
	if v == "" {
		return buf
	}
	buf = comma(buf, n)
	buf = append(buf, '"')
	buf = append(buf, name...)
	buf = append(buf, `":`...)
	return appendString(buf, v)
}

// rawMember appends an omitempty raw JSON member, compacted as
// json.Marshal would; a value that is not JSON is an error, as there.
func rawMember(buf []byte, n int, name string, raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		return buf, nil
	}
	buf = comma(buf, n)
	buf = append(buf, '"')
	buf = append(buf, name...)
	buf = append(buf, `":`...)
	if jsonw.Compact(raw) {
		return append(buf, raw...), nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return buf, fmt.Errorf("json: error calling MarshalJSON for type json.RawMessage: %w", err)
	}
	return append(buf, b.Bytes()...), nil
}
