package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// kill -9 of tai in the middle of a burst of audited decisions leaves a log
// whose complete entries all verify; a torn last line is reported as such.
func TestAuditSurvivesKill9(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("steps:\n")
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&b, "  - permission: {title: \"request %d\", kind: execute}\n", i)
	}
	scr := filepath.Join(t.TempDir(), "burst.yaml")
	if err := os.WriteFile(scr, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "run.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// --approve all: the writes must land for the log to hold them when killed.
	cmd := exec.CommandContext(ctx, taiBin, "run", "--agent-cmd", builtinWith(scr), "--approve", "all", "--audit", log, "-o", "stream-json", "go")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+stateDir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill once a few hundred decisions have gone by: mid-burst.
	sc := bufio.NewScanner(out)
	decided := 0
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"type":"permission.decided"`) {
			decided++
			if decided == 300 {
				_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
				break
			}
		}
	}
	_ = cmd.Wait()
	// The orphaned agent dies of a broken pipe or is reaped with its group.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if decided < 300 {
		t.Fatalf("run ended after %d decisions, before the kill", decided)
	}
	v := tai(t, t.TempDir(), "audit", "verify", log)
	switch {
	case v.code == 0:
		// The kill fell between two writes: every entry is complete.
	case strings.Contains(v.stdout, "partial last line"):
		// The kill tore the last write; everything before it verifies.
	default:
		t.Fatalf("verify after kill -9: exit %d\n%s", v.code, v.stdout)
	}
	entries := readAuditLoose(t, log)
	if entries < 300 {
		t.Fatalf("only %d complete entries survived 300+ decisions", entries)
	}
}

// readAuditLoose counts complete lines.
func readAuditLoose(t *testing.T, path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}
