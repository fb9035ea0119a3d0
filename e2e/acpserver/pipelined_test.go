package acpserver

import (
	"testing"

	"github.com/tai-dev/tai/internal/bareacp"
)

// TestPipelinedClient: a client that sends initialize and session/new
// without waiting for the first answer (the bare decode loop, as a
// process) gets its session from tai acp, and every update of a flood
// with permission asks comes through, each ask answered.
func TestPipelinedClient(t *testing.T) {
	const updates = 5000
	script := scriptFor(t, "steps:\n  - flood: {count: 5000, permission_every: 100}\n")
	// --approve ask: every ask must come through the pipelined client to be answered.
	r, err := bareacp.Client(t.TempDir(), []string{taiBin, "acp", "--approve", "ask", "--no-notify",
		"--agent-cmd", taiBin + " agent builtin --script " + script})
	if err != nil {
		t.Fatalf("the pipelining client: %v (%d updates)", err, r.Updates)
	}
	if r.Updates < updates {
		t.Fatalf("%d updates came through, want %d", r.Updates, updates)
	}
}
