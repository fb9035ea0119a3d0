package acp

import "encoding/json"

// McpServer transport values (the "type" key). Stdio is signalled by the
// absence of "type".
const (
	McpTransportStdio = "stdio"
	McpTransportHttp  = "http"
	McpTransportSse   = "sse"
)

// McpServer is an MCP server the agent should connect to. Exactly one field
// is set; see the package doc. Its env and headers often hold secrets: keep
// session/new params out of logs.
type McpServer struct {
	Stdio   *McpServerStdio
	Http    *McpServerHttp
	Sse     *McpServerSse
	Unknown *UnknownVariant
}

// McpServerStdio launches the server as a subprocess; Command is absolute.
// Args and Env are required on the wire and are sent as [] when nil.
type McpServerStdio struct {
	Name    string        `json:"name"`
	Command string        `json:"command"`
	Args    []string      `json:"args"`
	Env     []EnvVariable `json:"env"`
	// Typed records that the wire carried type:"stdio" (v1 defines stdio
	// without a type; marshal writes it only when it was received).
	Typed bool           `json:"-"`
	Meta  map[string]any `json:"_meta,omitempty"`
}

// McpServerHttp needs mcpCapabilities.http.
type McpServerHttp struct {
	Name    string         `json:"name"`
	Url     string         `json:"url"`
	Headers []HttpHeader   `json:"headers"`
	Meta    map[string]any `json:"_meta,omitempty"`
}

// McpServerSse needs mcpCapabilities.sse; deprecated by ACP.
type McpServerSse struct {
	Name    string         `json:"name"`
	Url     string         `json:"url"`
	Headers []HttpHeader   `json:"headers"`
	Meta    map[string]any `json:"_meta,omitempty"`
}

// EnvVariable is one environment variable (a list, not a map, on the wire).
type EnvVariable struct {
	Name  string         `json:"name"`
	Value string         `json:"value"`
	Meta  map[string]any `json:"_meta,omitempty"`
}

// HttpHeader is one HTTP header.
type HttpHeader struct {
	Name  string         `json:"name"`
	Value string         `json:"value"`
	Meta  map[string]any `json:"_meta,omitempty"`
}

// Kind returns "stdio", "http", "sse", the unknown type, or "" when empty.
func (s McpServer) Kind() string {
	switch {
	case s.Stdio != nil:
		return McpTransportStdio
	case s.Http != nil:
		return McpTransportHttp
	case s.Sse != nil:
		return McpTransportSse
	case s.Unknown != nil:
		return s.Unknown.Kind
	}
	return ""
}

// MarshalJSON implements json.Marshaler.
func (s McpServer) MarshalJSON() ([]byte, error) {
	switch variantCount(s.Stdio != nil, s.Http != nil, s.Sse != nil, s.Unknown != nil) {
	case 0:
		return jsonNull, nil
	case 1:
	default:
		return nil, tooMany("McpServer")
	}
	switch {
	case s.Stdio != nil:
		c := *s.Stdio
		c.Args, c.Env = orEmpty(c.Args), orEmpty(c.Env)
		if c.Typed {
			return withTag("type", McpTransportStdio, c)
		}
		return Marshal(c)
	case s.Http != nil:
		c := *s.Http
		c.Headers = orEmpty(c.Headers)
		return withTag("type", McpTransportHttp, c)
	case s.Sse != nil:
		c := *s.Sse
		c.Headers = orEmpty(c.Headers)
		return withTag("type", McpTransportSse, c)
	}
	return s.Unknown.MarshalJSON()
}

// UnmarshalJSON implements json.Unmarshaler.
func (s *McpServer) UnmarshalJSON(data []byte) error {
	*s = McpServer{}
	if isNull(data) {
		return nil
	}
	tag, ok, fields, err := peekTag(data, "type")
	if err != nil {
		return err
	}
	_, hasType := fields["type"]
	switch {
	case !hasType:
		return decodeInto(data, &s.Stdio)
	case ok && tag == McpTransportStdio:
		if err := decodeInto(data, &s.Stdio); err != nil {
			return err
		}
		s.Stdio.Typed = true
		return nil
	case ok && tag == McpTransportHttp:
		return decodeInto(data, &s.Http)
	case ok && tag == McpTransportSse:
		return decodeInto(data, &s.Sse)
	}
	s.Unknown = newUnknown(tag, data)
	return nil
}

// McpServerList is a list of MCP servers that encodes nil as [], because
// session/new and session/load require the key and agents reject its
// omission with -32602.
type McpServerList []McpServer

