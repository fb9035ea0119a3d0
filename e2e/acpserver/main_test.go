// Package acpserver drives `tai acp` through the real binary with
// third-party ACP clients (the Go SDK, the TypeScript SDK's example client,
// acpx) in front of the agents tai wraps, checking on disk what the
// client's answers let through and that no process is left behind.
//
//	eval "$(scripts/install-peers.sh | sed 's/^/export /')"
//	go test ./e2e/acpserver -v
package acpserver

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/tai-dev/tai/e2e/internal/build"
)

var taiBin string

func TestMain(m *testing.M) {
	build.Main(m, "tai-e2e-acpserver-", func(_ string, bins []string) { taiBin = bins[0] }, build.Tai)
}

// scriptFor writes a built-in agent script into a directory of its own and
// returns its path: the path also marks the agent's processes.
func scriptFor(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// turnScript: a text, a write the client approves, a write the client
// denies, then a wait the client cancels.
const turnScript = `steps:
  - text: "hello from the wrapped agent"
  - write: {path: approved.txt, content: "approved by the client\n"}
  - write: {path: denied.txt, content: "denied by the client\n"}
  - text: "waiting for the cancel"
  - delay: 600
  - text: "never reached"
`

// env is the environment of tai under test: its state (audit logs,
// sessions) kept in dir.
func env(dir string) []string {
	return append(os.Environ(), "NO_COLOR=1", "XDG_STATE_HOME="+filepath.Join(dir, ".state"),
		"TAI_SESSIONS_DIR="+filepath.Join(dir, ".state", "sessions"))
}

// processesWith lists the live processes whose command line contains
// marker.
func processesWith(marker string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	self := strconv.Itoa(os.Getpid())
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil || e.Name() == self {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(b), marker) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

// noneLeft fails if a process with marker outlives its parent's exit. A
// process being reaped may linger for a moment; the wait is bounded only
// so that a leak fails instead of hanging.
func noneLeft(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		left := processesWith(marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left behind:\n%s", strings.Join(left, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustNotExist(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("%s exists (err %v): the client's denial did not hold", path, err)
	}
}

// promptResult is a prompt's outcome, received from prompt's channel.
type promptResult struct {
	res acpsdk.PromptResponse
	err error
}

// prompt sends text to the session in the background: the test answers
// what tai asks meanwhile, then reads the outcome.
func prompt(ctx context.Context, conn *acpsdk.ClientSideConnection, session acpsdk.SessionId, text string) <-chan promptResult {
	done := make(chan promptResult, 1)
	go func() {
		r, err := conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: session, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(text)}})
		done <- promptResult{r, err}
	}()
	return done
}
