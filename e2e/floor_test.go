package e2e

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tai-dev/tai/e2e/internal/auditlog"
)

// The floor is the only guard of a push (the sandbox does not cover the
// network): under --approve all, with the default sandbox and a user-like
// HOME, an agent's `git push --mirror origin` to a git:// remote (which
// would force the remote's main back to this clone's and delete its other
// branch) and `rm --rec --force WORKSPACE` (GNU's abbreviation of
// --recursive) through tai's terminal are both refused by the floor, with
// their reasons in the audit log; the remote's main and the workspace are
// unchanged. A third command, through a git alias the agent wrote into the
// repository's config (a forced push to main), is refused too.
func TestFloorRefusesMirrorPushAndAbbreviatedRm(t *testing.T) {
	t.Parallel()
	j := newJail(t)
	env := j.env("GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	// A bare "remote" whose main has a commit the clone lacks, so that a
	// mirror push from the clone would move it back (and delete its other
	// branch).
	remote := filepath.Join(j.outside, "remote.git")
	git(j.outside, "init", "-q", "--bare", "-b", "main", remote)
	seed := filepath.Join(j.outside, "seed")
	git(j.outside, "clone", "-q", remote, seed)
	if err := os.WriteFile(filepath.Join(seed, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(seed, "add", "a.txt")
	git(seed, "commit", "-qm", "a")
	git(seed, "push", "-q", "origin", "main")
	if err := os.RemoveAll(j.ws); err != nil {
		t.Fatal(err)
	}
	git(j.outside, "clone", "-q", remote, j.ws)
	git(seed, "commit", "-q", "--allow-empty", "-m", "b")
	git(seed, "push", "-q", "origin", "main", "main:keep")
	before := git(remote, "rev-parse", "main")
	// The remote over the network, served by git daemon, one process per
	// connection on a port the kernel picked (ready before tai starts).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				f, err := c.(*net.TCPConn).File()
				if err != nil {
					return
				}
				defer f.Close()
				d := exec.Command("git", "daemon", "--inetd", "--export-all", "--enable=receive-pack", "--base-path="+j.outside, j.outside)
				d.Stdin, d.Stdout, d.Env = f, f, env
				_ = d.Run()
			}()
		}
	}()
	git(j.ws, "remote", "set-url", "origin", "git://"+ln.Addr().String()+"/remote.git")
	// The agent's own alias, in the workspace's config.
	git(j.ws, "config", "alias.ship", "push -f origin HEAD:main")

	scr := writeScript(t, `steps:
  - run: {command: git, args: [push, --mirror, origin]}
  - run: {command: rm, args: [--rec, --force, `+j.ws+`]}
  - run: {command: git, args: [ship]}
  - text: done
`)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	r, o := runIn(t, j.ws, env, "run", "--agent-cmd", builtinWith(scr), "--approve", "all", "-o", "json", "--audit", log, "go")
	if r.Sandbox == nil || !r.Sandbox.Enabled && r.Sandbox.Reason == "" {
		t.Errorf("sandbox %+v: want the default (auto)", r.Sandbox)
	}
	if after := git(remote, "rev-parse", "main"); after != before {
		t.Errorf("the remote's main moved: %s -> %s", before, after)
	}
	if got := git(remote, "branch", "--list", "keep"); got == "" {
		t.Errorf("the remote's branch keep was deleted")
	}
	if _, err := os.Stat(filepath.Join(j.ws, "a.txt")); err != nil {
		t.Errorf("the workspace was emptied: %v", err)
	}
	if len(r.Terminals) != 0 {
		t.Errorf("a refused command ran: %+v", r.Terminals)
	}
	want := map[string]string{
		"git push --mirror origin": "rule:floor-git-force-push",
		"rm --rec --force " + j.ws: "rule:floor-rm-root",
		"git ship":                 "rule:floor-git-force-push",
	}
	if len(r.Denials) != len(want) {
		t.Fatalf("exit %d, denials %+v\nstderr:\n%s", o.code, r.Denials, o.stderr)
	}
	for _, d := range r.Denials {
		found := false
		for cmd, by := range want {
			if strings.Contains(d.Title, cmd) && d.DecidedBy == by {
				found = true
			}
		}
		if !found {
			t.Errorf("denial %+v", d)
		}
	}
	// The audit log says why, for each.
	seen := map[string]bool{}
	for _, e := range auditlog.Read(t, log) {
		if e.Kind != "permission.decision" {
			continue
		}
		s := string(e.Data)
		switch {
		case strings.Contains(s, "floor-git-force-push") && strings.Contains(s, "a mirror push"):
			seen["mirror"] = true
		case strings.Contains(s, "floor-rm-root") && strings.Contains(s, "the workspace root"):
			seen["rm"] = true
		case strings.Contains(s, "floor-git-force-push") && strings.Contains(s, "protected branch main"):
			seen["alias"] = true
		}
	}
	if len(seen) != 3 {
		t.Errorf("the audit log records the refusals with their reasons: %v", seen)
	}
}
