package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tai-dev/tai/sandbox"
)

func TestStartMessage(t *testing.T) {
	tests := []struct {
		name string
		ds   []sandbox.Denial
		want []string
		not  []string
	}{
		{"a path", []sandbox.Denial{{Path: "/h/.foo"}},
			[]string{"it was refused: /h/.foo (write).", "If it needs that directory: --sandbox-write /h/.foo (or write_roots in the policy)."},
			[]string{"--sandbox off"}},
		{"no path", nil,
			[]string{"which may have refused it a path its stderr does not name", "--sandbox-write DIR (or write_roots in the policy); --sandbox off as the last resort."}, nil},
		{"a secret and tai's own", []sandbox.Denial{{Path: "/h/.ssh/id_rsa", Hidden: true}, {Path: "/h/.local/state/tai/x", Own: true}},
			[]string{"/h/.ssh/id_rsa (read: a secret path", "/h/.local/state/tai/x (write: tai's own files", "--sandbox off as the last resort"},
			[]string{"--sandbox-write /h"}},
		// The agent's word cannot get tai to offer the whole home: a
		// file right under it names the flag, not home.
		{"top-level and root", []sandbox.Denial{{Path: "/etc"}, {Path: "/"}},
			[]string{"--sandbox-write DIR"}, []string{"--sandbox-write /etc", "--sandbox-write / "}},
		{"a flood", []sandbox.Denial{{Path: "/h/a/1"}, {Path: "/h/a/2"}, {Path: "/h/a/3"}, {Path: "/h/a/4"}, {Path: "/h/a/5"}, {Path: "/h/a/6"}, {Path: "/h/a/7"}},
			[]string{"/h/a/5 (write), and 2 more."}, []string{"/h/a/6"}},
	}
	// The agent's word cannot get tai to offer the whole home: a file
	// right under it names the flag, not home.
	home := t.TempDir()
	rc := filepath.Join(home, ".bashrc")
	if err := os.WriteFile(rc, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := startMessage("exited at start", []sandbox.Denial{{Path: rc}}, home); strings.Contains(got, "--sandbox-write "+home) || !strings.Contains(got, "--sandbox-write DIR") {
		t.Errorf("a file in home: %q", got)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := startMessage("exited at start", tt.ds, "/h")
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q does not say %q", got, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("%q says %q", got, n)
				}
			}
		})
	}
}
