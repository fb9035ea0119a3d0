package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/creack/pty"
)

// onTTY is tai started on a terminal of its own: stdout (the JSON result)
// goes to a file, the asks to the controlling terminal.
type onTTY struct {
	cmd *exec.Cmd
	tty *os.File
	out string // the file stdout goes to
}

// startOnTTY starts tai with args in a temporary directory, in the tests'
// environment (XDG_STATE_HOME, NO_COLOR) and env, on a new terminal, closed
// when the test ends. ctx bounds the run.
func startOnTTY(ctx context.Context, t *testing.T, env []string, args ...string) *onTTY {
	t.Helper()
	r := &onTTY{out: filepath.Join(t.TempDir(), "result.json")}
	r.cmd = exec.CommandContext(ctx, taiBin, args...)
	r.cmd.Dir = t.TempDir()
	r.cmd.Env = append(append(os.Environ(), "XDG_STATE_HOME="+stateDir, "NO_COLOR=1"), env...)
	resf, err := os.Create(r.out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resf.Close() })
	r.cmd.Stdout = resf
	r.tty, err = pty.Start(r.cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.tty.Close() })
	return r
}

// answer reads the terminal to its end and waits for tai. At each question
// (a chunk up to a '>' that holds marker) it types key(n), n counting the
// questions from 0, unless that is "". It returns how many questions there
// were and what the terminal showed.
func (r *onTTY) answer(t *testing.T, marker string, key func(n int) string) (questions int, screen string) {
	t.Helper()
	rd := bufio.NewReader(r.tty)
	var b strings.Builder
	for {
		chunk, err := rd.ReadString('>')
		b.WriteString(chunk)
		if strings.Contains(chunk, marker) {
			if k := key(questions); k != "" {
				if _, err := r.tty.Write([]byte(k)); err != nil {
					t.Fatal(err)
				}
			}
			questions++
		}
		if err != nil {
			break
		}
	}
	_ = r.cmd.Wait()
	return questions, b.String()
}

// result is the JSON result tai wrote; screen is for the failure report.
func (r *onTTY) result(t *testing.T, screen string) result {
	t.Helper()
	data, _ := os.ReadFile(r.out)
	var res result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatalf("result: %v\n%s\nterminal:\n%s", err, data, screen)
	}
	return res
}
