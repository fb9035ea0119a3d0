package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Capabilities says what a session supports. A driver refuses the rest with
// ErrUnsupported.
type Capabilities struct {
	LoadSession   bool `json:"load_session,omitempty"`
	ResumeSession bool `json:"resume_session,omitempty"`
	ListSessions  bool `json:"list_sessions,omitempty"`
	CloseSession  bool `json:"close_session,omitempty"`
	DeleteSession bool `json:"delete_session,omitempty"`
	ForkSession   bool `json:"fork_session,omitempty"`
	Modes         bool `json:"modes,omitempty"`
	ConfigOptions bool `json:"config_options,omitempty"`
	Images        bool `json:"images,omitempty"`
	Audio         bool `json:"audio,omitempty"`
	EmbeddedFiles bool `json:"embedded_files,omitempty"`
	MCPHTTP       bool `json:"mcp_http,omitempty"`
	// AddDirs: the agent takes workspace roots besides cwd
	// (additionalDirectories).
	AddDirs bool `json:"additional_directories,omitempty"`
}

// Content is one block of a prompt.
type Content struct {
	Type     string `json:"type"` // text | resource | resource_link
	Text     string `json:"text,omitempty"`
	URI      string `json:"uri,omitempty"`
	Name     string `json:"name,omitempty"`
	MimeType string `json:"mime_type,omitempty"`
	Size     int64  `json:"size,omitempty"`
}

// TextContent is a text prompt block.
func TextContent(s string) Content { return Content{Type: "text", Text: s} }

// Stop reasons. ACP's are passed through; tai adds none of its own here:
// timeouts and crashes are errors, not stop reasons.
const (
	StopEndTurn         = "end_turn"
	StopMaxTokens       = "max_tokens"
	StopMaxTurnRequests = "max_turn_requests"
	StopRefusal         = "refusal"
	StopCancelled       = "cancelled"
)

// TurnResult is how a prompt turn ended.
type TurnResult struct {
	StopReason string
	Usage      *Usage
}

// Session is a live conversation with one agent.
type Session interface {
	ID() string
	Capabilities() Capabilities
	// Prompt runs one turn and returns when the agent says it ended. Events
	// of the turn have all been emitted when it returns.
	Prompt(ctx context.Context, prompt []Content) (TurnResult, error)
	// Cancel asks the agent to stop the running turn; Prompt then returns
	// with StopCancelled. cause says why (nil: context.Canceled): the
	// permissions and questions the cancel withdraws say it wherever a
	// person reads them (their contexts' cause).
	Cancel(ctx context.Context, cause error) error
	SetMode(ctx context.Context, modeID string) error
	// SetConfigOption sets a config option; value is a string for selects
	// and "true"/"false" for booleans.
	SetConfigOption(ctx context.Context, id, value string) error
	// Close ends the session and the agent process, killing it if it does
	// not go quietly.
	Close(ctx context.Context) error
}

// SessionLister is implemented by sessions whose agent can list sessions.
type SessionLister interface {
	ListSessions(ctx context.Context, cwd string) ([]SessionSummary, error)
}

// SessionDeleter is implemented by sessions whose agent can delete its
// stored sessions.
type SessionDeleter interface {
	DeleteSession(ctx context.Context, id string) error
}

// SessionSummary is one entry of a session list.
type SessionSummary struct {
	ID        string `json:"id"`
	Cwd       string `json:"cwd"`
	Title     string `json:"title,omitempty"`
	UpdatedAt string `json:"updated_at,omitempty"`
}

// MCPServer is an MCP server passed to the agent.
type MCPServer struct {
	Name    string            `json:"name"`
	Type    string            `json:"type,omitempty"` // "" (stdio) | http | sse
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// Sink receives a session's events in order.
type Sink interface {
	Emit(Event)
}

// PermissionDecider answers permission requests. It is the only place that
// decides; drivers never do.
type PermissionDecider interface {
	Decide(ctx context.Context, req PermissionRequest) (PermissionDecision, error)
}

// Errors callers branch on.
var (
	// ErrUnsupported: the agent or driver lacks the capability asked for.
	ErrUnsupported = errors.New("not supported by this agent")
	// ErrNoSession: the session to resume or load does not exist.
	ErrNoSession = errors.New("no such session")
	// ErrBadValue: a value the agent does not offer (a mode, a model, a
	// config value) was asked for.
	ErrBadValue = errors.New("invalid value")
	// ErrProtocol: the agent broke the protocol.
	ErrProtocol = errors.New("protocol error")
)

// AuthRequiredError: the agent needs authentication tai was not told how to
// do.
type AuthRequiredError struct {
	Methods []AuthMethod
	Message string
}

// AuthMethod is one way the agent can authenticate.
type AuthMethod struct {
	ID          string `json:"id"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	Type        string `json:"type,omitempty"`
}

func (e *AuthRequiredError) Error() string {
	var b strings.Builder
	b.WriteString("agent requires authentication")
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if len(e.Methods) == 0 {
		b.WriteString(" (it offers no auth methods; configure its credentials in its environment)")
		return b.String()
	}
	b.WriteString("; pass --auth METHOD with one of:")
	for _, m := range e.Methods {
		fmt.Fprintf(&b, "\n  %s", m.ID)
		if m.Name != "" && m.Name != m.ID {
			fmt.Fprintf(&b, " (%s)", m.Name)
		}
		if m.Type == "terminal" {
			b.WriteString(" [terminal login: run the agent's login interactively first]")
		}
		if m.Description != "" {
			fmt.Fprintf(&b, ": %s", m.Description)
		}
	}
	return b.String()
}

// AgentExitError: the agent process ended while tai still needed it.
type AgentExitError struct {
	ExitCode int    // -1 when killed by a signal
	Signal   string // signal name, when killed
	Stderr   string // the tail of its stderr
}

func (e *AgentExitError) Error() string {
	how := fmt.Sprintf("exit code %d", e.ExitCode)
	if e.Signal != "" {
		how = "signal " + e.Signal
	}
	msg := "agent process exited (" + how + ")"
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += "; its stderr ends with:\n" + s
	}
	return msg
}

// RemoteError is an error answer from the agent to one of tai's requests.
type RemoteError struct {
	Method  string
	Code    int
	Message string
	Data    json.RawMessage
}

func (e *RemoteError) Error() string {
	s := fmt.Sprintf("agent answered %s with error %d: %s", e.Method, e.Code, e.Message)
	if len(e.Data) > 0 && string(e.Data) != "null" {
		s += " " + string(e.Data)
	}
	return s
}
