package audit

import "encoding/json"

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
