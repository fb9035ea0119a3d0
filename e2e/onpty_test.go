package e2e

import (
	"io"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/tai-dev/tai/e2e/internal/build"
	"github.com/tai-dev/tai/feed"
)

// onPTY is a tai started on a terminal, with what it shows and the one
// live feed it serves under the runtime directory rt.
type onPTY struct {
	screen *build.Buffer
	copied chan struct{} // closed once the terminal's output has all been read
	ep     feed.Endpoint
}

// startOnPTY starts cmd on a pty and waits for its feed socket. The
// deadline only guards a hang.
func startOnPTY(t *testing.T, cmd *exec.Cmd, rt string) *onPTY {
	t.Helper()
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	p := &onPTY{screen: &build.Buffer{}, copied: make(chan struct{})}
	go func() { _, _ = io.Copy(p.screen, tty); close(p.copied) }()
	for deadline := time.Now().Add(time.Minute); ; {
		if eps, _ := feed.List(filepath.Join(rt, "tai")); len(eps) == 1 {
			p.ep = eps[0]
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("no feed socket; terminal:\n%s", p.screen.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
