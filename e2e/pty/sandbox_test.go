package pty

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tai-dev/tai/sandbox"
)

// A TUI in its own permissive mode (the fake TUI's "yolo:" runs a command
// without asking) tries to write outside the workspace and to read a fake
// ~/.ssh/id_rsa, also from a setsid child: under the sandbox the kernel
// refuses, and with --sandbox off it happens (the test can fail). A
// double-forked child it leaves is gone when tai is.
func TestSandboxConfinesTheTUI(t *testing.T) {
	if sandbox.ABI() < 1 {
		t.Skip("the kernel has no Landlock")
	}
	for _, mode := range []string{"auto", "off"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			ws, outside, home := filepath.Join(root, "ws"), filepath.Join(root, "outside"), filepath.Join(root, "home")
			for _, d := range []string{ws, outside, filepath.Join(home, ".ssh")} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			const key = "FAKE-PTY-KEY-42"
			if err := os.WriteFile(filepath.Join(home, ".ssh", "id_rsa"), []byte(key), 0o600); err != nil {
				t.Fatal(err)
			}
			marker := "tai-pty-daemon-" + mode + filepath.Base(root)
			cmd := fmt.Sprintf(`echo in > in.txt; echo out > %[1]s/escape.txt; cat %[2]s/.ssh/id_rsa > leak.txt; setsid sh -c 'echo s > %[1]s/setsid.txt'; setsid -f sh -c 'sleep 1000; echo %[3]s'`,
				outside, home, marker)
			env := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"))
			o := tai(t, ws, env, "run", "--agent-cmd", fakeBin, "--driver", "pty", "-o", "json", "--sandbox", mode, "yolo: "+cmd)
			r := parse(t, o)
			if o.code != 0 || !strings.Contains(r.Message, "Ran it") {
				t.Fatalf("exit %d status %q message %q error %q\n%s", o.code, r.Status, r.Message, r.Error, o.stderr)
			}
			confined := mode != "off"
			if _, err := os.Stat(filepath.Join(ws, "in.txt")); err != nil {
				t.Errorf("the write inside the workspace failed: %v", err)
			}
			for _, f := range []string{"escape.txt", "setsid.txt"} {
				_, err := os.Stat(filepath.Join(outside, f))
				if (err == nil) == confined {
					t.Errorf("%s written outside = %v under --sandbox %s", f, err == nil, mode)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(ws, "leak.txt")); strings.Contains(string(b), key) == confined {
				t.Errorf("the key was read = %v under --sandbox %s", !confined, mode)
			}
			checkNoLeftovers(t, ws)
			if left := processesWith(marker); len(left) > 0 {
				t.Errorf("the TUI's double-forked child outlived tai: %v", left)
			}
		})
	}
}

// processesWith lists live processes whose command line holds s.
func processesWith(s string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) && e.Name() != fmt.Sprint(os.Getpid()) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}
