// Command startagent is an agent that needs a directory outside its
// workspace at start, as codex-acp and claude-agent-acp need their state
// directories: it makes DIR/state and writes a file there before it
// speaks ACP. Refused (by tai's sandbox), it says so on stderr the way
// agents do and then, by its mode:
//
//	exit:  prints the error with the path ("Error: mkdir DIR/state: permission denied") and exits 1
//	bare:  prints "Error: Permission denied (os error 13)", no path, and exits 1 (codex-acp)
//	stall: prints the error with the path and never answers initialize (claude-agent-acp)
//
// Allowed, it execs the rest of its arguments (the built-in agent), its
// state under DIR/state.
//
// Usage: startagent MODE DIR -- AGENT ARGS...
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

func main() {
	if len(os.Args) < 5 || os.Args[3] != "--" {
		fmt.Fprintln(os.Stderr, "usage: startagent exit|bare|stall DIR -- AGENT ARGS...")
		os.Exit(2)
	}
	mode, state, agent := os.Args[1], filepath.Join(os.Args[2], "state"), os.Args[4:]
	err := os.MkdirAll(state, 0o700)
	if err == nil {
		err = os.WriteFile(filepath.Join(state, "started"), []byte("ok\n"), 0o600)
	}
	if err == nil {
		env := append(os.Environ(), "XDG_STATE_HOME="+state)
		err = syscall.Exec(agent[0], agent, env)
		fmt.Fprintf(os.Stderr, "exec %s: %v\n", agent[0], err)
		os.Exit(2)
	}
	switch mode {
	case "bare":
		fmt.Fprintln(os.Stderr, "Error: Permission denied (os error 13)")
		os.Exit(1)
	case "stall":
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		_, _ = io.Copy(io.Discard, os.Stdin) // initialize is read, never answered
		os.Exit(1)
	default:
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		os.Exit(1)
	}
}
