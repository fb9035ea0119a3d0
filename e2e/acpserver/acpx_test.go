package acpserver

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ACPXVersion is the pinned acpx (scripts/install-peers.sh).
const ACPXVersion = "0.19.1"

func acpxBin(t *testing.T) string {
	t.Helper()
	p := os.Getenv("TAI_ACPX")
	if p == "" {
		home, _ := os.UserHomeDir()
		p = filepath.Join(home, ".cache", "tai-peers", "acpx-"+ACPXVersion, "node_modules", ".bin", "acpx")
	}
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("acpx %s is missing (%v): run scripts/install-peers.sh", ACPXVersion, err)
		}
		t.Skipf("acpx %s is missing (%v): run scripts/install-peers.sh", ACPXVersion, err)
	}
	return p
}

// acpxPolicy approves the one write and denies the other, by title.
const acpxPolicy = `{"autoApprove":["Write approved.txt"],"autoDeny":["Write denied.txt"],"defaultAction":"deny"}`

// TestACPX: acpx drives `tai acp` in front of the built-in agent, in its
// exec mode (one shot) and its session mode (a queue owner keeps the
// session between prompts; sessions close ends it). The cancel is the Go
// SDK client's test: acpx 0.19.1's cancel did not reach its queue owner's
// connection while the prompt's output was piped.
// acpx decides by its permission policy; acpx's own fs is not offered
// (--no-fs), so tai writes what acpx approved.
func TestACPX(t *testing.T) {
	acpx := acpxBin(t)
	t.Run("exec", func(t *testing.T) {
		dir := t.TempDir()
		script := scriptFor(t, strings.Replace(turnScript, "  - delay: 600\n", "", 1))
		agent := taiBin + " acp --agent-cmd '" + taiBin + " agent builtin --script " + script + "'"
		out := runACPX(t, acpx, dir, "--agent", agent, "--cwd", dir, "--no-fs", "--permission-policy", acpxPolicy, "--format", "text", "exec", "go")
		for _, want := range []string{"hello from the wrapped agent", "Write approved.txt", "Skipped writing denied.txt", "never reached", "[done] end_turn"} {
			if !strings.Contains(out, want) {
				t.Errorf("acpx's output lacks %q:\n%s", want, out)
			}
		}
		if got := mustRead(t, filepath.Join(dir, "approved.txt")); got != "approved by the client\n" {
			t.Errorf("approved.txt = %q", got)
		}
		mustNotExist(t, filepath.Join(dir, "denied.txt"))
		noneLeft(t, script)
	})
	t.Run("session", func(t *testing.T) {
		dir := t.TempDir()
		script := scriptFor(t, strings.Replace(turnScript, "  - delay: 600\n", "", 1))
		agent := taiBin + " acp --agent-cmd '" + taiBin + " agent builtin --script " + script + "'"
		common := []string{"--agent", agent, "--cwd", dir, "--no-fs", "--permission-policy", acpxPolicy, "--format", "text"}
		id := strings.TrimSpace(lastLine(runACPX(t, acpx, dir, append(common, "sessions", "new")...)))
		if !strings.HasPrefix(id, "builtin-") {
			t.Fatalf("sessions new printed %q, want the wrapped agent's session id", id)
		}
		out := runACPX(t, acpx, dir, append(common, "prompt", "go")...)
		for _, want := range []string{"hello from the wrapped agent", "Skipped writing denied.txt", "[done] end_turn"} {
			if !strings.Contains(out, want) {
				t.Errorf("acpx's prompt output lacks %q:\n%s", want, out)
			}
		}
		// The queue owner keeps the session for the next prompt.
		out = runACPX(t, acpx, dir, append(common, "prompt", "/echo still here")...)
		if !strings.Contains(out, "still here") {
			t.Errorf("the prompt after the cancel:\n%s", out)
		}
		runACPX(t, acpx, dir, append(common, "sessions", "close")...)
		if got := mustRead(t, filepath.Join(dir, "approved.txt")); got != "approved by the client\n" {
			t.Errorf("approved.txt = %q", got)
		}
		mustNotExist(t, filepath.Join(dir, "denied.txt"))
		noneLeft(t, script)
	})
}

// acpxEnv keeps acpx's state (its sessions, its queue owner's socket) in
// the test's directory.
func acpxEnv(dir string) []string {
	return append(env(dir), "HOME="+filepath.Join(dir, ".home"))
}

func runACPX(t *testing.T, acpx, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, acpx, args...)
	cmd.Dir, cmd.Env = dir, acpxEnv(dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("acpx %s: %v\n%s", strings.Join(args[len(args)-2:], " "), err, out)
	}
	return string(out)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
