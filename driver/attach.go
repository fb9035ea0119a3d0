package driver

import "io"

// DefaultDetachKey is Ctrl-] (telnet's escape), which no agent TUI binds.
const DefaultDetachKey = 0x1d

// Attach connects a user's terminal to a live terminal-UI session: their
// keystrokes go to the agent, the agent's output to their screen, until
// they press DetachKey or the agent exits.
type Attach struct {
	// In is the user's keystrokes, already in raw mode. The caller must
	// make a blocked Read return once the attach is over (see Attacher).
	In io.Reader
	// Out is the user's terminal.
	Out io.Writer
	// DetachKey ends the attach; 0 means DefaultDetachKey.
	DetachKey byte
	// Size, if set, reports the user's terminal size; the session's
	// terminal follows it.
	Size func() (cols, rows int, ok bool)
	// Resized signals that the user's terminal changed size.
	Resized <-chan struct{}
	// OnAttach, if set, runs as the attach begins, once the agent is
	// ready: the caller puts the user's terminal in raw mode then (not
	// earlier, while a policy prompt may still need it cooked).
	OnAttach func() error
	// OnDetach, if set, runs when the user detaches, before the session
	// settles: the caller gives the user their terminal back then.
	OnDetach func()
}

// AttachEnd says how an attach ended.
type AttachEnd string

// How an attach ends.
const (
	AttachDetached AttachEnd = "detached" // the user pressed the detach key (or closed their input)
	AttachExited   AttachEnd = "exited"   // the agent exited
)
