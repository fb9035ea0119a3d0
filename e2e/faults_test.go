package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A crash mid-turn: agent-error exit code, with the agent's stderr shown.
func TestFaultCrash(t *testing.T) {
	t.Parallel()
	o := tai(t, t.TempDir(), "run", "--agent-cmd", builtinWith(script("crash.yaml")), "go")
	if o.code != 1 {
		t.Fatalf("exit %d, want 1\n%s", o.code, o.stderr)
	}
	for _, want := range []string{"exit code 3", "the model backend went away"} {
		if !strings.Contains(o.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, o.stderr)
		}
	}
	if !strings.Contains(o.stdout, "about to crash") {
		t.Errorf("the text sent before the crash was lost:\n%s", o.stdout)
	}
}

// A wedged agent: the timeout exit code after --timeout, and no process
// left behind.
func TestFaultHangTimeout(t *testing.T) {
	t.Parallel()
	scr := filepath.Join(t.TempDir(), "hang-marker.yaml")
	copyFile(t, script("hang.yaml"), scr)
	o := tai(t, t.TempDir(), "run", "--agent-cmd", builtinWith(scr), "--timeout", "1s", "--cancel-grace", "500ms", "-o", "json", "go")
	r := jsonResult(t, o)
	if o.code != 3 || r.Status != "timeout" {
		t.Fatalf("exit %d %+v", o.code, r)
	}
	if left := agentProcesses(t, scr); len(left) > 0 {
		t.Fatalf("processes left behind: %v", left)
	}
}

// Ctrl-C during a turn: session/cancel, stop reason cancelled, exit 130.
func TestFaultInterrupt(t *testing.T) {
	t.Parallel()
	scr := filepath.Join(t.TempDir(), "slow-marker.yaml")
	copyFile(t, script("slow.yaml"), scr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, taiBin, "run", "--agent-cmd", builtinWith(scr), "-o", "stream-json", "go")
	cmd.Dir = t.TempDir()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var last map[string]any
	interrupted := false
	for sc.Scan() {
		var f map[string]any
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatal(err)
		}
		last = f
		// The agent is inside its 60 s delay once its first text arrived.
		if !interrupted && f["type"] == "message.chunk" {
			_ = cmd.Process.Signal(syscall.SIGINT)
			interrupted = true
		}
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v", err)
	}
	if last["type"] != "result" || last["stop_reason"] != "cancelled" || last["status"] != "interrupted" {
		t.Fatalf("result frame %v", last)
	}
	if left := agentProcesses(t, scr); len(left) > 0 {
		t.Fatalf("processes left behind: %v", left)
	}
}

// A 100 MiB line is decoded with the default limit; with a small limit it
// is skipped, reported, and the session goes on.
func TestFaultBigLine(t *testing.T) {
	t.Parallel()
	o := tai(t, t.TempDir(), "run", "--agent-cmd", builtinWith(script("big.yaml")), "-o", "json", "go")
	r := jsonResult(t, o)
	if o.code != 0 || len(r.Message) < 100<<20 || !strings.HasSuffix(r.Message, "after the big line") {
		t.Fatalf("exit %d, message of %d bytes, error %q", o.code, len(r.Message), r.Error)
	}
	o = tai(t, t.TempDir(), "run", "--agent-cmd", builtinWith(script("big.yaml")), "--max-line-bytes", "1048576", "-o", "json", "go")
	r = jsonResult(t, o)
	if o.code != 0 || r.Message != "before the big line\n\nafter the big line" {
		t.Fatalf("exit %d message %.100q", o.code, r.Message)
	}
	if len(r.Errors) != 1 || r.Errors[0].Code != "oversize_line" {
		t.Fatalf("oversize line not reported: %+v", r.Errors)
	}
}

