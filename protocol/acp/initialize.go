package acp

// Implementation names a client or agent program.
type Implementation struct {
	Name    string         `json:"name"`
	Title   string         `json:"title,omitempty"`
	Version string         `json:"version"`
	Meta    map[string]any `json:"_meta,omitempty"`
}

// InitializeRequest is sent first by the client. It offers the newest
// protocol version the client speaks.
type InitializeRequest struct {
	ProtocolVersion    int                `json:"protocolVersion"`
	ClientCapabilities ClientCapabilities `json:"clientCapabilities,omitzero"`
	ClientInfo         *Implementation    `json:"clientInfo,omitempty"`
	Meta               map[string]any     `json:"_meta,omitempty"`
}

// ClientCapabilities lists the services the client hosts. Anything omitted
// is unsupported; only advertise what is really implemented (stub fs writes
// lose agents' edits silently).
type ClientCapabilities struct {
	Fs FileSystemCapability `json:"fs,omitzero"`
	// Terminal covers every terminal/* method.
	Terminal    bool                      `json:"terminal,omitempty"`
	Auth        ClientAuthCapabilities    `json:"auth,omitzero"`
	Elicitation ElicitationCapabilities   `json:"elicitation,omitzero"`
	Session     ClientSessionCapabilities `json:"session,omitzero"`
	Meta        map[string]any            `json:"_meta,omitempty"`
}

// FileSystemCapability gates fs/read_text_file and fs/write_text_file.
type FileSystemCapability struct {
	ReadTextFile  bool           `json:"readTextFile,omitempty"`
	WriteTextFile bool           `json:"writeTextFile,omitempty"`
	Meta          map[string]any `json:"_meta,omitempty"`
}

// ClientAuthCapabilities: Terminal means the client can re-run the agent
// command interactively for a terminal auth method.
type ClientAuthCapabilities struct {
	Terminal bool           `json:"terminal,omitempty"`
	Meta     map[string]any `json:"_meta,omitempty"`
}

// ElicitationCapabilities advertises elicitation modes. A mode counts only
// when its object is non-null; {} alone advertises none (unlike MCP).
type ElicitationCapabilities struct {
	Form *EmptyObject   `json:"form,omitempty"`
	Url  *EmptyObject   `json:"url,omitempty"`
	Meta map[string]any `json:"_meta,omitempty"`
}

// ClientSessionCapabilities opts in to session features agents must not use
// otherwise.
type ClientSessionCapabilities struct {
	ConfigOptions ClientConfigOptionsCapabilities `json:"configOptions,omitzero"`
	// Notices lets the agent send notice updates.
	Notices *EmptyObject `json:"notices,omitempty"`
	// Compaction lets the agent send compaction_* updates.
	Compaction *EmptyObject   `json:"compaction,omitempty"`
	Meta       map[string]any `json:"_meta,omitempty"`
}

// AllowsUpdate reports whether a client with these capabilities may be
// sent a session update of this kind: notices and compaction updates only
// to one that advertised them, every other kind to any.
func (c ClientSessionCapabilities) AllowsUpdate(kind string) bool {
	switch kind {
	case UpdateNotice:
		return c.Notices != nil
	case UpdateCompactionUpdate, UpdateCompactionSummaryChunk:
		return c.Compaction != nil
	}
	return true
}

// ClientConfigOptionsCapabilities: Boolean allows type:"boolean" options.
type ClientConfigOptionsCapabilities struct {
	Boolean *EmptyObject   `json:"boolean,omitempty"`
	Meta    map[string]any `json:"_meta,omitempty"`
}

// InitializeResponse is the agent's answer. ProtocolVersion is the client's
// if the agent speaks it, else the agent's newest; the client disconnects if
// it cannot speak the answer.
type InitializeResponse struct {
	ProtocolVersion   int               `json:"protocolVersion"`
	AgentCapabilities AgentCapabilities `json:"agentCapabilities,omitzero"`
	// AuthMethods defaults to [] when absent.
	AuthMethods []AuthMethod    `json:"authMethods,omitempty"`
	AgentInfo   *Implementation `json:"agentInfo,omitempty"`
	Meta        map[string]any  `json:"_meta,omitempty"`
}

// AgentCapabilities gates optional agent methods.
type AgentCapabilities struct {
	LoadSession         bool                  `json:"loadSession,omitempty"`
	PromptCapabilities  PromptCapabilities    `json:"promptCapabilities,omitzero"`
	McpCapabilities     McpCapabilities       `json:"mcpCapabilities,omitzero"`
	Auth                AgentAuthCapabilities `json:"auth,omitzero"`
	SessionCapabilities SessionCapabilities   `json:"sessionCapabilities,omitzero"`
	Meta                map[string]any        `json:"_meta,omitempty"`
}

// PromptCapabilities lists content types beyond the baseline text and
// resource_link that a prompt may carry.
type PromptCapabilities struct {
	Image           bool           `json:"image,omitempty"`
	Audio           bool           `json:"audio,omitempty"`
	EmbeddedContext bool           `json:"embeddedContext,omitempty"`
	Meta            map[string]any `json:"_meta,omitempty"`
}

