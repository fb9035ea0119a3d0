package agentproc

import "syscall"

// setParentDeathSignal: an agent that ignores stdin EOF (codex-acp, claude)
// or a TUI that never sees it must not outlive a tai killed -9.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
