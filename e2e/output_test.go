package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A command whose output cannot be written (a full disk, a closed stdout)
// fails, saying so, whatever the command: a CI job must not believe a
// result it never got. A closed pipe (`| head`) and output thrown away on
// purpose (`> /dev/null`) are not failures.
func TestOutputWriteFailuresExitNonZero(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	dir := t.TempDir()
	commands := map[string]string{
		"version": "version",
		"agents":  "agents",
		"run":     "run --no-audit -o json '/echo hi'",
	}
	for name, args := range commands {
		for _, redir := range []struct {
			name, redir, want string
			code              int
		}{
			{"full", "> /dev/full", "tai: writing the output: no space left on device", 1},
			{"closed", ">&-", "tai: writing the output: stdout is closed", 1},
			{"devnull", "> /dev/null", "", 0},
		} {
			t.Run(name+"/"+redir.name, func(t *testing.T) {
				cmd := exec.Command("/bin/sh", "-c", "exec "+taiBin+" "+args+" "+redir.redir)
				cmd.Dir, cmd.Env = dir, append(os.Environ(), "NO_COLOR=1", "XDG_STATE_HOME="+stateDir)
				stderr, err := cmd.CombinedOutput()
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				if code != redir.code || !strings.Contains(string(stderr), redir.want) {
					t.Errorf("exit %d, want %d; stderr:\n%s", code, redir.code, stderr)
				}
			})
		}
	}
}
