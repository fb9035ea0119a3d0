package web_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/e2e/internal/auditlog"
)

// A local fleet of two built-in-agent tasks, each held working (it says
// so through a FIFO), is paused from the page on a phone: its coordinator
// parks both (tai fleet status shows them parked), as tai fleet pause
// does; released from the page, both resume and merge. Both taps are in
// the fleet's audit log as via web with the browser's address. Default
// sandbox, user-like HOME.
func TestPauseAndReleaseAFleetFromThePage(t *testing.T) {
	u := newUser(t)
	repo := u.ws
	for _, a := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "T"}} {
		gitIn(t, repo, a...)
	}
	writeFile(t, filepath.Join(repo, "README"), "hi\n")
	gitIn(t, repo, "add", "-A")
	gitIn(t, repo, "commit", "-q", "-m", "init")

	link, base := u.serve(t, "--listen", "127.0.0.1:0")
	hold, pd := filepath.Join(u.root, "hold"), filepath.Join(u.root, "plan")
	for _, d := range []string{hold, pd} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Each task's first agent says it is working (a FIFO: no polling) and
	// works "forever", until the pause cancels its turn; the agent that
	// resumes its session finishes.
	var plan strings.Builder
	// policy approve: all: the tasks write files and run a command, which the default approve-reads denies.
	plan.WriteString("name: webpause\npolicy: {approve: all}\nconcurrency: 2\ntasks:\n")
	for _, id := range []string{"a", "b"} {
		if err := syscall.Mkfifo(filepath.Join(hold, "ready-"+id), 0o600); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(pd, "hang-"+id+".yaml"), fmt.Sprintf(
			"steps:\n  - run: {command: sh, args: [\"-c\", \"echo ready > %s\"]}\n  - delay: 3600\n", filepath.Join(hold, "ready-"+id)))
		writeFile(t, filepath.Join(pd, "finish-"+id+".yaml"), fmt.Sprintf("steps:\n  - write: {path: %s.txt, content: \"%s\\n\"}\n  - text: done\n", id, id))
		marker := filepath.Join(hold, "started-"+id)
		fmt.Fprintf(&plan, "  - id: %s\n    agent_cmd: \"sh -c 'if [ -e %s ]; then exec %s agent builtin --script %s; else touch %s; exec %s agent builtin --script %s; fi'\"\n    prompt: go\n",
			id, marker, taiBin, filepath.Join(pd, "finish-"+id+".yaml"), marker, taiBin, filepath.Join(pd, "hang-"+id+".yaml"))
	}
	writeFile(t, filepath.Join(pd, "plan.yaml"), plan.String())

	// --sandbox-write: the agents mark their start and say they are
	// working in hold, given to them as a user would.
	fl := exec.Command(taiBin, "fleet", "run", "--run-id", "webpause", "-C", repo, "--sandbox-write", hold, filepath.Join(pd, "plan.yaml"))
	fl.Dir, fl.Env = repo, u.env
	stdout, err := fl.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errFile, err := os.Create(filepath.Join(u.root, "fleet.stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	fl.Stderr = errFile
	if err := fl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = fl.Process.Kill()
		_ = fl.Wait()
	})
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var seen []string
	stuck := func(why string) {
		t.Helper()
		errText, _ := os.ReadFile(errFile.Name())
		t.Fatalf("%s; the progress:\n%s\nstderr:\n%s", why, strings.Join(seen, "\n"), errText)
	}
	// each reads the fleet's progress until every task has had event, in
	// any order (bounded: a fleet that never gets there fails the test).
	each := func(event string, tasks ...string) {
		t.Helper()
		left := map[string]bool{}
		for _, id := range tasks {
			left[id] = true
		}
		for len(left) > 0 {
			select {
			case l, ok := <-lines:
				if !ok {
					stuck(fmt.Sprintf("the fleet ended before %v %s", tasks, event))
				}
				seen = append(seen, l)
				if f := strings.Fields(l); len(f) >= 3 && f[2] == event {
					delete(left, f[1])
				}
			case <-time.After(2 * time.Minute):
				stuck(fmt.Sprintf("not every one of %v %s", tasks, event))
			}
		}
	}
	for _, id := range []string{"a", "b"} {
		ready := make(chan string, 1)
		go func() { b, _ := os.ReadFile(filepath.Join(hold, "ready-"+id)); ready <- string(b) }()
		select {
		case r := <-ready:
			if strings.TrimSpace(r) != "ready" {
				t.Fatalf("task %s said %q", id, r)
			}
		case <-time.After(2 * time.Minute):
			errText, _ := os.ReadFile(errFile.Name())
			t.Fatalf("task %s never said it works; stderr:\n%s", id, errText)
		}
	}

	ctx := browser(t)
	// The link's page sets the cookie and then goes to the index by
	// itself: navigating on before it has would abort one of the two.
	within(t, ctx, "the fleet's page", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(`body[data-page="index"]`)),
		chromedp.Navigate(base+"/runs/webpause"),
		chromedp.WaitVisible(chromedp.CSS(`button.pause`)))
	screenshot(t, ctx, "phone-fleet.png")
	within(t, ctx, "pausing", chromedp.Click(chromedp.CSS(`button.pause`)), chromedp.WaitVisible(chromedp.CSS(`body[data-page="run"]`)))
	each("parked", "a", "b")
	st := fleetStatus(t, u, "webpause")
	for _, id := range []string{"a", "b"} {
		if st[id] != "parked" {
			t.Fatalf("after the pause: %v, want a and b parked\n%s", st, strings.Join(seen, "\n"))
		}
	}
	within(t, ctx, "releasing", chromedp.Navigate(base+"/runs/webpause"), chromedp.WaitVisible(chromedp.CSS(`button.release`)),
		chromedp.Click(chromedp.CSS(`button.release`)), chromedp.WaitVisible(chromedp.CSS(`body[data-page="run"]`)))
	each("merged", "a", "b")
	for l := range lines {
		seen = append(seen, l)
	}
	if err := fl.Wait(); err != nil {
		stuck(fmt.Sprintf("the fleet: %v", err))
	}
	st = fleetStatus(t, u, "webpause")
	for _, id := range []string{"a", "b"} {
		if st[id] != "merged" {
			t.Fatalf("after the release: %v, want a and b merged\n%s", st, strings.Join(seen, "\n"))
		}
	}
	// Both taps, in the fleet's audit log: via web, the browser's address.
	var hands []string
	for _, e := range auditlog.Read(t, filepath.Join(u.home, ".local", "state", "tai", "fleet", "webpause", "audit.jsonl")) {
		if e.Kind != audit.KindFeedHand {
			continue
		}
		var d struct{ Action, Via, Client string }
		if err := json.Unmarshal(e.Data, &d); err != nil || d.Via != "web" || !strings.HasPrefix(d.Client, "127.0.0.1:") {
			t.Fatalf("the audit entry %s: %v", e.Data, err)
		}
		hands = append(hands, d.Action)
	}
	if strings.Join(hands, ",") != "pause,release" {
		t.Fatalf("audited %v, want pause then release", hands)
	}
}

// fleetStatus is tai fleet status RUN -o json's task statuses, by id.
func fleetStatus(t *testing.T, u *user, run string) map[string]string {
	t.Helper()
	cmd := exec.Command(taiBin, "fleet", "status", run, "-o", "json")
	cmd.Dir, cmd.Env = u.ws, u.env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("fleet status: %v\n%s", err, out)
	}
	var s struct {
		Tasks []struct{ ID, Status string }
	}
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatalf("fleet status %s: %v", out, err)
	}
	m := map[string]string{}
	for _, ts := range s.Tasks {
		m[ts.ID] = ts.Status
	}
	return m
}

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
