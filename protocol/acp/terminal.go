package acp

// CreateTerminalRequest (terminal/create) starts a command in the background
// on the client. Cwd is absolute. When output exceeds OutputByteLimit the
// client drops bytes from the start, on a UTF-8 boundary. Gated by
// clientCapabilities.terminal.
type CreateTerminalRequest struct {
	SessionId       string         `json:"sessionId"`
	Command         string         `json:"command"`
	Args            []string       `json:"args,omitempty"`
	Env             []EnvVariable  `json:"env,omitempty"`
	Cwd             *string        `json:"cwd,omitempty"`
	OutputByteLimit *int64         `json:"outputByteLimit,omitempty"`
	Meta            map[string]any `json:"_meta,omitempty"`
}

// CreateTerminalResponse returns immediately with the terminal's id.
type CreateTerminalResponse struct {
	TerminalId string         `json:"terminalId"`
	Meta       map[string]any `json:"_meta,omitempty"`
}

// TerminalOutputRequest (terminal/output) fetches output so far.
type TerminalOutputRequest struct {
	SessionId  string         `json:"sessionId"`
	TerminalId string         `json:"terminalId"`
	Meta       map[string]any `json:"_meta,omitempty"`
}

// TerminalOutputResponse: ExitStatus is nil while the command runs.
type TerminalOutputResponse struct {
	Output     string              `json:"output"`
	Truncated  bool                `json:"truncated"`
	ExitStatus *TerminalExitStatus `json:"exitStatus,omitempty"`
	Meta       map[string]any      `json:"_meta,omitempty"`
}

// TerminalExitStatus: ExitCode is nil when a signal ended the process.
type TerminalExitStatus struct {
	ExitCode *int           `json:"exitCode,omitempty"`
	Signal   *string        `json:"signal,omitempty"`
	Meta     map[string]any `json:"_meta,omitempty"`
}

// WaitForTerminalExitRequest (terminal/wait_for_exit) blocks until exit.
type WaitForTerminalExitRequest struct {
	SessionId  string         `json:"sessionId"`
	TerminalId string         `json:"terminalId"`
	Meta       map[string]any `json:"_meta,omitempty"`
}

// WaitForTerminalExitResponse carries the exit status inline.
type WaitForTerminalExitResponse struct {
	ExitCode *int           `json:"exitCode,omitempty"`
	Signal   *string        `json:"signal,omitempty"`
	Meta     map[string]any `json:"_meta,omitempty"`
}

// KillTerminalRequest (terminal/kill) kills the command; the terminal stays
// valid for output and wait_for_exit.
type KillTerminalRequest struct {
	SessionId  string         `json:"sessionId"`
	TerminalId string         `json:"terminalId"`
	Meta       map[string]any `json:"_meta,omitempty"`
}

// KillTerminalResponse is empty.
type KillTerminalResponse struct {
	Meta map[string]any `json:"_meta,omitempty"`
}

// ReleaseTerminalRequest (terminal/release) kills the command if running and
// frees the id. Agents must release every terminal they create.
type ReleaseTerminalRequest struct {
	SessionId  string         `json:"sessionId"`
	TerminalId string         `json:"terminalId"`
	Meta       map[string]any `json:"_meta,omitempty"`
}

// ReleaseTerminalResponse is empty.
type ReleaseTerminalResponse struct {
	Meta map[string]any `json:"_meta,omitempty"`
}
