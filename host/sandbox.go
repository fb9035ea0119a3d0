package host

import "github.com/tai-dev/tai/sandbox"

// UseSandbox starts the terminal commands the agent asks for through
// tai's launcher, confined like the agent itself.
func (s *Services) UseSandbox(sb *sandbox.Sandbox) { s.terms.SetSandbox(sb) }
