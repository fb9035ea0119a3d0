package acp

// MethodSessionFork (unstable in ACP) starts a new session from a copy of
// an existing one's history. Gated by sessionCapabilities.fork.
const MethodSessionFork = "session/fork"

// ForkSessionRequest forks SessionId into a new session in Cwd.
type ForkSessionRequest struct {
	SessionId             string         `json:"sessionId"`
	Cwd                   string         `json:"cwd"`
	McpServers            McpServerList  `json:"mcpServers"`
	AdditionalDirectories []string       `json:"additionalDirectories,omitempty"`
	Meta                  map[string]any `json:"_meta,omitempty"`
}

// ForkSessionResponse is the new session, as session/new answers.
type ForkSessionResponse = NewSessionResponse
