package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// `tai run … | head -3`: the reader leaves mid-turn. tai is not killed by
// SIGPIPE: it cancels the turn, finishes the audit log (run.end) and the
// session record, and exits 141 (output_closed) on its own.
func TestClosedStdoutEndsTheRunCleanly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// An agent that keeps talking: whenever the reader leaves, a write
	// follows.
	var sb strings.Builder
	sb.WriteString("steps:\n  - text: \"one\\ntwo\\nthree\\nfour\\n\"\n")
	for i := range 300 {
		fmt.Fprintf(&sb, "  - delay: 0.1\n  - text: \"more %d\\n\"\n", i)
	}
	scr := filepath.Join(t.TempDir(), "stream.yaml")
	if err := os.WriteFile(scr, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // guards a hang only
	defer cancel()
	cmd := exec.CommandContext(ctx, taiBin, "run", "--audit", logPath, "--agent-cmd", builtinWith(scr), "go")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "NO_COLOR=1", "XDG_STATE_HOME="+stateDir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(out)
	for range 3 {
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	out.Close() // head -3 exits
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("wait: %v\n%s", err, stderr.String())
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("tai was killed by %v\n%s", ws.Signal(), stderr.String())
	}
	if ee.ExitCode() != 141 || !strings.Contains(stderr.String(), "stdout was closed") {
		t.Fatalf("exit %d, want 141\n%s", ee.ExitCode(), stderr.String())
	}
	o := tai(t, dir, "audit", "verify", logPath)
	if o.code != 0 || strings.Contains(o.stdout, "no run.end") {
		t.Fatalf("audit verify: exit %d\n%s", o.code, o.stdout)
	}
	o = tai(t, dir, "audit", "show", "--kind", "run.end", logPath)
	if !strings.Contains(o.stdout, "status=output_closed") || !strings.Contains(o.stdout, "stop_reason=cancelled") {
		t.Fatalf("run.end: %s", o.stdout)
	}
	o = tai(t, dir, "sessions", "-C", dir, "--json")
	if o.code != 0 || !strings.Contains(o.stdout, `"status": "output_closed"`) {
		t.Fatalf("no session record: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
}