// MarshalJSON implements json.Marshaler.
func (l McpServerList) MarshalJSON() ([]byte, error) { return marshalList([]McpServer(l)) }

// SessionMode is one selectable mode.
type SessionMode struct {
	Id          string         `json:"id"`
	Name        string         `json:"name"`
	Description *string        `json:"description,omitempty"`
	Meta        map[string]any `json:"_meta,omitempty"`
}

// SessionModeState is the deprecated modes block (use config options with
// category "mode" where offered).
type SessionModeState struct {
	CurrentModeId  string         `json:"currentModeId"`
	AvailableModes []SessionMode  `json:"availableModes"`
	Meta           map[string]any `json:"_meta,omitempty"`
}

// MarshalJSON writes availableModes as [] when nil.
func (s SessionModeState) MarshalJSON() ([]byte, error) {
	type plain SessionModeState
	p := plain(s)
	p.AvailableModes = orEmpty(p.AvailableModes)
	return Marshal(p)
}

// NewSessionRequest creates a session. Cwd is absolute. Send
// AdditionalDirectories only if sessionCapabilities.additionalDirectories is
// advertised.
type NewSessionRequest struct {
	Cwd                   string         `json:"cwd"`
	McpServers            McpServerList  `json:"mcpServers"`
	AdditionalDirectories []string       `json:"additionalDirectories,omitempty"`
	Meta                  map[string]any `json:"_meta,omitempty"`
}

// NewSessionResponse names the new session.
type NewSessionResponse struct {
	SessionId     string            `json:"sessionId"`
	Modes         *SessionModeState `json:"modes,omitempty"`
	ConfigOptions ConfigOptionList  `json:"configOptions,omitzero"`
	// Models is the legacy unstable model block some agents still send; kept
	// raw because its shape was never stabilised.
	Models json.RawMessage `json:"models,omitempty"`
	Meta   map[string]any  `json:"_meta,omitempty"`
}

// LoadSessionRequest replays a session's history as session/update
// notifications before the response. Gated by agentCapabilities.loadSession.
type LoadSessionRequest struct {
	SessionId             string         `json:"sessionId"`
	Cwd                   string         `json:"cwd"`
	McpServers            McpServerList  `json:"mcpServers"`
	AdditionalDirectories []string       `json:"additionalDirectories,omitempty"`
	Meta                  map[string]any `json:"_meta,omitempty"`
}

// LoadSessionResponse: agents may answer null, which decodes to the zero
// value (see DecodeResult).
type LoadSessionResponse struct {
	Modes         *SessionModeState `json:"modes,omitempty"`
	ConfigOptions ConfigOptionList  `json:"configOptions,omitzero"`
	Models        json.RawMessage   `json:"models,omitempty"`
	Meta          map[string]any    `json:"_meta,omitempty"`
}

// ResumeSessionRequest reattaches without replay. Gated by
// sessionCapabilities.resume.
type ResumeSessionRequest struct {
	SessionId             string         `json:"sessionId"`
	Cwd                   string         `json:"cwd"`
	McpServers            McpServerList  `json:"mcpServers,omitempty"`
	AdditionalDirectories []string       `json:"additionalDirectories,omitempty"`
	Meta                  map[string]any `json:"_meta,omitempty"`
}

// ResumeSessionResponse has the same shape as LoadSessionResponse.
type ResumeSessionResponse struct {
	Modes         *SessionModeState `json:"modes,omitempty"`
	ConfigOptions ConfigOptionList  `json:"configOptions,omitzero"`
	Models        json.RawMessage   `json:"models,omitempty"`
	Meta          map[string]any    `json:"_meta,omitempty"`
}

// CloseSessionRequest cancels any running turn and frees the session. Gated
// by sessionCapabilities.close.
type CloseSessionRequest struct {
	SessionId string         `json:"sessionId"`
	Meta      map[string]any `json:"_meta,omitempty"`
}

// CloseSessionResponse is empty.
type CloseSessionResponse struct {
	Meta map[string]any `json:"_meta,omitempty"`
}

// ListSessionsRequest pages through stored sessions, optionally by cwd.
type ListSessionsRequest struct {
	Cwd    string         `json:"cwd,omitempty"`
	Cursor string         `json:"cursor,omitempty"`
	Meta   map[string]any `json:"_meta,omitempty"`
}

// ListSessionsResponse is one page; NextCursor is empty on the last.
type ListSessionsResponse struct {
	Sessions   []SessionInfo  `json:"sessions"`
	NextCursor string         `json:"nextCursor,omitempty"`
	Meta       map[string]any `json:"_meta,omitempty"`
}