// Updates before the session/new response are applied to the session.
func TestFaultEarlyUpdates(t *testing.T) {
	t.Parallel()
	o := tai(t, t.TempDir(), "run", "--agent-cmd", builtinWith(script("early.yaml")), "-o", "stream-json", "go")
	fs := frames(t, o.stdout)
	if o.code != 0 || fs[0]["type"] != "session.started" {
		t.Fatalf("exit %d first frame %v", o.code, fs[0])
	}
	if n := frameTypes(fs)["commands"]; n < 2 {
		t.Fatalf("early available_commands_update lost: %d commands frames", n)
	}
}

// Updates after the prompt response still belong to the turn.
func TestFaultLateUpdates(t *testing.T) {
	t.Parallel()
	o := tai(t, t.TempDir(), "run", "--agent-cmd", builtinWith(script("late.yaml")), "-o", "json", "go")
	r := jsonResult(t, o)
	if o.code != 0 || !strings.HasPrefix(r.Message, "main text") || len(r.Message) <= len("main text") {
		t.Fatalf("exit %d message %q", o.code, r.Message)
	}
}

// The frames are in the session's order: turn.ended follows the late
// updates the turn owns, run after run (it once did in 2-5 of 6).
func TestFaultLateUpdatesBeforeTurnEnded(t *testing.T) {
	t.Parallel()
	for i := range 8 {
		o := tai(t, t.TempDir(), "run", "--no-audit", "--agent-cmd", builtinWith(script("late.yaml")), "-o", "stream-json", "go")
		if o.code != 0 {
			t.Fatalf("run %d: exit %d\n%s", i, o.code, o.stderr)
		}
		ended, chunks := -1, 0
		var last float64
		for j, f := range frames(t, o.stdout) {
			if seq, _ := f["seq"].(float64); seq <= last {
				t.Fatalf("run %d: frame %d has seq %v after %v", i, j, seq, last)
			} else {
				last = seq
			}
			switch f["type"] {
			case "turn.ended":
				ended = j
			case "message.chunk":
				chunks++
				if ended >= 0 {
					t.Fatalf("run %d: a message chunk (frame %d) after turn.ended (frame %d)", i, j, ended)
				}
			}
		}
		if ended < 0 || chunks != 6 {
			t.Fatalf("run %d: turn.ended at %d, %d chunks, want 6 (main text and 5 late)", i, ended, chunks)
		}
	}
}

// Garbage on stdout is skipped; the session goes on.
func TestFaultGarbage(t *testing.T) {
	t.Parallel()
	o := tai(t, t.TempDir(), "run", "--agent-cmd", builtinWith(script("garbage.yaml")), "-o", "json", "go")
	r := jsonResult(t, o)
	if o.code != 0 || r.Message != "still speaking ACP\n\n after garbage" {
		t.Fatalf("exit %d message %q stderr %s", o.code, r.Message, o.stderr)
	}
	if !strings.Contains(o.stderr, "non-JSON") {
		t.Errorf("garbage not logged:\n%s", o.stderr)
	}
}

// The agent asks for paths outside the workspace, directly, through .. and
// through a symlink; each is refused and nothing outside is touched.
func TestFaultOutsideWorkspace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Symlink("/etc", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	scr := filepath.Join(t.TempDir(), "outside.yaml")
	data, _ := os.ReadFile(script("outside.yaml"))
	data = []byte(strings.Replace(string(data), "  - text: \"done\"", "  - outside: {path: link/hostname}\n  - text: \"done\"", 1))
	if err := os.WriteFile(scr, data, 0o644); err != nil {
		t.Fatal(err)
	}
	o := tai(t, dir, "run", "--agent-cmd", builtinWith(scr), "-o", "json", "go")
	r := jsonResult(t, o)
	if o.code != 0 {
		t.Fatalf("exit %d %+v", o.code, r)
	}
	refused := 0
	for _, e := range r.Errors {
		if e.Code == "outside_workspace" {
			refused++
		}
	}
	if refused != 3 {
		t.Fatalf("refusals %d, want 3: %+v\nmessage: %s", refused, r.Errors, r.Message)
	}
	if !strings.Contains(r.Message, "outside the workspace") || !strings.Contains(r.Message, "symlink") {
		t.Fatalf("agent was not told why: %q", r.Message)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
}
