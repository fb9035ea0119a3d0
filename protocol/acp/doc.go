// Package acp holds the Agent Client Protocol v1 wire types, owned by tai
// rather than taken from github.com/coder/acp-go-sdk, because an orchestrator
// must survive agents that are newer than it and the SDK's union decoding
// silently mis-types variants it does not know.
//
// Schema version tracked: the v1 schema bundled with
// @agentclientprotocol/sdk 2.4.0 (a superset of the v1 JSON-schema release
// 1.21.0). Only the stable surface is modelled; unstable extras that agents
// already send (the legacy "models" block, prompt "usage") are kept as raw JSON.
//
// The package is used in both directions: tai drives third-party agents as a
// client, and tai's built-in agent answers clients. So every method has both
// its request and its response type, and every type marshals as well as it
// unmarshals.
//
// # Conventions
//
//   - Field names mirror the wire (SessionId, ToolCallId, Url, ...) so that a
//     JSON transcript and the Go code read the same.
//   - Every object has Meta (the "_meta" key), which is carried through
//     untouched; ACP forbids interpreting it.
//   - Open enums are string types with constants. Any other value is kept as
//     is, since "_"-prefixed values belong to implementations and unknown
//     values to future ACP versions.
//   - Optional scalars are pointers or omitempty; fields where "absent",
//     "null" and a value mean three different things use [Nullable].
//
// # Unions
//
// Every tagged union is a struct with one pointer field per known variant and
// an Unknown *[UnknownVariant] field; exactly one is non-nil. Decoding
// switches strictly on the discriminator (no structural guessing); anything
// unrecognised lands in Unknown with its raw bytes, and MarshalJSON returns
// those bytes verbatim. Kind() reports the discriminator value. A zero union
// (nothing set) encodes as JSON null, which is also what null decodes to, so
// decode/encode is stable. Setting more than one variant is a marshal error.
//
// Note that encoding/json compacts and HTML-escapes whatever a MarshalJSON
// method returns; use [Marshal] (which disables HTML escaping) on the wire so
// that unknown variants received compact are re-sent byte for byte.
//
// # Leniency
//
// JSON null is accepted wherever an object is expected (a session/load result
// of null decodes to a zero [LoadSessionResponse]; see also [DecodeResult]),
// unknown fields are ignored, and the lists the schema marks
// x-deserialize-skip-invalid-items (available commands, config options and
// their select options, plan entries) drop bad items instead of failing the
// whole message.
package acp

// ProtocolVersion is the ACP major version this package speaks. A client
// sends it in initialize; an agent that answers with another number speaks a
// protocol these types do not describe.
const ProtocolVersion = 1

// Method names. Agent-side methods (called by the client) come first, then
// the client-side ones (called by the agent).
const (
	MethodInitialize             = "initialize"
	MethodAuthenticate           = "authenticate"
	MethodLogout                 = "logout"
	MethodSessionNew             = "session/new"
	MethodSessionLoad            = "session/load"
	MethodSessionResume          = "session/resume"
	MethodSessionClose           = "session/close"
	MethodSessionList            = "session/list"
	MethodSessionDelete          = "session/delete"
	MethodSessionPrompt          = "session/prompt"
	MethodSessionCancel          = "session/cancel" // notification
	MethodSessionSetMode         = "session/set_mode"
	MethodSessionSetConfigOption = "session/set_config_option"

	MethodSessionUpdate            = "session/update" // notification
	MethodSessionRequestPermission = "session/request_permission"
	MethodFsReadTextFile           = "fs/read_text_file"
	MethodFsWriteTextFile          = "fs/write_text_file"
	MethodTerminalCreate           = "terminal/create"
	MethodTerminalOutput           = "terminal/output"
	MethodTerminalWaitForExit      = "terminal/wait_for_exit"
	MethodTerminalKill             = "terminal/kill"
	MethodTerminalRelease          = "terminal/release"
	MethodElicitationCreate        = "elicitation/create"
	MethodElicitationComplete      = "elicitation/complete" // notification

	// MethodCancelRequest cancels one request in either direction.
	MethodCancelRequest = "$/cancel_request" // notification
)

// JSON-RPC error codes ACP gives a meaning to. Any other integer may appear.
const (
	ErrorParse            = -32700
	ErrorInvalidRequest   = -32600
	ErrorMethodNotFound   = -32601
	ErrorInvalidParams    = -32602
	ErrorInternal         = -32603
	ErrorRequestCancelled = -32800
	ErrorAuthRequired     = -32000
	ErrorResourceNotFound = -32002
)

// EmptyObject is a capability "support marker": its presence (a non-nil
// pointer) advertises the feature, and it still carries _meta, which is where
// peers advertise extensions.
type EmptyObject struct {
	Meta map[string]any `json:"_meta,omitempty"`
}

// Ptr returns a pointer to v, for filling optional fields inline.
func Ptr[T any](v T) *T { return &v }
