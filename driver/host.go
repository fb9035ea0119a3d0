package driver

import (
	"context"
	"errors"
)

// ErrOutsideWorkspace: an agent asked for a path or cwd outside the
// workspace roots. Host services wrap their refusals with it.
var ErrOutsideWorkspace = errors.New("outside the workspace")

// Files is the file service a driver offers to its agent, confined to the
// workspace.
type Files interface {
	ReadTextFile(ctx context.Context, path string, line, limit int) (string, error)
	WriteTextFile(ctx context.Context, path, content string) error
}

// Terminals is the command service a driver offers to its agent.
type Terminals interface {
	CreateTerminal(ctx context.Context, req TerminalRequest) (string, error)
	TerminalOutput(ctx context.Context, id string) (TerminalOutput, error)
	WaitForTerminalExit(ctx context.Context, id string) (ExitStatus, error)
	KillTerminal(ctx context.Context, id string) error
	ReleaseTerminal(ctx context.Context, id string) error
}

// TerminalRequest asks the host to run a command.
type TerminalRequest struct {
	Command         string
	Args            []string
	Env             map[string]string
	Cwd             string
	OutputByteLimit int64
}

// TerminalOutput is what a command printed so far.
type TerminalOutput struct {
	Output    string
	Truncated bool
	Exit      *ExitStatus
}

// ExitStatus is how a command ended.
type ExitStatus struct {
	ExitCode *int
	Signal   string
}

// Host is everything a driver needs from the session's owner. Drivers call
// it; they never decide policy, touch files or run commands themselves.
type Host struct {
	Sink      Sink
	Decider   PermissionDecider
	Files     Files     // nil: do not offer file access
	Terminals Terminals // nil: do not offer terminals
}
