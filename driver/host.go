package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Refusals of the host services. Drivers map them onto errors the agent
// can read.
var (
	// ErrOutsideWorkspace: an agent asked for a path or cwd outside the
	// workspace roots. Host services wrap their refusals with it.
	ErrOutsideWorkspace = errors.New("outside the workspace")
	// ErrDenied: tai's policy denied the call (a *DeniedError says how).
	ErrDenied = errors.New("denied by tai's policy")
	// ErrProtected: the path is one of tai's own files (its policy, config
	// or state) or an agent's config file that names commands, which no
	// agent may write, whatever the policy says.
	ErrProtected = errors.New("a read-only path")
	// ErrSecret: the path is, or leads to, a secret path (keys, tokens,
	// the policy's read denies), which tai serves no agent, as the sandbox
	// hides it from the agent's own calls.
	ErrSecret = errors.New("a secret path")
	// ErrInvalidPath: the path cannot name a file (it holds a NUL byte).
	ErrInvalidPath = errors.New("invalid path")
	// ErrUnrecorded: the audit log cannot be written, and what cannot be
	// recorded is not served.
	ErrUnrecorded = errors.New("the audit log cannot be written")
)

// DeniedError is a file or terminal call the policy refused: the decision
// says who decided and why.
type DeniedError struct {
	Op       string // fs/write_text_file, fs/read_text_file, terminal/create
	Subject  string // the path or command line
	Decision PermissionDecision
}

func (e *DeniedError) Error() string {
	verdict := "denied"
	if e.Decision.Verdict == VerdictCancelled {
		verdict = "did not allow (cancelled)"
	}
	msg := fmt.Sprintf("tai's policy %s %s %s", verdict, e.Op, e.Subject)
	if e.Decision.Reason != "" {
		msg += ": " + e.Decision.Reason
	}
	if e.Decision.DecidedBy != "" {
		msg += " (decided by " + string(e.Decision.DecidedBy) + ")"
	}
	return msg
}

func (e *DeniedError) Unwrap() error { return ErrDenied }

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
	Elicitor  Elicitor  // nil: do not offer elicitation
	// Passthrough, if set, takes the agent's JSON-RPC requests and
	// notifications of methods outside ACP's own (extensions): a proxy
	// hands them to its own client unchanged. Nil: they are refused.
	Passthrough Passthrough
}

// Passthrough carries JSON-RPC messages tai does not know, unchanged.
type Passthrough interface {
	CallRaw(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	NotifyRaw(ctx context.Context, method string, params json.RawMessage) error
}

// ACPMethod reports whether method is in one of ACP's own namespaces,
// which tai serves or refuses itself and never passes through.
func ACPMethod(method string) bool {
	for _, ns := range []string{"session/", "fs/", "terminal/", "elicitation/", "$/"} {
		if strings.HasPrefix(method, ns) {
			return true
		}
	}
	switch method {
	case "initialize", "authenticate", "logout":
		return true
	}
	return false
}
