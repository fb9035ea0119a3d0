package driver

import (
	"io"
	"log/slog"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/sandbox"
)

// Launch is what any driver needs to start a session with an agent
// process: what to run, where, and the host services that answer it.
type Launch struct {
	Argv  []string // the agent command; never run through a shell
	Env   []string // its environment; nil means tai's own
	Cwd   string   // the workspace, absolute
	Agent string   // a label for events and errors

	Host       Host
	MCPServers []MCPServer
	AuthMethod string
	ResumeID   string
	// LoadReplay: take the session up with its history replayed as events
	// (ACP session/load), where the agent can, rather than resume it.
	LoadReplay bool
	// ForkID forks this session (session/fork) instead of creating one.
	ForkID string
	// AddDirs are workspace roots besides Cwd (--add-dir), passed as ACP
	// additionalDirectories where the agent supports them.
	AddDirs []string
	Quirks  Quirks

	ClientVersion string
	Logger        *slog.Logger
	// Trace receives every raw protocol line, dir "in" (from the agent) or
	// "out" (to it).
	Trace        func(dir string, line []byte)
	MaxLineBytes int64
	StderrTo     io.Writer
	Clock        quartz.Clock
	// Cols and Rows size a terminal driver's screen; 0 takes its default.
	Cols, Rows int
	// Sandbox starts the agent through tai's launcher (confined, its whole
	// tree killed with it); nil starts it directly.
	Sandbox *sandbox.Sandbox
}

// Quirks are agent-specific fixes the driver applies. They are named once,
// here: a preset (package preset) and a config.toml agent carry them, the
// runner passes them through, and the driver reads them.
type Quirks struct {
	// NoClientFS: do not offer fs/* to the agent even though the host has
	// it. gemini-cli fails to create new files through the client's fs (it
	// mistakes the not-found error), and writes them itself when fs is not
	// offered.
	NoClientFS bool `json:"no_client_fs,omitempty"`
	// IgnoresStdinEOF: the agent does not exit when stdin closes, so tai
	// signals its process group right away instead of waiting.
	IgnoresStdinEOF bool `json:"ignores_stdin_eof,omitempty"`
}

// ModeRule names an agent's own modes that tai's mode rule needs (see
// policy.SelfApproving): a preset carries it, like Quirks. The zero value
// leaves the agent to the general rule.
type ModeRule struct {
	// SelfApproving are the mode ids in which the agent approves its own
	// requests (they never reach tai): claude's auto and
	// bypassPermissions, codex's agent and agent-full-access. When set,
	// only these are; the general rule is not applied to the agent's other
	// modes.
	SelfApproving []string `json:"self_approving,omitempty"`
	// Asking is the mode in which the agent asks tai before acting; tai
	// moves a session there when its starting mode is refused.
	Asking string `json:"asking,omitempty"`
}
