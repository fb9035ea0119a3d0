package remote_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tai-dev/tai/e2e/internal/auditlog"
)

// A hostile agent on a NATS worker (tai hub, tai worker and tai fleet run
// --nats as the README starts them: no --dir, the default sandbox, a
// user's HOME) writes what makes git run a program into its workspace;
// the worker's git (checkpoint, final commit, push) and the coordinator's
// (merge) run none of it: the marker, outside the sandbox's reach, is
// never made.
//   - "git dir": the agent replaces its worktree's .git file with a
//     directory of its own, whose config sets core.fsmonitor and a filter
//     driver that .gitattributes picks, and whose hooks run on commit and
//     push. The worker refuses the worktree: the task fails saying why, in
//     the audit log too.
//   - "user's filter": the user's ~/.gitconfig defines drivers (as git-lfs
//     does: a filter, a diff textconv, a merge driver) and the agent's
//     .gitattributes picks them for every file. tai's git turns them off:
//     the task's work is committed, pushed and merged as the agent wrote it.
func TestWorkerRunsNoGitProgramTheAgentChose(t *testing.T) {
	for _, c := range []struct {
		name   string
		script func(marker string) string // the agent's shell step
		config func(marker string) string // the user's ~/.gitconfig
		merged bool
		says   string // the failure names this
	}{
		{name: "git dir", script: func(m string) string {
			return fmt.Sprintf("rm -f .git && mkdir -p .git/objects .git/refs/heads .git/hooks && echo 'ref: refs/heads/main' > .git/HEAD && "+
				"printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = touch %[1]s\\n[filter \"evil\"]\\n\\tclean = touch %[1]s\\n\\tsmudge = touch %[1]s\\n\\trequired = true\\n' > .git/config && "+
				"for h in pre-commit post-commit pre-push reference-transaction post-checkout; do printf '#!/bin/sh\\ntouch %[1]s\\n' > .git/hooks/$h; chmod +x .git/hooks/$h; done && "+
				"echo '* filter=evil' > .gitattributes", m)
		}, says: "not the file git writes"},
		{name: "user's filter", script: func(string) string {
			return "echo '* filter=evil diff=evil merge=evil' > .gitattributes"
		}, config: func(m string) string {
			return fmt.Sprintf("[filter \"evil\"]\n\tclean = touch %[1]s\n\tsmudge = touch %[1]s\n\tprocess = touch %[1]s\n\trequired = true\n"+
				"[diff \"evil\"]\n\ttextconv = touch %[1]s\n\tcommand = touch %[1]s\n[merge \"evil\"]\n\tdriver = touch %[1]s\n", m)
		}, merged: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, home := userEnv(t)
			marker := filepath.Join(t.TempDir(), "pwned")
			if c.config != nil {
				if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(c.config(marker)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// --listen: a free port (4222 may be taken on the test machine).
			url := firstLine(e, e.cmd(taiBin, "hub", "--listen", "127.0.0.1:0"))
			repo := planRepo(t, map[string]string{
				"s.yaml": fmt.Sprintf("steps:\n  - write: {path: work.txt, content: \"work\\n\"}\n  - run: {command: sh, args: [-c, %q]}\n  - text: done\n", c.script(marker)),
				// policy approve: all: the task writes and runs commands, which the default approve-reads denies; what it writes is the subject.
				"plan.yaml": "name: gitattack\npolicy: {approve: all}\ntasks:\n  - {id: s, script: s.yaml, prompt: go}\n",
			})
			w := e.cmd(taiBin, "worker", "--nats", url, "--name", "w")
			w.Stderr = &prefixWriter{t: t, p: "w"}
			e.start(w)
			cmd := e.cmd(taiBin, "fleet", "run", "--nats", url, "--run-id", "g", "--output", "json", "-C", repo, filepath.Join(repo, "plan.yaml"))
			var o, errb strings.Builder
			cmd.Stdout, cmd.Stderr = &o, &errb
			err := cmd.Run()
			if _, serr := os.Stat(marker); serr == nil {
				t.Fatalf("tai's git ran a program the agent chose\n%s", errb.String())
			}
			if c.merged {
				if err != nil {
					t.Fatalf("%v, want the task merged\n%s", err, errb.String())
				}
				if got := git(t, repo, "show", "tai-fleet/g:work.txt"); got != "work" {
					t.Fatalf("work.txt on the target: %q", got)
				}
				return
			}
			if err == nil || !strings.Contains(errb.String(), c.says) {
				t.Fatalf("%v, want the task failed saying %q\n%s", err, c.says, errb.String())
			}
			var s struct {
				Audit string `json:"audit"`
			}
			if err := json.Unmarshal([]byte(o.String()), &s); err != nil {
				t.Fatalf("%v\n%s", err, o.String())
			}
			found := false
			for _, en := range auditlog.Read(t, s.Audit) {
				found = found || strings.Contains(string(en.Data), c.says)
			}
			if !found {
				t.Fatal("the refusal is not in the fleet's audit log")
			}
		})
	}
}