// MarshalJSON writes sessions as [] when nil.
func (r ListSessionsResponse) MarshalJSON() ([]byte, error) {
	type plain ListSessionsResponse
	p := plain(r)
	p.Sessions = orEmpty(p.Sessions)
	return Marshal(p)
}

// SessionInfo describes a stored session; UpdatedAt is ISO 8601.
type SessionInfo struct {
	SessionId             string         `json:"sessionId"`
	Cwd                   string         `json:"cwd"`
	Title                 *string        `json:"title,omitempty"`
	UpdatedAt             *string        `json:"updatedAt,omitempty"`
	AdditionalDirectories []string       `json:"additionalDirectories,omitempty"`
	Meta                  map[string]any `json:"_meta,omitempty"`
}

// DeleteSessionRequest deletes a stored session. Gated by
// sessionCapabilities.delete.
type DeleteSessionRequest struct {
	SessionId string         `json:"sessionId"`
	Meta      map[string]any `json:"_meta,omitempty"`
}

// DeleteSessionResponse is empty.
type DeleteSessionResponse struct {
	Meta map[string]any `json:"_meta,omitempty"`
}

// PromptRequest starts a turn. Slash commands travel as "/name args" text.
type PromptRequest struct {
	SessionId string         `json:"sessionId"`
	Prompt    []ContentBlock `json:"prompt"`
	Meta      map[string]any `json:"_meta,omitempty"`
}

// MarshalJSON writes prompt as [] when nil.
func (r PromptRequest) MarshalJSON() ([]byte, error) {
	type plain PromptRequest
	p := plain(r)
	p.Prompt = orEmpty(p.Prompt)
	return Marshal(p)
}

// StopReason says why a turn ended. Open enum.
type StopReason string

// Stop reasons. Agents must report an aborted turn as StopCancelled, not as
// an error.
const (
	StopEndTurn         StopReason = "end_turn"
	StopMaxTokens       StopReason = "max_tokens"
	StopMaxTurnRequests StopReason = "max_turn_requests"
	StopRefusal         StopReason = "refusal"
	StopCancelled       StopReason = "cancelled"
)

// PromptResponse ends a turn. It must follow every session/update of the
// turn.
type PromptResponse struct {
	StopReason StopReason `json:"stopReason"`
	// Usage is unstable; kept raw so an odd value cannot fail the response
	// that ends a turn. See DecodeUsage.
	Usage json.RawMessage `json:"usage,omitempty"`
	Meta  map[string]any  `json:"_meta,omitempty"`
}

// Usage is the unstable per-turn token accounting.
type Usage struct {
	TotalTokens       int64          `json:"totalTokens"`
	InputTokens       int64          `json:"inputTokens"`
	OutputTokens      int64          `json:"outputTokens"`
	ThoughtTokens     *int64         `json:"thoughtTokens,omitempty"`
	CachedReadTokens  *int64         `json:"cachedReadTokens,omitempty"`
	CachedWriteTokens *int64         `json:"cachedWriteTokens,omitempty"`
	Meta              map[string]any `json:"_meta,omitempty"`
}

// DecodeUsage decodes Usage; it returns nil, nil when there is none.
func (r PromptResponse) DecodeUsage() (*Usage, error) {
	if isNull(r.Usage) {
		return nil, nil
	}
	u := new(Usage)
	if err := json.Unmarshal(r.Usage, u); err != nil {
		return nil, err
	}
	return u, nil
}

// CancelNotification (session/cancel) asks the agent to stop the turn. The
// client keeps accepting updates until the prompt response arrives, and
// answers pending permission requests with the cancelled outcome.
type CancelNotification struct {
	SessionId string         `json:"sessionId"`
	Meta      map[string]any `json:"_meta,omitempty"`
}

// CancelRequestNotification ($/cancel_request) cancels one request in either
// direction. RequestId is a JSON-RPC id (number or string), kept raw.
type CancelRequestNotification struct {
	RequestId json.RawMessage `json:"requestId"`
	Meta      map[string]any  `json:"_meta,omitempty"`
}

// SetSessionModeRequest switches mode (deprecated in favour of config
// options).
type SetSessionModeRequest struct {
	SessionId string         `json:"sessionId"`
	ModeId    string         `json:"modeId"`
	Meta      map[string]any `json:"_meta,omitempty"`
}

// SetSessionModeResponse is empty.
type SetSessionModeResponse struct {
	Meta map[string]any `json:"_meta,omitempty"`
}
