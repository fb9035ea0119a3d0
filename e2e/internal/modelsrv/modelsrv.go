// Package modelsrv starts `tai model serve` for the e2e tests: the
// scripted, offline model server the real agents are pointed at.
package modelsrv

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Server is a running model server.
type Server struct {
	URL string
	Pid int
}

// Start runs taiBin's model server with script (and, if set, the request
// log at logPath and the workspace cwd for {{CWD}} in scripts) until the
// test ends, and returns once its URL is known. A server that dies first
// fails the test with its stderr.
func Start(t testing.TB, taiBin, script, cwd, logPath string) Server {
	t.Helper()
	dir := t.TempDir()
	urlFile := filepath.Join(dir, "model.url")
	args := []string{"model", "serve", "--script", script, "--url-file", urlFile}
	if cwd != "" {
		args = append(args, "--cwd", cwd)
	}
	if logPath != "" {
		args = append(args, "--log", logPath)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(taiBin, args...)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting tai model serve: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	// The server writes the URL file atomically once it listens; 30 s at
	// most, only as a guard against a hang.
	for range 3000 {
		if b, err := os.ReadFile(urlFile); err == nil {
			return Server{URL: strings.TrimSpace(string(b)), Pid: cmd.Process.Pid}
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("tai model serve exited: %v\n%s", err, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("tai model serve wrote no URL in 30s\n%s", stderr.String())
	return Server{}
}