// McpCapabilities lists MCP transports beyond the mandatory stdio.
type McpCapabilities struct {
	Http bool `json:"http,omitempty"`
	// Sse is deprecated in ACP but still advertised by some agents.
	Sse  bool           `json:"sse,omitempty"`
	Meta map[string]any `json:"_meta,omitempty"`
}

// AgentAuthCapabilities: Logout gates the logout method.
type AgentAuthCapabilities struct {
	Logout *EmptyObject   `json:"logout,omitempty"`
	Meta   map[string]any `json:"_meta,omitempty"`
}

// SessionCapabilities gates the optional session/* methods.
type SessionCapabilities struct {
	List                  *EmptyObject   `json:"list,omitempty"`
	Delete                *EmptyObject   `json:"delete,omitempty"`
	AdditionalDirectories *EmptyObject   `json:"additionalDirectories,omitempty"`
	Resume                *EmptyObject   `json:"resume,omitempty"`
	Close                 *EmptyObject   `json:"close,omitempty"`
	Fork                  *EmptyObject   `json:"fork,omitempty"` // unstable: session/fork
	Meta                  map[string]any `json:"_meta,omitempty"`
}

// AuthMethod discriminator values (the "type" key). An untyped method is an
// agent method.
const (
	AuthTypeAgent    = "agent"
	AuthTypeTerminal = "terminal"
)

// AuthMethod is one way to authenticate, discriminated by "type" (absent
// means "agent"). Exactly one field is set; see the package doc.
type AuthMethod struct {
	Agent    *AgentAuthMethod
	Terminal *TerminalAuthMethod
	Unknown  *UnknownVariant
}

// AgentAuthMethod is performed by sending authenticate{methodId: Id}.
type AgentAuthMethod struct {
	Id          string  `json:"id"`
	Name        string  `json:"name"`
	Description *string `json:"description,omitempty"`
	// Typed records that the wire carried type:"agent". Marshal writes the
	// tag only then, because the untyped form is what older peers know.
	Typed bool           `json:"-"`
	Meta  map[string]any `json:"_meta,omitempty"`
}

// TerminalAuthMethod is performed by re-running the agent's own command with
// Args and Env added in an interactive terminal, waiting for exit 0, then
// reconnecting. Never send authenticate for it.
type TerminalAuthMethod struct {
	Id          string            `json:"id"`
	Name        string            `json:"name"`
	Description *string           `json:"description,omitempty"`
	Args        []string          `json:"args,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	Meta        map[string]any    `json:"_meta,omitempty"`
}

// Kind returns "agent", "terminal", the unknown type, or "" when empty.
func (m AuthMethod) Kind() string {
	switch {
	case m.Agent != nil:
		return AuthTypeAgent
	case m.Terminal != nil:
		return AuthTypeTerminal
	case m.Unknown != nil:
		return m.Unknown.Kind
	}
	return ""
}

// MarshalJSON implements json.Marshaler.
func (m AuthMethod) MarshalJSON() ([]byte, error) {
	switch variantCount(m.Agent != nil, m.Terminal != nil, m.Unknown != nil) {
	case 0:
		return jsonNull, nil
	case 1:
	default:
		return nil, tooMany("AuthMethod")
	}
	switch {
	case m.Agent != nil:
		if m.Agent.Typed {
			return withTag("type", AuthTypeAgent, m.Agent)
		}
		return Marshal(m.Agent)
	case m.Terminal != nil:
		return withTag("type", AuthTypeTerminal, m.Terminal)
	}
	return m.Unknown.MarshalJSON()
}

// UnmarshalJSON implements json.Unmarshaler.
func (m *AuthMethod) UnmarshalJSON(data []byte) error {
	*m = AuthMethod{}
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
		return decodeInto(data, &m.Agent)
	case ok && tag == AuthTypeAgent:
		if err := decodeInto(data, &m.Agent); err != nil {
			return err
		}
		m.Agent.Typed = true
		return nil
	case ok && tag == AuthTypeTerminal:
		return decodeInto(data, &m.Terminal)
	}
	m.Unknown = newUnknown(tag, data)
	return nil
}

// AuthenticateRequest runs an agent auth method.
type AuthenticateRequest struct {
	MethodId string         `json:"methodId"`
	Meta     map[string]any `json:"_meta,omitempty"`
}

// AuthenticateResponse is empty.
type AuthenticateResponse struct {
	Meta map[string]any `json:"_meta,omitempty"`
}

// LogoutRequest is gated by agentCapabilities.auth.logout. Afterwards running
// sessions may fail with ErrorAuthRequired.
type LogoutRequest struct {
	Meta map[string]any `json:"_meta,omitempty"`
}

// LogoutResponse is empty.
type LogoutResponse struct {
	Meta map[string]any `json:"_meta,omitempty"`
}
