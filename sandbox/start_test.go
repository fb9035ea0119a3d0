package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Start's failures leave nothing behind: a launcher that started is waited
// for (no zombie) and released; a start that failed has nothing to wait
// for. A nil Sandbox starts the command as it is.
func TestStart(t *testing.T) {
	launchers(t, func(t *testing.T, l launcher) {
		w := newWorld(t, ModeOff, l)
		notExec := filepath.Join(w.ws, "agent")
		if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		startFailed := errors.New("no pty here")
		tests := []struct {
			name    string
			sb      *Sandbox
			argv    []string
			start   func() error
			wantErr string // "" : it starts
			waited  bool   // after a failure: the launcher was waited for
		}{
			{"runs", w.sb, []string{"/bin/sh", "-c", "exit 0"}, nil, "", false},
			{"nil sandbox runs", nil, []string{"/bin/sh", "-c", "exit 0"}, nil, "", false},
			{"agent cannot exec", w.sb, []string{notExec}, nil, "starting " + notExec, true},
			{"start fails", w.sb, []string{"/bin/sh"}, func() error { return startFailed }, "no pty here", false},
			{"not on PATH", w.sb, []string{"tai-test-no-such-program"}, nil, "not found", false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				cmd := exec.Command(tt.argv[0], tt.argv[1:]...)
				p, err := tt.sb.Start(cmd, tt.start)
				if tt.wantErr == "" {
					if err != nil {
						t.Fatal(err)
					}
					if err := cmd.Wait(); err != nil {
						t.Fatal(err)
					}
					p.Release()
					return
				}
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Start: %v, want %q", err, tt.wantErr)
				}
				if p != nil {
					t.Errorf("Start failed and gave a Proc")
				}
				if waited := cmd.ProcessState != nil; waited != tt.waited {
					t.Errorf("launcher waited for: %v, want %v", waited, tt.waited)
				}
			})
		}
	})
}
