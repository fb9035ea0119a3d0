package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tai's own secrets (the hub's token, TAI_NATS_*) reach neither the agent
// process nor the commands tai's terminal service runs for it, nor can
// they read them in tai's /proc/PID/environ; an -e variable does reach the
// agent. The agent is a shell that saves its environment and then
// becomes the built-in agent, whose script saves its command's. Default
// sandbox, and --sandbox off: the environment is scrubbed either way.
func TestAgentEnvLacksTaisSecrets(t *testing.T) {
	t.Parallel()
	const secret = "hub-token-for-tai-only-0123456789"
	for _, sb := range []string{"auto", "off"} {
		t.Run(sb, func(t *testing.T) {
			j := newJail(t)
			// The command also looks for the secret in every environment
			// it can read in /proc (tai's own included).
			scr := runScript(t, "env > cmd-env.txt; grep -l -a "+secret+" /proc/[0-9]*/environ > proc-env.txt 2>/dev/null; true", "text: done")
			agent := fmt.Sprintf("/bin/sh -c 'env > agent-env.txt; exec %s agent builtin --script %s'", taiBin, scr)
			// --approve all: the command must run; its environment is the subject.
			args := []string{"run", "--agent-cmd", agent, "-e", "USER_GIVEN=given-42", "--approve", "all", "-o", "json", "go"}
			if sb == "off" {
				args = append(args[:1], append([]string{"--sandbox", "off"}, args[1:]...)...)
			}
			o := runTai(t, j.ws, j.env("TAI_NATS_TOKEN="+secret, "TAI_NATS_CREDS=/creds/of/tai"), args...)
			if o.code != 0 {
				t.Fatalf("exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
			}
			for _, f := range []string{"agent-env.txt", "cmd-env.txt", "proc-env.txt"} {
				b, err := os.ReadFile(filepath.Join(j.ws, f))
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				// As root (CAP_SYS_PTRACE) every /proc/PID/environ stays
				// readable, tai's non-dumpable one too: checked as a user
				// (Landlock keeps the confined agent out of it; with
				// --sandbox off only tai's being non-dumpable does).
				leaked := f == "proc-env.txt" && len(b) > 0 && os.Geteuid() != 0
				if strings.Contains(string(b), secret) || strings.Contains(string(b), "TAI_NATS_") || leaked {
					t.Errorf("%s carries tai's secrets:\n%s", f, b)
				}
				if f == "agent-env.txt" && !strings.Contains(string(b), "USER_GIVEN=given-42") {
					t.Errorf("%s lacks the -e variable:\n%s", f, b)
				}
			}
		})
	}
}
