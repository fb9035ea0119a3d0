package driver

import "slices"

// Name names a driver: how tai speaks to an agent.
type Name string

// The drivers.
const (
	ACP        Name = "acp"         // the Agent Client Protocol over stdio (the default)
	StreamJSON Name = "stream-json" // a CLI's headless stream-json mode
	PTY        Name = "pty"         // the agent's own terminal UI, in a pseudo-terminal
	A2A        Name = "a2a"         // an A2A agent over HTTP
)

// Names lists the drivers, the default (ACP) first.
func Names() []Name { return []Name{ACP, StreamJSON, PTY, A2A} }

// Known reports whether n is one of Names.
func (n Name) Known() bool { return slices.Contains(Names(), n) }
